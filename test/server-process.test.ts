import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killServerProcess, startServerProcess, stopServerProcess, type ServerProcess } from './support/server-process';

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
    // docs/design/0022-one-team-defaults.md: the banner gives a scope too, and says the organization has no caps.
    expect(first.output()).toMatch(/^ {2}export BATON_SCOPE=[0-9a-f-]{36}$/m);
    expect(first.output()).toContain('is on plan ENTERPRISE: no caps');
    const created = await fetch(`${first.address}/v1/spaces/${space}/budgets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'p1' },
      body: JSON.stringify({ name: 'kept', currency: 'USD', scale: 2, limitMinor: '100' }),
    });
    expect(created.status).toBe(201);
    // Without BATON_SECRET_KEY the embedded store keeps a generated one (docs/design/0022-one-team-defaults.md): webhooks work.
    expect(first.output()).toContain('generated a key to seal webhook secrets');
    const destination = await fetch(`${first.address}/v1/spaces/${space}/destinations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'd1' },
      body: JSON.stringify({ url: 'https://hooks.invalid/baton' }),
    });
    expect(destination.status).toBe(201);
    const keptKey = readFileSync(join(dataDir, 'not', 'yet', 'there', 'baton-secret-key'), 'utf8');
    expect(await stop(first)).toBe(0);
    expect(first.output()).toContain('drained');

    const second = await start();
    expect(second.output()).not.toContain('export BATON_KEY=');
    await new Promise((r) => setTimeout(r, 200)); // the banner follows the "serving" log line
    expect(second.output()).toContain(`export BATON_SPACE=${space}`);
    expect(second.output()).not.toContain('generated a key');
    expect(readFileSync(join(dataDir, 'not', 'yet', 'there', 'baton-secret-key'), 'utf8')).toBe(keptKey);
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
  }, 300_000);

  it('refuses a second server on the same data directory, and starts again at once after the owner is SIGKILLed', async () => {
    const env = { PORT: '0', BATON_DATA_DIR: join(dataDir, 'shared'), DATABASE_URL: '', LOG_LEVEL: 'info' };
    const owner = await startServerProcess(env);
    await new Promise((r) => setTimeout(r, 200)); // the banner follows the "serving" log line
    const space = /export BATON_SPACE=(\S+)/.exec(owner.output())?.[1];
    const key = /export BATON_KEY=(\S+)/.exec(owner.output())?.[1];
    const acked = await fetch(`${owner.address}/v1/spaces/${space}/budgets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'l1' },
      body: JSON.stringify({ name: 'acked-by-the-owner', currency: 'USD', scale: 2, limitMinor: '1' }),
    });
    expect(acked.status).toBe(201);

    // Started, it would be a second writer on the directory: acknowledged writes of one or the other get lost.
    const second = await startServerProcess(env).then(
      async (started) => ({ code: `serving (stopped: ${await stopServerProcess(started.child)})`, output: started.output() }),
      (error: Error) => ({ code: /server exited (\d+)/.exec(error.message)?.[1], output: error.message }),
    );
    expect(second.code).toBe('3');
    expect(second.output).toContain(`baton: the data directory ${env.BATON_DATA_DIR} is in use by another Baton process (pid ${owner.child.pid}); stop it or set BATON_DATA_DIR`);
    expect(second.output).not.toMatch(/^\s+at /m); // a message, not a stack trace

    await killServerProcess(owner.child);
    const successor = await startServerProcess(env);
    const list = await fetch(`${successor.address}/v1/spaces/${space}/budgets`, { headers: { authorization: `Bearer ${key}` } });
    expect(((await list.json()) as { items: { name: string }[] }).items.map((b) => b.name)).toEqual(['acked-by-the-owner']);
    expect(await stopServerProcess(successor.child)).toBe(0);
  }, 300_000);
});
