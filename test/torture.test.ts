import { afterAll, describe, expect, it } from 'vitest';
import { removeWorkDir, runTorture, type TortureResult } from '../torture/run';

/**
 * The torture run of docs/reliability.md, short: real server processes (server/dist, as
 * `npm start` runs it; npm test builds it first), a PostgreSQL cluster of the run's own that it
 * restarts, and client processes, through faults; then the history checker. `npm run torture`
 * runs it longer. These take about a minute and a half in all, mostly waiting out leases.
 */

const kept: TortureResult[] = [];
const report = (r: TortureResult): string =>
  `${r.store} seed ${r.seed}: ${r.operations} operations, faults ${JSON.stringify(r.faults)}; ${r.results.flatMap((c) => c.violations.map((v) => `${c.check}: ${v}`)).slice(0, 10).join('\n') || 'no violations'} (work dir ${r.workDir})`;

afterAll(() => {
  // A run that found violations keeps its histories and logs for the failure's reader.
  for (const r of kept) if (r.violations === 0) removeWorkDir(r.workDir);
});

describe('torture: real processes through faults', () => {
  it('on PostgreSQL, two servers lose nothing acknowledged through restarts of the database, cut connections, killed and paused servers and clients, and a 4 s outage of the database answered 503', async () => {
    const result = await runTorture({
      seed: 'ci-pg',
      seconds: 25,
      store: 'pg',
      faults: ['pg-restart-immediate', 'server-kill', 'client-kill', 'pg-cut', 'pg-restart-fast', 'server-pause', 'client-pause'],
      cycleFaults: true,
      outageSeconds: 4,
    });
    kept.push(result);
    expect(result.violations, report(result)).toBe(0);
    expect(result.operations).toBeGreaterThan(200);
    // The outage phase: clients saw 503 UNAVAILABLE with Retry-After (the outage check holds the rest).
    expect(result.unavailable, report(result)).toBeGreaterThan(0);
    for (const kind of ['pg-restart-immediate', 'server-kill', 'client-kill', 'pg-cut'] as const) expect(result.faults[kind], report(result)).toBeGreaterThanOrEqual(1);
  }, 180_000);

  it('on PGlite, a SIGKILLed server restarts on its data directory with everything acknowledged', async () => {
    const result = await runTorture({ seed: 'ci-pglite', seconds: 15, store: 'pglite', faults: ['server-kill', 'client-kill'], cycleFaults: true, atLeast: { 'server-kill': 2 } });
    kept.push(result);
    expect(result.violations, report(result)).toBe(0);
    expect(result.faults['server-kill'], report(result)).toBeGreaterThanOrEqual(2);
  }, 180_000);

  it('catches a planted lease bug: servers that ignore a lease has ended accept a worker who overran it', async () => {
    const result = await runTorture({ seed: 'ci-planted', seconds: 30, store: 'pg', plant: 'lease-expiry-ignored', faults: ['pg-cut'], outageSeconds: 0 });
    kept.push(result);
    const leases = result.results.find((c) => c.check === 'no delivery held by two live leases')!;
    expect(leases.violations.length, report(result)).toBeGreaterThan(0);
    expect(leases.violations[0]).toMatch(/complete by raw-worker\d\.\d+ was accepted, sent at .* after its lease ended/);
    removeWorkDir(result.workDir);
  }, 180_000);

  it('catches a planted durability bug: servers that reply before they commit lose acknowledged work when killed', async () => {
    const result = await runTorture({ seed: 'ci-ack', seconds: 15, store: 'pg', plant: 'ack-before-commit', faults: ['server-kill'], outageSeconds: 0 });
    kept.push(result);
    const lost = result.results.flatMap((c) => c.violations).filter((v) => /was acknowledged .*but is not in the (store|journal)/.test(v));
    expect(lost.length, report(result)).toBeGreaterThan(0);
    removeWorkDir(result.workDir);
  }, 180_000);
});
