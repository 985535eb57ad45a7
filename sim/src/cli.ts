import { parseArgs } from 'node:util';
import { plantableBugs, plantedBugs, type PlantedBug } from '@baton/core';
import { formatFaults, parseFaults } from './faults';
import { shrink } from './shrink';
import { simulate, type SimConfig, type SimResult, type StoreKind } from './simulation';

/**
 * `npm run sim -- [options]`: runs seeds, prints each failure with the one-line command that
 * replays it, and a summary with the simulated request rate. Exit code 1 when any seed fails.
 */
const usage = `usage: npm run sim -- [options]
  --seeds N        run N seeds (default 20), starting at --from (default 1)
  --from S         first seed; --from random picks one from the wall clock (nightly runs)
  --seed S         run exactly one seed
  --agents A       spending agents per run (default 10)
  --steps N        scheduler steps in the safety phase (default 2000)
  --faults SPEC    fix the faults instead of drawing them from the seed, e.g. dropReply=0.1,crash=0
  --store KIND     memory (default, deterministic), pglite or pg (differential: invariants only)
  --trace          print every step of the run
  --shrink         reduce a failing run to a smaller one that still fails
  --plant BUG      plant a known bug (to see the checkers catch it): ${plantableBugs.join(', ')}`;

interface Options {
  seeds: number[];
  agents: number;
  steps: number;
  faults: SimConfig['faults'];
  store: StoreKind;
  trace: boolean;
  shrink: boolean;
  plant: PlantedBug | undefined;
}

function parse(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      seeds: { type: 'string' },
      from: { type: 'string' },
      seed: { type: 'string' },
      agents: { type: 'string' },
      steps: { type: 'string' },
      faults: { type: 'string' },
      store: { type: 'string' },
      trace: { type: 'boolean' },
      shrink: { type: 'boolean' },
      plant: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) throw new UsageError('');
  const int = (name: string, text: string | undefined, fallback: number): number => {
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!Number.isSafeInteger(n) || n < 0) throw new UsageError(`--${name} must be a whole number, got ${text}`);
    return n;
  };
  const store = (values.store ?? 'memory') as StoreKind;
  if (!['memory', 'pglite', 'pg'].includes(store)) throw new UsageError(`--store must be memory, pglite or pg, got ${store}`);
  const plant = values.plant as PlantedBug | undefined;
  if (plant !== undefined && !plantableBugs.includes(plant)) throw new UsageError(`--plant must be one of ${plantableBugs.join(', ')}`);
  const from = values.from === 'random' ? Math.floor(Date.now() / 1000) : int('from', values.from, 1);
  const seeds = values.seed !== undefined ? [int('seed', values.seed, 1)] : Array.from({ length: int('seeds', values.seeds, 20) }, (_, i) => from + i);
  return {
    seeds,
    agents: Math.max(1, int('agents', values.agents, 10)),
    steps: Math.max(1, int('steps', values.steps, 2_000)),
    faults: values.faults === undefined ? undefined : parseFaults(values.faults),
    store,
    trace: values.trace ?? false,
    shrink: values.shrink ?? false,
    plant,
  };
}

class UsageError extends Error {}

export function replayCommand(result: SimResult, plant: PlantedBug | undefined, explicitFaults: boolean): string {
  const c = result.config;
  const parts = [`npm run sim -- --seed ${c.seed} --agents ${c.agents} --steps ${c.steps}`];
  if (c.store !== 'memory') parts.push(`--store ${c.store}`);
  if (explicitFaults) parts.push(`--faults ${formatFaults(c.faults)}`);
  if (plant) parts.push(`--plant ${plant}`);
  return parts.join(' ');
}

export async function main(argv: string[]): Promise<number> {
  let options: Options;
  try {
    options = parse(argv);
  } catch (error) {
    if (!(error instanceof UsageError) && !(error instanceof TypeError) && !(error instanceof Error && error.message.startsWith('--faults'))) throw error;
    process.stderr.write(`${error.message ? `sim: ${error.message}\n\n` : ''}${usage}\n`);
    return 2;
  }
  if (options.plant) plantedBugs.add(options.plant);
  let failures = 0;
  let requests = 0;
  let wallMs = 0;
  const first = options.seeds[0]!;
  process.stdout.write(`sim: ${options.seeds.length} seed(s) from ${first}, ${options.agents} agents, ${options.steps} steps, store ${options.store}${options.plant ? `, planted bug ${options.plant}` : ''}\n`);
  for (const seed of options.seeds) {
    const result = await simulate({ seed, agents: options.agents, steps: options.steps, faults: options.faults, store: options.store, trace: options.trace });
    requests += result.requests;
    wallMs += result.wallMs;
    if (options.seeds.length === 1 || options.trace) process.stdout.write(`seed ${seed}: ${result.violations.length === 0 ? 'ok' : 'FAILED'}, trace ${result.traceHash}, ${result.requests} requests, ${result.steps} steps, ${(result.simulatedMs / 1000).toFixed(0)} s simulated, faults ${formatFaults(result.config.faults)}\n`);
    if (options.seeds.length === 1) process.stdout.write(`  task groups: ${JSON.stringify(result.groups)}\n`);
    if (result.violations.length === 0) continue;
    failures++;
    report(result, options);
    if (options.shrink) {
      process.stdout.write('  shrinking...\n');
      const small = await shrink(result, 80, (r) => process.stdout.write(`  still fails with ${r.config.agents} agents, ${r.config.steps} steps, faults ${formatFaults(r.config.faults)}\n`));
      process.stdout.write(`  minimal failing run: ${small.violations[0]}\n  replay: ${replayCommand(small, options.plant, true)}\n`);
    }
  }
  const rate = requests / (wallMs / 1000);
  process.stdout.write(`sim: ${options.seeds.length - failures} of ${options.seeds.length} seeds passed; ${requests} simulated requests in ${(wallMs / 1000).toFixed(1)} s (${rate.toFixed(0)} requests/s)\n`);
  return failures === 0 ? 0 : 1;
}

function report(result: SimResult, options: Options): void {
  process.stdout.write(`FAILED seed ${result.config.seed} (trace ${result.traceHash}):\n`);
  for (const v of result.violations.slice(0, 10)) process.stdout.write(`  - ${v}\n`);
  process.stdout.write(`  replay: ${replayCommand(result, options.plant, options.faults !== undefined)}\n`);
  process.stdout.write(`  step by step: ${replayCommand(result, options.plant, options.faults !== undefined)} --trace\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (error: unknown) => {
    process.stderr.write(`sim: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}
