import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config';

describe('loadConfig', () => {
  it('defaults to the embedded store on 127.0.0.1:8080 with the system clock', () => {
    expect(loadConfig({})).toEqual({
      host: '127.0.0.1',
      port: 8080,
      databaseUrl: undefined,
      dataDir: './.baton/data',
      bootstrap: true,
      clock: 'system',
      clockStartMs: undefined,
      adminToken: undefined,
      logLevel: 'info',
    });
  });

  it('reads every variable', () => {
    const config = loadConfig({
      HOST: '0.0.0.0',
      PORT: '9000',
      DATABASE_URL: 'postgres://db/baton',
      BATON_DATA_DIR: '/var/baton',
      BATON_BOOTSTRAP: 'off',
      BATON_CLOCK: 'manual',
      BATON_CLOCK_START: '2026-01-01T00:00:00.000Z',
      BATON_ADMIN_TOKEN: 'op',
      LOG_LEVEL: 'debug',
    });
    expect(config).toMatchObject({ host: '0.0.0.0', port: 9000, databaseUrl: 'postgres://db/baton', bootstrap: false, clock: 'manual', clockStartMs: Date.UTC(2026, 0, 1), adminToken: 'op' });
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ BATON_CLOCK: 'fast' }, /BATON_CLOCK/],
    [{ BATON_BOOTSTRAP: 'maybe' }, /BATON_BOOTSTRAP/],
    [{ BATON_CLOCK_START: 'yesterday' }, /BATON_CLOCK_START/],
  ])('refuses %j with a message naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrowError(ConfigError);
    expect(() => loadConfig(env)).toThrowError(message);
  });
});
