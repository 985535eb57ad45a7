import { defaultSpaceLimits } from '../tenancy/space-limits';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatonError } from '../errors';
import { SeededRandom } from '../random';
import { MemoryStore } from '../store/memory/memory-store';
import type { BudgetView } from '../schemas/budgets';
import * as budgets from './service';

/**
 * Budget arithmetic over random operation sequences through the real service on the memory
 * store: conservation always holds, nothing goes negative, the settled total equals the sum of
 * distinct settle entries, reserved equals the remainders of ACTIVE reservations, a workKey
 * replay changes nothing, and a refused operation leaves no trace.
 */
type Op =
  | { kind: 'reserve'; amount: bigint }
  | { kind: 'settle'; pick: number; amount: bigint; reuseKey: boolean }
  | { kind: 'void'; pick: number; reuseKey: boolean };

const amount = fc.bigInt({ min: 1n, max: 400n });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('reserve' as const), amount }),
  fc.record({ kind: fc.constant('settle' as const), pick: fc.nat(), amount, reuseKey: fc.boolean() }),
  fc.record({ kind: fc.constant('void' as const), pick: fc.nat(), reuseKey: fc.boolean() }),
);

const spaceId = '00000000-0000-4000-8000-000000000001';
const scopeId = '00000000-0000-4000-8000-000000000002';

describe('budget ledger properties', () => {
  it('conserves funds and applies each workKey once over any operation sequence', async () => {
    await fc.assert(
      fc.asyncProperty(fc.bigInt({ min: 0n, max: 1_000n }), fc.array(op, { maxLength: 40 }), fc.integer(), async (limit, ops, seed) => {
        const store = new MemoryStore();
        const random = new SeededRandom(seed);
        let now = 1_000;
        const run = <T>(work: (ctx: budgets_ctx) => Promise<T>) => store.transaction((tx) => work({ tx, spaceId, nowMs: now++, random, limits: defaultSpaceLimits }));
        const created = await run((ctx) => budgets.createBudget(ctx, { name: 'b', currency: 'USD', scale: 2, limitMinor: limit.toString() }, true));
        const budgetId = created.view.id;
        const reservations: string[] = [];
        const entries = new Map<string, { kind: string; amount: bigint; reservationId: string }>();
        const usedKeys: string[] = [];

        for (const step of ops) {
          const before = await run((ctx) => budgets.getBudget(ctx.tx, spaceId, budgetId));
          try {
            if (step.kind === 'reserve') {
              const r = await run((ctx) => budgets.reserve(ctx, budgetId, { scopeId, holder: 'h', amountMinor: step.amount.toString() }));
              reservations.push(r.id);
              continue;
            }
            if (reservations.length === 0) continue;
            const reservationId = reservations[step.pick % reservations.length]!;
            const workKey = step.reuseKey && usedKeys.length > 0 ? usedKeys[step.pick % usedKeys.length]! : `k${usedKeys.length}`;
            const reply =
              step.kind === 'settle'
                ? await run((ctx) => budgets.settle(ctx, budgetId, { reservationId, amountMinor: step.amount.toString(), workKey }))
                : await run((ctx) => budgets.voidReservation(ctx, budgetId, { reservationId, workKey }));
            if (reply.replay) {
              expect(entries.get(workKey)?.reservationId).toBe(reservationId);
              expect(stripReservations(reply.budget)).toEqual(stripReservations(before));
            } else {
              expect(entries.has(workKey)).toBe(false);
              entries.set(workKey, { kind: reply.entry.kind, amount: BigInt(reply.entry.amountMinor), reservationId });
              usedKeys.push(workKey);
            }
          } catch (error) {
            if (!(error instanceof BatonError)) throw error;
            expect(['INSUFFICIENT_BUDGET', 'CONFLICT']).toContain(error.code);
            const after = await run((ctx) => budgets.getBudget(ctx.tx, spaceId, budgetId));
            expect(after).toEqual(before); // a refused operation leaves no trace
          }
          const view = await run((ctx) => budgets.getBudget(ctx.tx, spaceId, budgetId));
          checkLedger(view, limit, entries);
        }
      }),
      { numRuns: 150 },
    );
  });
});

type budgets_ctx = Parameters<typeof budgets.reserve>[0];

function stripReservations(view: BudgetView) {
  const { reservations: _r, updatedAt: _u, ...balances } = view;
  return balances;
}

function checkLedger(view: BudgetView, limit: bigint, entries: Map<string, { kind: string; amount: bigint }>): void {
  const [available, reserved, settled] = [BigInt(view.availableMinor), BigInt(view.reservedMinor), BigInt(view.settledMinor)];
  expect(available >= 0n && reserved >= 0n && settled >= 0n).toBe(true);
  expect(available + reserved + settled).toBe(limit);
  const settledByEntries = [...entries.values()].filter((e) => e.kind === 'SETTLE').reduce((sum, e) => sum + e.amount, 0n);
  expect(settled).toBe(settledByEntries);
  const remainders = view.reservations.reduce((sum, r) => sum + BigInt(r.remainingMinor), 0n);
  expect(reserved).toBe(remainders);
}
