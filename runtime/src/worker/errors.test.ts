import { describe, expect, it } from 'vitest';
import { isApiError, isLeaseLost, isPermanent, nonRetryable, PermanentError, WorkerStoppedError } from './errors';

describe('worker errors', () => {
  it('a PermanentError, or any error marked nonRetryable, is permanent; other errors are not', () => {
    const marked = new TypeError('cannot parse');
    expect(nonRetryable(marked)).toBe(marked);
    expect([new PermanentError('bad input'), marked, new Error('upstream 503'), 'text', null].map(isPermanent)).toEqual([true, true, false, false, false]);
  });

  it('recognises an API error by its shape, code and status, whatever its class', () => {
    expect(isApiError({ code: 'LEASE_LOST', status: 409 })).toBe(true);
    expect(isApiError(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(false);
    expect(isLeaseLost({ code: 'LEASE_LOST', status: 409 })).toBe(true);
    expect(isLeaseLost({ code: 'CONFLICT', status: 409 })).toBe(false);
  });

  it('a WorkerStoppedError names the answer, the API error’s own message and what to check', () => {
    const cause = Object.assign(new Error('key revoked'), { code: 'UNAUTHENTICATED', status: 401 });
    const stopped = new WorkerStoppedError('UNAUTHENTICATED', 401, 'check BATON_KEY', cause);
    expect(stopped.message).toBe('worker stopped: admit answered 401 UNAUTHENTICATED (key revoked); check BATON_KEY');
    expect(stopped.cause).toBe(cause);
  });
});
