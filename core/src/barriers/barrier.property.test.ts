import { defaultSpaceLimits } from '../tenancy/space-limits';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatonError } from '../errors';
import { SeededRandom } from '../random';
import { MemoryStore } from '../store/memory/memory-store';
import * as barriers from './service';

/**
 * Barriers over random operation sequences through the real service on the memory store,
 * against a model that only remembers which keys arrived in the current epoch: the barrier
 * releases exactly when `target` distinct keys arrived in the epoch, no key counts twice (a
 * repeat replays and changes nothing), refused calls leave no trace, and the stored arrivals
 * always equal the count the barrier shows.
 */
type Op =
  | { kind: 'arrive'; key: number; nameEpoch: boolean }
  | { kind: 'nextEpoch'; nameEpoch: boolean }
  | { kind: 'cancel' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('arrive' as const), key: fc.nat({ max: 6 }), nameEpoch: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('nextEpoch' as const), nameEpoch: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const) }) },
);

const spaceId = '00000000-0000-4000-8000-000000000001';
const scopeId = '00000000-0000-4000-8000-000000000002';

interface Model {
  epoch: number;
  state: 'WAITING' | 'RELEASED' | 'CANCELLED';
  keys: Set<string>;
}

describe('barrier properties', () => {
  it('releases exactly at target distinct keys in the epoch and never counts a key twice', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.array(op, { maxLength: 60 }), fc.integer(), async (target, ops, seed) => {
        const store = new MemoryStore();
        const random = new SeededRandom(seed);
        let now = 1_000;
        const run = <T>(work: (ctx: Parameters<typeof barriers.arrive>[0]) => Promise<T>) => store.transaction((tx) => work({ tx, spaceId, nowMs: now++, random, limits: defaultSpaceLimits }));
        const { id } = await run((ctx) => barriers.createBarrier(ctx, { scopeId, target }));
        const model: Model = { epoch: 1, state: 'WAITING', keys: new Set() };

        for (const step of ops) {
          const before = await store.read((tx) => barriers.getBarrier(tx, spaceId, id));
          try {
            if (step.kind === 'arrive') {
              const arrivalKey = `k${step.key}`;
              const reply = await run((ctx) => barriers.arrive(ctx, id, { arrivalKey, ...(step.nameEpoch ? { epoch: model.epoch } : {}) }));
              const counted = model.keys.has(arrivalKey);
              expect(reply.replay).toBe(counted);
              if (counted) {
                expect(stripReplay(reply)).toEqual(before); // a repeat changes nothing
              } else {
                expect(model.state).toBe('WAITING');
                model.keys.add(arrivalKey);
                if (model.keys.size === target) model.state = 'RELEASED';
              }
            } else if (step.kind === 'nextEpoch') {
              await run((ctx) => barriers.nextEpoch(ctx, id, step.nameEpoch ? { epoch: model.epoch } : null));
              expect(model.state).not.toBe('WAITING');
              Object.assign(model, { epoch: model.epoch + 1, state: 'WAITING', keys: new Set() });
            } else {
              await run((ctx) => barriers.cancel(ctx, id));
              expect(model.state).not.toBe('RELEASED');
              model.state = 'CANCELLED';
            }
          } catch (error) {
            if (!(error instanceof BatonError)) throw error;
            expect(error.code).toBe('CONFLICT');
            const refusedArrive = step.kind === 'arrive' && !model.keys.has(`k${step.key}`) && model.state !== 'WAITING';
            const refusedNext = step.kind === 'nextEpoch' && model.state === 'WAITING';
            const refusedCancel = step.kind === 'cancel' && model.state === 'RELEASED';
            expect(refusedArrive || refusedNext || refusedCancel).toBe(true);
            expect(await store.read((tx) => barriers.getBarrier(tx, spaceId, id))).toEqual(before); // a refusal leaves no trace
          }
          const view = await store.read((tx) => barriers.getBarrier(tx, spaceId, id));
          expect(view).toMatchObject({ epoch: model.epoch, state: model.state, arrivals: model.keys.size, target });
          expect(view.state === 'RELEASED').toBe(model.keys.size === target);
          expect(await store.read((tx) => tx.barriers.countArrivals(spaceId, id, model.epoch))).toBe(model.keys.size);
        }
      }),
      { numRuns: 200 },
    );
  });
});

function stripReplay<T extends { replay: boolean }>(reply: T): Omit<T, 'replay'> {
  const { replay: _replay, ...view } = reply;
  return view;
}
