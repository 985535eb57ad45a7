import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { exited, stopServerProcess } from './support/server-process';

/**
 * The `baton-server` command as a user runs it: the compiled bin (npm test builds first)
 * starting the server on the embedded store, then the operator and journal commands against it
 * with the variables its banner printed.
 */
const root = new URL('..', import.meta.url).pathname;
const bin = join(root, 'server/bin/baton-server.mjs');
const dataDir = mkdtempSync(join(tmpdir(), 'baton-cli-'));
let server: ChildProcess | undefined;
afterAll(async () => {
  if (server) await stopServerProcess(server);
  rmSync(dataDir, { recursive: true, force: true });
});

const execCli = async (args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> => {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, cwd: root });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
};

describe('baton-server, the command', () => {
  it('starts the server, whose banner gives what the operator and journal commands need', async () => {
    server = spawn(process.execPath, [bin, 'start', '--port', '0', '--data-dir', join(dataDir, 'data')], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: '', BATON_ADMIN_TOKEN: 'cli-process-token', LOG_FORMAT: 'json' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    server.stdout!.on('data', (d) => (output += d));
    server.stderr!.on('data', (d) => (output += d));
    await expect.poll(() => output, { timeout: 120_000, interval: 100 }).toMatch(/export BATON_SCOPE=/);
    const exported = Object.fromEntries([...output.matchAll(/^ {2}export (BATON_\w+)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    expect(Object.keys(exported)).toEqual(['BATON_URL', 'BATON_SPACE', 'BATON_KEY', 'BATON_SCOPE']);
    expect(output).toContain('is on plan ENTERPRISE: no caps');
    const env = { ...exported, BATON_ADMIN_TOKEN: 'cli-process-token' };

    const orgs = await execCli(['orgs', 'list'], env);
    expect(orgs.code).toBe(0);
    const [dev] = JSON.parse(orgs.stdout);
    expect(dev).toMatchObject({ name: 'dev', plan: 'ENTERPRISE' });
    const spaces = await execCli(['spaces', 'list', dev.id], env);
    expect(JSON.parse(spaces.stdout).map((s: { id: string }) => s.id)).toEqual([exported.BATON_SPACE]);
    const freed = await execCli(['orgs', 'plan', dev.id, '--plan', 'FREE'], env);
    expect(JSON.parse(freed.stdout)).toMatchObject({ plan: 'FREE', limits: { requestsPerMinute: 600 } });

    const tail = await execCli(['journal', 'tail'], env);
    expect(tail.code).toBe(0);
    expect(tail.stderr).toMatch(/caught up; continue with --cursor \d+/);

    const wrong = await execCli(['orgs', 'list'], { ...env, BATON_ADMIN_TOKEN: 'not-it' });
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stdout).error.code).toBe('UNAUTHENTICATED');
    const help = await execCli(['keys', 'list', '--help'], {});
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toContain('Usage: baton-server keys list [options] <orgId>');

    expect(await stopServerProcess(server)).toBe(0);
    expect(await exited(server)).toBe(0);
  }, 180_000);

  it('starts the server when given no command at all (npx baton-server): a bad setting is refused as start refuses it', async () => {
    const bare = await execCli([], { PORT: 'eighty' });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('baton: PORT must be 0 to 65535, got eighty');
  });
});
