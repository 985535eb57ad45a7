import { describe, expect, it } from 'vitest';
import { BatonError, MemoryStore, StoreUnavailable } from '@baton/core';
import { StoreOutage, type OutageLog } from './store-outage';

function recordingLog(): OutageLog & { lines: Array<{ level: string; fields: object; message: string }> } {
  const lines: Array<{ level: string; fields: object; message: string }> = [];
  return {
    lines,
    warn: (fields, message) => lines.push({ level: 'warn', fields, message }),
    info: (fields, message) => lines.push({ level: 'info', fields, message }),
  };
}

const refused = (): StoreUnavailable => new StoreUnavailable('connection refused (ECONNREFUSED)', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));

describe('StoreOutage', () => {
  it('logs an outage once when it starts and once when the store answers again, however many calls it refused', () => {
    const log = recordingLog();
    let nowMs = 1_000;
    const outage = new StoreOutage(log, () => nowMs);
    outage.answered();
    expect(log.lines).toEqual([]);
    for (let i = 0; i < 500; i++) outage.unreachable(refused());
    expect(log.lines).toEqual([{ level: 'warn', fields: { reason: 'connection refused (ECONNREFUSED)' }, message: expect.stringContaining('store unreachable') }]);
    expect(outage.state).toEqual({ reason: 'connection refused (ECONNREFUSED)', sinceMs: 1_000 });
    nowMs = 4_500;
    outage.answered();
    outage.answered();
    expect(log.lines.slice(1)).toEqual([{ level: 'info', fields: { reason: 'connection refused (ECONNREFUSED)', outageMs: 3_500, refused: 500 }, message: 'store answers again' }]);
    expect(outage.state).toBeUndefined();
    // The next outage is a new one.
    outage.unreachable(new StoreUnavailable('connection terminated', new Error('Connection terminated unexpectedly')));
    expect(log.lines).toHaveLength(3);
    expect(outage.state).toEqual({ reason: 'connection terminated', sinceMs: 4_500 });
  });

  it('watches a store: StoreUnavailable starts an outage, a success ends it, other failures change nothing', async () => {
    const log = recordingLog();
    const outage = new StoreOutage(log, () => 0);
    const inner = new MemoryStore();
    const store = outage.watch(inner);
    expect(store.kind).toBe('memory');
    let failWith: Error | undefined = refused();
    const flaky = async () => {
      if (failWith) throw failWith;
      return 7;
    };
    await expect(store.transaction(flaky)).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(store.read(flaky)).rejects.toBeInstanceOf(StoreUnavailable);
    expect(outage.state?.reason).toBe('connection refused (ECONNREFUSED)');
    // A business error may come before any statement: it says nothing about the store.
    failWith = new BatonError('NOT_FOUND', 'budget not found');
    await expect(store.transaction(flaky)).rejects.toBeInstanceOf(BatonError);
    expect(outage.state).toBeDefined();
    failWith = undefined;
    await expect(store.read(flaky)).resolves.toBe(7);
    expect(outage.state).toBeUndefined();
    expect(log.lines.map((l) => l.level)).toEqual(['warn', 'info']);
    expect(log.lines[1]!.fields).toMatchObject({ refused: 2 });
  });
});
