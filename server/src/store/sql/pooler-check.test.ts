import { describe, expect, it } from 'vitest';
import { poolerVerdict, type SessionProbe } from './pooler-check';

const own: SessionProbe = { sessions: 'own', detail: 'pids [1, 1, 1] and [2, 2, 2]', database: 'baton', serverStartedAt: 't0' };
const shared: SessionProbe = { sessions: 'shared', detail: 'pids [1, 1, 1] and [1, 1, 1]', database: 'baton', serverStartedAt: 't0' };
const unknown: SessionProbe = { sessions: 'unknown', detail: 'connect ECONNREFUSED' };

describe('poolerVerdict', () => {
  it('lets sessions of their own through in session mode, and a transaction pooler with a session URL for the notifier in transaction mode', () => {
    expect(poolerVerdict({ poolMode: 'session', notifyUrlSet: false }, own, undefined)).toEqual({ refusal: undefined, warnings: [] });
    expect(poolerVerdict({ poolMode: 'transaction', notifyUrlSet: true }, shared, own)).toEqual({ refusal: undefined, warnings: [] });
  });

  it('refuses prepared statements through a transaction pooler, naming BATON_DATABASE_POOL_MODE', () => {
    expect(poolerVerdict({ poolMode: 'session', notifyUrlSet: false }, shared, undefined).refusal).toMatch(/^DATABASE_URL goes through a transaction pooler.*set BATON_DATABASE_POOL_MODE=transaction/);
  });

  it('refuses LISTEN through a transaction pooler, naming BATON_NOTIFY_DATABASE_URL', () => {
    expect(poolerVerdict({ poolMode: 'transaction', notifyUrlSet: true }, shared, shared).refusal).toMatch(/^BATON_NOTIFY_DATABASE_URL goes through a transaction pooler.*set BATON_NOTIFY_DATABASE_URL/);
    expect(poolerVerdict({ poolMode: 'transaction', notifyUrlSet: false }, shared, undefined).refusal).toMatch(/^DATABASE_URL goes through a transaction pooler, where LISTEN/);
  });

  it('refuses a notifier on another database or another server than the store', () => {
    expect(poolerVerdict({ poolMode: 'session', notifyUrlSet: true }, own, { ...own, database: 'other' }).refusal).toMatch(/reaches database other .* but DATABASE_URL reaches baton/);
    expect(poolerVerdict({ poolMode: 'session', notifyUrlSet: true }, own, { ...own, serverStartedAt: 't1' }).refusal).toMatch(/BATON_NOTIFY_DATABASE_URL reaches database baton \(server up since t1\)/);
  });

  it('only warns when transaction mode runs on sessions of their own, or when the probe could not tell', () => {
    const slower = poolerVerdict({ poolMode: 'transaction', notifyUrlSet: true }, own, own);
    expect(slower.refusal).toBeUndefined();
    expect(slower.warnings).toEqual([expect.stringMatching(/statements are parsed and planned on every use/)]);
    const blind = poolerVerdict({ poolMode: 'session', notifyUrlSet: true }, unknown, unknown);
    expect(blind.refusal).toBeUndefined();
    expect(blind.warnings).toEqual([expect.stringMatching(/^could not tell whether DATABASE_URL .*ECONNREFUSED/), expect.stringMatching(/^could not tell whether BATON_NOTIFY_DATABASE_URL/)]);
  });
});
