import { describe, expect, it } from 'vitest';
import type { WorkerLogger } from '../logger';
import { WorkerStoppedError } from './errors';
import { WorkerReporter } from './reporter';
import type { WorkerEvent } from './types';

function setup(onEvent?: (event: WorkerEvent) => void, logger?: WorkerLogger) {
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => void lines.push({ level, message, fields });
  let inFlight = 0;
  const reporter = new WorkerReporter({
    onEvent,
    logger: logger ?? { info: at('info'), warn: at('warn'), error: at('error') },
    holder: 'w1',
    mailboxId: 'mb',
    scopeId: 's',
    inFlight: () => inFlight,
  });
  return { reporter, lines, setInFlight: (n: number) => (inFlight = n) };
}

const delivery = { messageId: 'm1', taskId: 't1', mailboxId: 'mb', scopeId: 's', attempt: 1, payload: { taskId: 't1', input: null }, input: null, claimed: { pools: [], quotas: [], budgets: [], workLimit: null } };

describe('WorkerReporter', () => {
  it('counts the events, with handlers in flight from the slots', () => {
    const { reporter, setInFlight } = setup();
    reporter.emit({ type: 'admitted', delivery });
    reporter.emit({ type: 'admitted', delivery });
    reporter.emit({ type: 'completed', messageId: 'm1', taskId: 't1' });
    reporter.emit({ type: 'failed', messageId: 'm1', taskId: 't1', retry: true, reason: 'drain' });
    reporter.emit({ type: 'lease_lost', messageId: 'm1', taskId: 't1', cause: 'EXPIRED' });
    reporter.emit({ type: 'renewed', messageId: 'm1', taskId: 't1', leaseExpiresAt: '2026-01-01T00:00:30.000Z' });
    setInFlight(1);
    expect(reporter.stats).toEqual({ admitted: 2, completed: 1, failed: 1, leaseLost: 1, inFlight: 1 });
  });

  it('logs failures by their code and leaves admissions, renewals and completions to onEvent', () => {
    const seen: string[] = [];
    const { reporter, lines } = setup((event) => seen.push(event.type));
    reporter.emit({ type: 'admitted', delivery });
    reporter.emit({ type: 'completed', messageId: 'm1', taskId: 't1' });
    reporter.emit({ type: 'failed', messageId: 'm1', taskId: 't1', retry: false, reason: 'handler', error: new TypeError('bad') });
    reporter.emit({ type: 'error', stage: 'renew', messageId: 'm1', error: { code: 'NETWORK', status: 0, message: 'reset' }, retryInMs: 333.3 });
    expect(seen).toEqual(['admitted', 'completed', 'failed', 'error']);
    expect(lines).toEqual([
      { level: 'warn', message: 'task failed permanently', fields: { holder: 'w1', taskId: 't1', messageId: 'm1', retry: false, code: 'TypeError', error: 'bad' } },
      { level: 'warn', message: 'renew failed', fields: { holder: 'w1', messageId: 'm1', code: 'NETWORK', status: 0, error: 'reset', retryInMs: 333 } },
    ]);
  });

  it('says what to check at error level when the worker stops by itself, and tells onEvent the API error', () => {
    const seen: WorkerEvent[] = [];
    const { reporter, lines } = setup((event) => seen.push(event));
    const apiError = { code: 'UNAUTHENTICATED', status: 401, message: 'no', requestId: null };
    const stopped = new WorkerStoppedError('UNAUTHENTICATED', 401, 'check BATON_KEY', apiError);
    reporter.stoppedByItself(stopped);
    expect(seen).toEqual([{ type: 'error', stage: 'admit', error: apiError }]);
    expect(lines).toEqual([{ level: 'error', message: stopped.message, fields: { holder: 'w1', mailboxId: 'mb', scopeId: 's', code: 'UNAUTHENTICATED', status: 401, error: 'no' } }]);
  });

  it('survives a listener and a logger that throw, and still counts', () => {
    const throwing = () => {
      throw new Error('bug');
    };
    const { reporter } = setup(throwing, { info: throwing, warn: throwing, error: throwing });
    expect(() => reporter.emit({ type: 'failed', messageId: 'm1', taskId: 't1', retry: true, reason: 'handler' })).not.toThrow();
    expect(reporter.stats.failed).toBe(1);
  });
});
