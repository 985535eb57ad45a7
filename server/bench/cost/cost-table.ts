/** Prints the runs' costs, their costliest statements, and the ratios to the issue-28 targets, as Markdown tables. */
import { fmt } from '../harness';
import { cpuSum, cpuTotalMs, othersMs } from './cpu-parts';
import type { CostRow } from './runs';

const perJob = (n: number, row: CostRow, digits = 2): string => fmt(n / row.jobs, digits);

export function printCostTable(rows: CostRow[]): void {
  console.log('\n| system, mode | jobs | enqueue jobs/s | drain rate | CPU ms/job: server | PostgreSQL | pooler | clients | total | (drain only) | statements/job | nested/job | rows written/job | WAL bytes/job | rest of machine, cores |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    const cpu = cpuSum(r.enqueueCpu, r.drainCpu);
    const pg = r.pg;
    console.log(
      `| ${r.system} | ${r.jobs} | ${fmt(r.enqueuePerSecond, 0)} | ${fmt(r.perSecond, 0)} ${r.unit} | ${perJob(cpu.serverMs, r, 3)} | ${perJob(cpu.postgresMs, r, 3)} | ${perJob(cpu.poolerMs, r, 3)} | ${perJob(cpu.clientsMs, r, 3)} | ` +
        `**${perJob(cpuTotalMs(cpu), r, 3)}** | ${perJob(cpuTotalMs(r.drainCpu), r, 3)} | ${pg ? perJob(pg.statements, r, 2) : '-'} | ${pg ? perJob(pg.nestedStatements, r, 2) : '-'} | ` +
        `${pg ? perJob(pg.rowsWritten, r, 1) : '-'} | ${pg ? perJob(pg.walBytes, r, 0) : '-'} | ${fmt(othersMs(cpu) / 1000 / r.wallSeconds, 2)} |`,
    );
  }
}

const oneLine = (query: string, max: number): string => {
  const flat = query.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
};

export function printTopStatements(rows: CostRow[]): void {
  for (const r of rows) {
    if (!r.pg) continue;
    const all = r.pg.toplevelMs;
    console.log(`\n#### ${r.system}: top statements by total time (${r.jobs} jobs; ${fmt(r.pg.toplevelMs, 0)} ms in client-sent statements; WAL ${r.pg.walRecords} records, ${r.pg.walFullPages} full-page images)\n`);
    console.log('| total ms | share of all | calls | calls/job | mean ms | rows/call | level | statement |');
    console.log('| ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |');
    for (const s of r.pg.top) {
      console.log(
        `| ${fmt(s.totalMs, 0)} | ${fmt((100 * s.totalMs) / all, 0)} % | ${s.calls} | ${fmt(s.calls / r.jobs, 2)} | ${fmt(s.meanMs, 3)} | ${fmt(s.rows / Math.max(1, s.calls), 1)} | ${s.toplevel ? 'top' : 'nested'} | \`${oneLine(s.query, Number(process.env.BENCH_PEERS_QUERY_CHARS ?? 150))}\` |`,
      );
    }
  }
}

/**
 * What each PostgreSQL run wrote per job, by relation and WAL record type (wal-by-relation.ts):
 * the drain and the enqueue side by side, the `top` largest parts by the two together.
 */
export function printWalByRelation(rows: CostRow[], top: number): void {
  for (const r of rows) {
    if (!r.wal) continue;
    const parts = new Map<string, { relation: string; recordType: string; drain: [number, number]; enqueue: [number, number] }>();
    const add = (phase: 'drain' | 'enqueue') => (p: { relation: string; recordType: string; records: number; bytes: number }) => {
      const key = `${p.relation} ${p.recordType}`;
      const part = parts.get(key) ?? { relation: p.relation, recordType: p.recordType, drain: [0, 0], enqueue: [0, 0] };
      part[phase] = [part[phase][0] + p.records, part[phase][1] + p.bytes];
      parts.set(key, part);
    };
    r.wal.drain.forEach(add('drain'));
    r.wal.enqueue.forEach(add('enqueue'));
    const sum = (phase: 'drain' | 'enqueue', i: 0 | 1) => [...parts.values()].reduce((n, p) => n + p[phase][i], 0);
    console.log(`\n#### ${r.system}: WAL per job by relation and record type (${r.jobs} jobs; drain ${perJob(sum('drain', 0), r, 1)} records, ${perJob(sum('drain', 1), r, 0)} bytes; enqueue ${perJob(sum('enqueue', 0), r, 1)} records, ${perJob(sum('enqueue', 1), r, 0)} bytes)\n`);
    console.log('| relation | record | drain records/job | drain bytes/job | enqueue records/job | enqueue bytes/job |');
    console.log('| --- | --- | ---: | ---: | ---: | ---: |');
    const ranked = [...parts.values()].sort((a, b) => b.drain[1] + b.enqueue[1] - (a.drain[1] + a.enqueue[1]));
    for (const p of ranked.slice(0, top)) {
      console.log(`| ${p.relation} | ${p.recordType} | ${perJob(p.drain[0], r, 2)} | ${perJob(p.drain[1], r, 0)} | ${perJob(p.enqueue[0], r, 2)} | ${perJob(p.enqueue[1], r, 0)} |`);
    }
  }
}

export interface RatioLine {
  what: string;
  baton: CostRow | undefined;
  peer: CostRow | undefined;
  /** Upper bound of CPU per job (× the peer's), and lower bound of the rate (× the peer's); none for PGlite. */
  cpuAtMost?: number;
  rateAtLeast?: number;
}

export function printRatios(lines: RatioLine[]): void {
  console.log('\n| comparison | CPU ms/job, enqueue + drain (Baton / peer) | ratio | target | CPU ms/job, drain only (Baton / peer) | ratio | target | rate (Baton / peer) | ratio | target |');
  console.log('| --- | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | --- |');
  const verdict = (ratio: number, ok: boolean | undefined, bound: string): string => (ok === undefined ? 'none' : `${bound} ${ok ? 'met' : '**not met**'}`);
  for (const { what, baton, peer, cpuAtMost, rateAtLeast } of lines) {
    if (!baton || !peer) continue;
    const whole = (r: CostRow): number => cpuTotalMs(cpuSum(r.enqueueCpu, r.drainCpu)) / r.jobs;
    const drain = (r: CostRow): number => cpuTotalMs(r.drainCpu) / r.jobs;
    const cpuCells = (of: (r: CostRow) => number): string => {
      const ratio = of(baton) / of(peer);
      return `${fmt(of(baton), 3)} / ${fmt(of(peer), 3)} | ${fmt(ratio, 2)}× | ${verdict(ratio, cpuAtMost === undefined ? undefined : ratio <= cpuAtMost, `≤ ${cpuAtMost?.toFixed(1)}×`)}`;
    };
    const rateRatio = baton.perSecond / peer.perSecond;
    console.log(
      `| ${what} | ${cpuCells(whole)} | ${cpuCells(drain)} | ${fmt(baton.perSecond, 0)} / ${fmt(peer.perSecond, 0)} | ${fmt(rateRatio, 2)}× | ` +
        `${verdict(rateRatio, rateAtLeast === undefined ? undefined : rateRatio >= rateAtLeast, `≥ ${rateAtLeast?.toFixed(1)}×`)} |`,
    );
  }
}
