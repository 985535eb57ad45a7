import { describe, expect, it } from 'vitest';
import { createClient } from './client';
import type { TimerApi } from './contract';
import { SteppingClock } from './testing/stepping-clock';
import { armTimer, firedTimerIdOf, maxTimerDelayMs } from './timers';
import type { Transport, TransportRequest } from './transport';

const spaceId = '11111111-1111-4111-8111-111111111111';
const scopeId = '33333333-3333-4333-8333-333333333333';
const mailboxId = '44444444-4444-4444-8444-444444444444';
const claimId = '55555555-5555-4555-8555-555555555555';

/** A client whose every call answers `{}` (201 for a POST), recording the requests. */
function recordingClient() {
  const requests: TransportRequest[] = [];
  const transport: Transport = async (request) => {
    requests.push(request);
    return { status: request.method === 'POST' ? 201 : 200, headers: { 'content-type': 'application/json' }, body: '{}' };
  };
  let keys = 0;
  const client = createClient({ baseUrl: 'http://baton.test', apiKey: 'bk_test', spaceId, transport, clock: new SteppingClock(), newIdempotencyKey: () => `key-${++keys}` });
  const summary = () => requests.map((r) => [r.method, r.url.replace(`http://baton.test/v1/spaces/${spaceId}`, ''), r.body === undefined ? undefined : JSON.parse(r.body), r.headers['idempotency-key']]);
  return { client, summary };
}

describe('claim and timer routes of the client', () => {
  it('sends each claim route with an Idempotency-Key on the mutating ones', async () => {
    const { client, summary } = recordingClient();
    await client.acquireClaim({ claimKey: 'k', scopeId, holder: 'h', holderSession: 's', leaseSeconds: 10 });
    await client.getClaim(claimId);
    await client.listClaims({ claimKey: 'k', state: ['RELEASED', 'EXPIRED'], limit: 5 });
    await client.renewClaim(claimId, { token: 't', leaseSeconds: 10 });
    await client.releaseClaim(claimId, { token: 't' });
    expect(summary()).toEqual([
      ['POST', '/claims', { claimKey: 'k', scopeId, holder: 'h', holderSession: 's', leaseSeconds: 10 }, 'key-1'],
      ['GET', `/claims/${claimId}`, undefined, undefined],
      ['GET', '/claims?limit=5&state=RELEASED%2CEXPIRED&claimKey=k', undefined, undefined],
      ['POST', `/claims/${claimId}/renew`, { token: 't', leaseSeconds: 10 }, 'key-2'],
      ['POST', `/claims/${claimId}/release`, { token: 't' }, 'key-3'],
    ]);
  });

  it('sends each timer route', async () => {
    const { client, summary } = recordingClient();
    await client.armTimer({ timerKey: 'tk', scopeId, mailboxId, payload: { a: 1 }, delaySeconds: 5 });
    await client.getTimer(claimId);
    await client.listTimers({ state: 'ARMED', scopeId });
    await client.cancelTimer(claimId);
    expect(summary()).toEqual([
      ['POST', '/timers', { timerKey: 'tk', scopeId, mailboxId, payload: { a: 1 }, delaySeconds: 5 }, 'key-1'],
      ['GET', `/timers/${claimId}`, undefined, undefined],
      ['GET', `/timers?state=ARMED&scopeId=${scopeId}`, undefined, undefined],
      ['POST', `/timers/${claimId}/cancel`, {}, 'key-2'],
    ]);
  });
});

describe('armTimer', () => {
  function fakeTimers() {
    const bodies: unknown[] = [];
    const api: TimerApi = { armTimer: async (body) => (bodies.push(body), {} as never) };
    return { api, bodies };
  }
  const base = { timerKey: 'run-1/check', scopeId, mailboxId, payload: { check: true } };

  it('sends delayMs as whole seconds, rounded up so it never fires early', async () => {
    const { api, bodies } = fakeTimers();
    await armTimer(api, { ...base, delayMs: 200 });
    await armTimer(api, { ...base, delayMs: 0 });
    await armTimer(api, { ...base, delayMs: 5_000 });
    expect(bodies).toEqual([{ ...base, delaySeconds: 1 }, { ...base, delaySeconds: 0 }, { ...base, delaySeconds: 5 }]);
  });

  it('sends at as fireAt', async () => {
    const { api, bodies } = fakeTimers();
    await armTimer(api, { ...base, at: new Date('2026-01-02T03:04:05.678Z') });
    expect(bodies).toEqual([{ ...base, fireAt: '2026-01-02T03:04:05.678Z' }]);
  });

  it('refuses both, neither, a negative or too long delay and an invalid date', () => {
    const { api, bodies } = fakeTimers();
    expect(() => armTimer(api, { ...base } as never)).toThrow(TypeError);
    expect(() => armTimer(api, { ...base, delayMs: 1, at: new Date() } as never)).toThrow(TypeError);
    expect(() => armTimer(api, { ...base, delayMs: -1 })).toThrow(RangeError);
    expect(() => armTimer(api, { ...base, delayMs: maxTimerDelayMs + 1 })).toThrow(RangeError);
    expect(() => armTimer(api, { ...base, at: new Date('nope') })).toThrow(TypeError);
    expect(bodies).toEqual([]);
  });

  it('reads the timer id from a fired message\'s workKey', () => {
    expect(firedTimerIdOf({ workKey: `timer:${claimId}` })).toBe(claimId);
    expect(firedTimerIdOf({ workKey: 'report-7' })).toBeNull();
    expect(firedTimerIdOf({ workKey: 'timer:' })).toBeNull();
    expect(firedTimerIdOf({ workKey: null })).toBeNull();
  });
});
