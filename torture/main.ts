import { isProcessBug, processBugs } from './bugs';
import { parseArgs } from 'node:util';
import { faultKinds, type FaultKind } from './faults';
import { removeWorkDir, runTorture, type TortureResult } from './run';

/**
 * `npm run torture`: real Baton servers, a real PostgreSQL (or PGlite on disk) and a fleet of
 * client processes through a seeded fault schedule; then the history checker. Prints one table
 * and exits 1 on any violation, keeping the run's histories and logs.
 */
const usage = `usage: npm run torture -- [--seed S] [--seconds N] [--store pg|pglite|both] [--plant BUG] [--faults k1,k2] [--outage-seconds N] [--keep]
  --seed            the fault schedule and every client's choices (default: random, printed)
  --seconds         how long faults are injected (default 60)
  --store           pg: two servers on a PostgreSQL of the run's own; pglite: one server on disk; both (default)
  --plant           run servers from source with a known bug: ${processBugs.join(', ')}
  --faults          only these kinds: ${faultKinds.join(', ')}
  --outage-seconds  on pg, after the faults: PostgreSQL down this long (default 5; 0 skips the phase)
  --keep            keep the run's directory even when it passes`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { seed: { type: 'string' }, seconds: { type: 'string' }, store: { type: 'string' }, plant: { type: 'string' }, faults: { type: 'string' }, 'outage-seconds': { type: 'string' }, keep: { type: 'boolean' }, help: { type: 'boolean' } },
  });
  if (values.help) return print(usage, 0);
  const seed = values.seed ?? String(Math.floor(Math.random() * 1e9));
  const seconds = Number(values.seconds ?? 60);
  const stores = values.store === undefined || values.store === 'both' ? (['pg', 'pglite'] as const) : [values.store];
  const plant = values.plant;
  const faults = values.faults?.split(',') as FaultKind[] | undefined;
  const outageSeconds = values['outage-seconds'] === undefined ? undefined : Number(values['outage-seconds']);
  if (!Number.isFinite(seconds) || seconds < 1) return print(`--seconds must be a positive number\n${usage}`, 2);
  if (outageSeconds !== undefined && !(outageSeconds >= 0)) return print(`--outage-seconds must be 0 or more\n${usage}`, 2);
  if (stores.some((s) => s !== 'pg' && s !== 'pglite')) return print(`--store must be pg, pglite or both\n${usage}`, 2);
  if (plant !== undefined && !isProcessBug(plant)) return print(`--plant must be one of ${processBugs.join(', ')}`, 2);
  if (faults?.some((f) => !faultKinds.includes(f))) return print(`--faults takes ${faultKinds.join(', ')}`, 2);
  const results: TortureResult[] = [];
  for (const store of stores as Array<'pg' | 'pglite'>) {
    results.push(await runTorture({ seed, seconds, store, plant, faults: faults?.filter((f) => store === 'pg' || !f.startsWith('pg')), outageSeconds, keep: values.keep, log: (line) => process.stdout.write(`${line}\n`) }));
  }
  process.stdout.write(table(results));
  for (const r of results) {
    for (const check of r.results) for (const v of check.violations.slice(0, 20)) process.stdout.write(`VIOLATION [${r.store}] ${check.check}: ${v}\n`);
    if (r.violations > 0 || values.keep) process.stdout.write(`[${r.store}] histories and logs kept in ${r.workDir}\n`);
    else removeWorkDir(r.workDir);
  }
  const failed = results.some((r) => r.violations > 0);
  if (failed) process.stdout.write(`replay: npm run torture -- --seed ${seed} --seconds ${seconds} --store ${values.store ?? 'both'}${plant ? ` --plant ${plant}` : ''}${faults ? ` --faults ${faults.join(',')}` : ''}${outageSeconds === undefined ? '' : ` --outage-seconds ${outageSeconds}`}\n`);
  return failed ? 1 : 0;
}

function table(results: TortureResult[]): string {
  const rows = results.map((r) => {
    const faults = Object.entries(r.faults).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
    return `| ${r.store} | ${r.seed} | ${r.operations} | ${r.calls} | ${faults} | ${r.unavailable} | ${r.violations} |`;
  });
  return ['', '| store | seed | operations | calls | faults injected | 503s in the outage | violations |', '| --- | --- | ---: | ---: | --- | ---: | ---: |', ...rows, ''].join('\n') + '\n';
}

function print(text: string, code: number): number {
  (code === 0 ? process.stdout : process.stderr).write(`${text}\n`);
  return code;
}

main().then((code) => process.exit(code), (error: unknown) => {
  process.stderr.write(`torture: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
