/**
 * `npm run bench -- budgets`: reserve-then-settle pairs against one budget, the hot path of
 * every worker that spends money. All clients hit the same budget row on purpose: that row is
 * the contention point a busy space has, so the figure is a floor, not a best case.
 */
import { randomUUID } from 'node:crypto';
import { BenchFailure, fmt, forEachStore, runLoad, type Benchmark, type BenchOptions, type LoadFunction, type LoadResult, type StoreKind } from './harness';

/** Minor units per reservation; each pair settles exactly this, so the reservation ends SETTLED. */
const amount = 100n;
/** 18 digits, the largest limit allowed: no run can come near spending it. */
const limitMinor = '999999999999999999';

interface Setup {
  runId: string;
  budgetId: string;
  /** One run (scope) per client, as separate workers would have. */
  scopes: string[];
}

/** One client iteration; runs in the load worker. Every reply is checked, not just its status. */
export const budgetsLoad: LoadFunction<Setup> = (call, { runId, budgetId, scopes }) => async (client, n, timed) => {
  const reservation = await timed('reserve', () =>
    call('POST', `/budgets/${budgetId}/reserve`, 201, { scopeId: scopes[client], holder: `bench-${client}`, amountMinor: String(amount) }, { 'idempotency-key': `${runId}-${client}-${n}` }),
  );
  if (reservation.state !== 'ACTIVE' || reservation.amountMinor !== String(amount)) throw new BenchFailure(`reserve: unexpected reply ${JSON.stringify(reservation)}`);
  // Settle takes no Idempotency-Key: it is idempotent per workKey, which must be unique per pair.
  const settled = await timed('settle', () =>
    call('POST', `/budgets/${budgetId}/settle`, 200, { reservationId: reservation.id, amountMinor: String(amount), workKey: `${runId}-${client}-${n}` }),
  );
  if (settled.replay !== false || settled.reservation?.state !== 'SETTLED') throw new BenchFailure(`settle: unexpected reply ${JSON.stringify(settled).slice(0, 300)}`);
};

interface StoreResult {
  load: LoadResult;
  pairsPerSecond: number;
  requestsPerSecond: number;
}

async function run(options: BenchOptions): Promise<void> {
  const runId = `bench-${randomUUID().slice(0, 8)}`;
  console.log(`budgets: ${options.clients} clients, ${options.warmupSeconds} s warm-up, ${options.seconds} s measured, run ${runId}`);

  const results = await forEachStore(options, async (target, kind): Promise<StoreResult> => {
    const budget = await target.call('POST', '/budgets', 201, { name: runId, currency: 'USD', scale: 2, limitMinor }, { 'idempotency-key': `${runId}-create` });
    const setup: Setup = { runId, budgetId: budget.id, scopes: Array.from({ length: options.clients }, () => randomUUID()) };
    const load = await runLoad(options, target, { moduleUrl: import.meta.url, exportName: 'budgetsLoad', setup });

    const pairsPerSecond = load.measuredIterations / load.measuredSeconds;
    const requestsPerSecond = (load.latencies.count('reserve') + load.latencies.count('settle')) / load.measuredSeconds;
    console.log(`  pairs/s      ${fmt(pairsPerSecond)}  (${load.measuredIterations} pairs in ${fmt(load.measuredSeconds, 2)} s; ${load.completedIterations} pairs in all)`);
    console.log(`  requests/s   ${fmt(requestsPerSecond)}`);
    for (const label of ['reserve', 'settle']) {
      const p = (q: number) => fmt(load.latencies.percentile(label, q), 2);
      console.log(`  ${label.padEnd(8)}     p50 ${p(50)} ms  p95 ${p(95)} ms  p99 ${p(99)} ms  (${load.latencies.count(label)} requests)`);
    }
    console.log(`  errors       ${load.errors}`);
    for (const message of load.firstErrors) console.log(`    ${message}`);

    // Conservation, read back over HTTP after the load: nothing lost, nothing counted twice.
    const view = await target.call('GET', `/budgets/${budget.id}`, 200);
    const [limit, available, reserved, spent] = [view.limitMinor, view.availableMinor, view.reservedMinor, view.settledMinor].map(BigInt) as [bigint, bigint, bigint, bigint];
    const expectedSettled = BigInt(load.completedIterations) * amount;
    const balanced = limit === available + reserved + spent;
    const exact = spent === expectedSettled && reserved === 0n;
    console.log(
      `  conservation ${balanced && exact ? 'ok' : 'FAILED'}: limit ${limit} = available ${available} + reserved ${reserved} + settled ${spent}; ` +
        `settled ${spent} ${spent === expectedSettled ? '=' : '!='} ${load.completedIterations} pairs x ${amount}`,
    );
    if (load.errors > 0) throw new BenchFailure(`${kind}: ${load.errors} request(s) failed`);
    if (!balanced || !exact) throw new BenchFailure(`${kind}: budget does not balance`);
    return { load, pairsPerSecond, requestsPerSecond };
  });

  printSummary(results);
}

/** One Markdown table for docs/benchmarks.md, so recorded figures are pasted, not retyped. */
function printSummary(results: Array<{ kind: StoreKind; result: StoreResult }>): void {
  if (results.length === 0) return;
  console.log('\n| store | pairs/s | requests/s | reserve p50 / p95 / p99 ms | settle p50 / p95 / p99 ms | errors |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const { kind, result } of results) {
    const l = result.load.latencies;
    const ps = (label: string) => [50, 95, 99].map((q) => fmt(l.percentile(label, q), 2)).join(' / ');
    console.log(`| ${kind} | ${fmt(result.pairsPerSecond)} | ${fmt(result.requestsPerSecond)} | ${ps('reserve')} | ${ps('settle')} | ${result.load.errors} |`);
  }
}

export const budgetsBenchmark: Benchmark = {
  description: 'reserve then settle pairs on one budget over HTTP (PGlite and PostgreSQL)',
  run,
};
