import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config';

describe('loadConfig', () => {
  it('defaults to the embedded store on 127.0.0.1:8080 with the system clock', () => {
    expect(loadConfig({})).toEqual({
      host: '127.0.0.1',
      port: 8080,
      databaseUrl: undefined,
      databasePoolMode: 'session',
      notifyDatabaseUrl: undefined,
      dbPoolMax: 10,
      dataDir: './.baton/data',
      bootstrap: true,
      bootstrapPlan: 'ENTERPRISE',
      clock: 'system',
      clockStartMs: undefined,
      adminToken: undefined,
      metricsToken: undefined,
      logLevel: 'info',
      logFormat: undefined,
      secretKey: undefined,
      webhookAllowPrivate: false,
      webhookTimeoutMs: 10_000,
      console: true,
    });
  });

  it('reads the webhook secret key (32 bytes base64) and the private-address switch', () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const config = loadConfig({ BATON_SECRET_KEY: key, BATON_WEBHOOK_ALLOW_PRIVATE: '1' });
    expect(config.secretKey?.equals(Buffer.alloc(32, 7))).toBe(true);
    expect(config.webhookAllowPrivate).toBe(true);
    expect(() => loadConfig({ BATON_SECRET_KEY: Buffer.alloc(16).toString('base64') })).toThrow(/BATON_SECRET_KEY must be 32 bytes/);
    expect(() => loadConfig({ BATON_WEBHOOK_ALLOW_PRIVATE: 'yes' })).toThrow(ConfigError);
    expect(loadConfig({ BATON_WEBHOOK_TIMEOUT_MS: '1500' }).webhookTimeoutMs).toBe(1500);
    expect(() => loadConfig({ BATON_WEBHOOK_TIMEOUT_MS: '50' })).toThrow(/BATON_WEBHOOK_TIMEOUT_MS must be 100 to 60000, got 50/);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      HOST: '0.0.0.0',
      PORT: '9000',
      DATABASE_URL: 'postgres://db/baton',
      BATON_DB_POOL_MAX: '40',
      BATON_DATABASE_POOL_MODE: 'transaction',
      BATON_NOTIFY_DATABASE_URL: 'postgres://db-direct/baton',
      BATON_DATA_DIR: '/var/baton',
      BATON_BOOTSTRAP: 'off',
      BATON_BOOTSTRAP_PLAN: 'FREE',
      BATON_CLOCK: 'manual',
      BATON_CLOCK_START: '2026-01-01T00:00:00.000Z',
      BATON_ADMIN_TOKEN: 'op',
      BATON_METRICS_TOKEN: 'scrape',
      LOG_LEVEL: 'debug',
      LOG_FORMAT: 'pretty',
    });
    expect(config).toMatchObject({ host: '0.0.0.0', port: 9000, databaseUrl: 'postgres://db/baton', databasePoolMode: 'transaction', notifyDatabaseUrl: 'postgres://db-direct/baton', dbPoolMax: 40, bootstrap: false, bootstrapPlan: 'FREE', clock: 'manual', clockStartMs: Date.UTC(2026, 0, 1), adminToken: 'op', metricsToken: 'scrape', logLevel: 'debug', logFormat: 'pretty' });
  });

  it('reads the bootstrap plan in any case: the hosted default is one flag away', () => {
    expect(loadConfig({ BATON_BOOTSTRAP_PLAN: 'free' }).bootstrapPlan).toBe('FREE');
    expect(loadConfig({ BATON_BOOTSTRAP_PLAN: 'TEAM' }).bootstrapPlan).toBe('TEAM');
    expect(loadConfig({ BATON_BOOTSTRAP_PLAN: '' }).bootstrapPlan).toBe('ENTERPRISE');
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ BATON_CLOCK: 'fast' }, /BATON_CLOCK/],
    [{ BATON_BOOTSTRAP: 'maybe' }, /BATON_BOOTSTRAP/],
    [{ BATON_BOOTSTRAP_PLAN: 'GOLD' }, /BATON_BOOTSTRAP_PLAN must be one of FREE, BUILDER, TEAM, SCALE, ENTERPRISE, LEGACY, got GOLD/],
    [{ BATON_CLOCK_START: 'yesterday' }, /BATON_CLOCK_START/],
    [{ LOG_FORMAT: 'text' }, /LOG_FORMAT/],
    [{ BATON_DB_POOL_MAX: '0' }, /BATON_DB_POOL_MAX/],
    [{ BATON_DB_POOL_MAX: 'many' }, /BATON_DB_POOL_MAX/],
    [{ BATON_DATABASE_POOL_MODE: 'statement' }, /BATON_DATABASE_POOL_MODE must be session or transaction, got statement/],
    [{ BATON_NOTIFY_DATABASE_URL: 'postgres://db/baton' }, /BATON_NOTIFY_DATABASE_URL is set but DATABASE_URL is not/],
    // LISTEN through the transaction pooler would hear nothing: refused, naming the setting.
    [{ DATABASE_URL: 'postgres://pooler/baton', BATON_DATABASE_POOL_MODE: 'transaction' }, /BATON_DATABASE_POOL_MODE=transaction needs BATON_NOTIFY_DATABASE_URL/],
  ])('refuses %j with a message naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrowError(ConfigError);
    expect(() => loadConfig(env)).toThrowError(message);
  });
});
