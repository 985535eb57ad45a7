import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RunApi, RunView } from './contract';
import { BatonApiError } from './errors';
import { withChildRun } from './runs';
import { flush } from './testing/manual-clock';

const parentScopeId = randomUUID();

/** Runs in memory, as the server keeps their states: every call recorded. */
function fakeRuns(overrides: Partial<RunApi> = {}) {
  const calls: [string, string][] = [];
  const runs = new Map<string, RunView>();
  const end = (scopeId: string, state: RunView['state']): RunView => {
    const run = runs.get(scopeId);
    if (!run) throw new BatonApiError({ code: 'NOT_FOUND', status: 404, message: 'no run', requestId: null });
    if (run.state !== 'ACTIVE' && run.state !== state) throw new BatonApiError({ code: 'CONFLICT', status: 409, message: `run is ${run.state}`, requestId: null });
    run.state = state;
    return run;
  };
  const api: RunApi = {
    createRun: async (body) => {
      const scopeId = body.scopeId ?? randomUUID();
      calls.push(['create', scopeId]);
      const run: RunView = {
        scopeId, parentScopeId: body.parentScopeId ?? null, name: body.name ?? null, state: 'ACTIVE', childLimit: body.childLimit ?? 1000,
        children: 0, cascading: false, createdAt: '2026-01-01T00:00:00.000Z', endedAt: null,
      };
      runs.set(scopeId, run);
      return run;
    },
    completeRun: async (scopeId) => (calls.push(['complete', scopeId]), end(scopeId, 'COMPLETED')),
    cancelRun: async (scopeId) => (calls.push(['cancel', scopeId]), end(scopeId, 'CANCELLED')),
    ...overrides,
  };
  return { api, calls, runs };
}

describe('withChildRun', () => {
  it('creates a child of the parent, hands fn its scopeId and completes it when fn resolves', async () => {
    const { api, calls, runs } = fakeRuns();
    const result = await withChildRun(api, parentScopeId, async (scopeId, child) => {
      expect(child.run).toMatchObject({ scopeId, parentScopeId, name: 'triage', state: 'ACTIVE' });
      return `worked under ${scopeId}`;
    }, { name: 'triage' });
    const [[, scopeId]] = calls as [[string, string]];
    expect(result).toBe(`worked under ${scopeId}`);
    expect(calls).toEqual([['create', scopeId], ['complete', scopeId]]);
    expect(runs.get(scopeId)!.state).toBe('COMPLETED');
  });

  it('cancels the child and rethrows when fn throws', async () => {
    const { api, calls } = fakeRuns();
    const boom = new Error('agent went astray');
    await expect(withChildRun(api, parentScopeId, async () => Promise.reject(boom))).rejects.toBe(boom);
    expect(calls.map(([op]) => op)).toEqual(['create', 'cancel']);
  });

  it('keeps fn\'s error when the cancel fails too', async () => {
    const { api } = fakeRuns({ cancelRun: async () => Promise.reject(new Error('network down')) });
    const boom = new Error('boom');
    await expect(withChildRun(api, parentScopeId, async () => Promise.reject(boom))).rejects.toBe(boom);
  });

  it('cancels the child as soon as the signal aborts, aborts fn\'s signal, and rejects with the reason', async () => {
    const { api, calls, runs } = fakeRuns();
    const caller = new AbortController();
    let fnSignal: AbortSignal | undefined;
    let finish!: () => void;
    const result = withChildRun(api, parentScopeId, (_scopeId, child) => {
      fnSignal = child.signal;
      return new Promise<string>((resolve) => (finish = () => resolve('finished anyway')));
    }, { signal: caller.signal }).catch((e: unknown) => e);
    await flush();
    const reason = new Error('operator stop');
    caller.abort(reason);
    await flush();
    const scopeId = calls[0]![1];
    expect(fnSignal?.reason).toBe(reason);
    expect(runs.get(scopeId)!.state).toBe('CANCELLED'); // before fn settled
    finish();
    expect(await result).toBe(reason);
    expect(calls.map(([op]) => op)).toEqual(['create', 'cancel']);
  });

  it('uses the given scopeId, so a rerun reaches the same child', async () => {
    const { api, calls } = fakeRuns();
    const scopeId = randomUUID();
    await withChildRun(api, parentScopeId, async (got) => expect(got).toBe(scopeId), { scopeId });
    expect(calls).toEqual([['create', scopeId], ['complete', scopeId]]);
  });

  it('throws a complete the server refuses (the run was cancelled meanwhile)', async () => {
    const { api } = fakeRuns();
    await expect(withChildRun(api, parentScopeId, async (scopeId) => void (await api.cancelRun(scopeId)))).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('creates nothing under an aborted signal', async () => {
    const { api, calls } = fakeRuns();
    const caller = new AbortController();
    caller.abort(new Error('already stopped'));
    await expect(withChildRun(api, parentScopeId, async () => 'x', { signal: caller.signal })).rejects.toThrow('already stopped');
    expect(calls).toEqual([]);
  });
});
