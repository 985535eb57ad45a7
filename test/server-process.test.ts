import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess, stopServerProcess, type ServerProcess } from './support/server-process';

/**
 * `npm start` as a user runs it: a real process on the embedded store (in a data directory
 * whose parents do not exist yet, as on a fresh checkout), the dev bootstrap
 * printed once, the key durable across a restart, SIGTERM draining to exit code 0.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'baton-process-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const start = (): Promise<ServerProcess> =>
  startServerProcess({ PORT: '0', BATON_DATA_DIR: join(dataDir, 'not', 'yet', 'there'), DATABASE_URL: '', LOG_LEVEL: 'info' });
const stop = (started: ServerProcess): Promise<number | null> => stopServerProcess(started.child);

describe('the server process on the embedded store', () => {
  it('bootstraps once, serves with the printed key, drains on SIGTERM, and keeps its data', async () => {
    const first = await start();
    await new Promise((r) => setTimeout(r, 200)); // the banner follows the "serving" log line
    const space = /export BATON_SPACE=(\S+)/.exec(first.output())?.[1];
    const key = /export BATON_KEY=(\S+)/.exec(first.output())?.[1];
    expect(space).toBeTruthy();
    expect(key).toMatch(/^bk_/);
    expect(first.output()).toContain('embedded PGlite store');
    const created = await fetch(`${first.address}/v1/spaces/${space}/budgets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'p1' },
      body: JSON.stringify({ name: 'kept', currency: 'USD', scale: 2, limitMinor: '100' }),
    });
    expect(created.status).toBe(201);
    expect(await stop(first)).toBe(0);
    expect(first.output()).toContain('drained');

    const second = await start();
    expect(second.output()).not.toContain('export BATON_KEY=');
    const list = await fetch(`${second.address}/v1/spaces/${space}/budgets`, { headers: { authorization: `Bearer ${key}` } });
    expect(list.status).toBe(200);
    expect(((await list.json()) as { items: { name: string }[] }).items.map((b: { name: string }) => b.name)).toEqual(['kept']);

    // kill -9 right after an acknowledged commit: the commit survives (docs/embedded-store.md).
    const acked = await fetch(`${second.address}/v1/spaces/${space}/budgets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'p2' },
      body: JSON.stringify({ name: 'acked-before-kill', currency: 'USD', scale: 2, limitMinor: '1' }),
    });
    expect(acked.status).toBe(201);
    const killed = new Promise((resolve) => second.child.once('exit', resolve));
    second.child.kill('SIGKILL');
    await killed;

    const third = await start();
    const after = await fetch(`${third.address}/v1/spaces/${space}/budgets`, { headers: { authorization: `Bearer ${key}` } });
    expect(((await after.json()) as { items: { name: string }[] }).items.map((b) => b.name)).toEqual(['acked-before-kill', 'kept']);
    expect(await stop(third)).toBe(0);
  }, 120_000);
});
