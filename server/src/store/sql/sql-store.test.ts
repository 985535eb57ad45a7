import { describe, expect, it } from 'vitest';
import { BatonError } from '@baton/core';
import type { SqlDriver } from './driver';
import { SqlStore } from './sql-store';

const coded = (code: string): Error => Object.assign(new Error(`refused (${code})`), { code });

/** A driver whose every transaction PostgreSQL refuses with `code`, counting the tries. */
function refusingDriver(code: string): SqlDriver & { tries: number } {
  const driver = {
    kind: 'postgres' as const,
    tries: 0,
    async transaction<T>(): Promise<T> {
      driver.tries += 1;
      throw coded(code);
    },
    query: async () => [],
    write: async () => undefined,
    exec: async () => undefined,
    close: async () => undefined,
  };
  return driver as unknown as SqlDriver & { tries: number };
}

describe('SqlStore.transaction under lock conflicts', () => {
  it.each(['55P03', '40P01', '40001'])('answers CONFLICT, not a bare PostgreSQL error, when %s refuses every try', async (code) => {
    const driver = refusingDriver(code);
    const store = new SqlStore(driver);
    const error = await store.transaction(async () => 'never').then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(BatonError);
    expect(error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining(`refused (${code})`) });
    expect(driver.tries).toBe(30);
    expect(store.retriedTransactions).toBe(29);
  });

  it('passes any other error through at the first try', async () => {
    const driver = refusingDriver('23505');
    const store = new SqlStore(driver);
    await expect(store.transaction(async () => 'never')).rejects.toMatchObject({ code: '23505' });
    expect(driver.tries).toBe(1);
  });
});
