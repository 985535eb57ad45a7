import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { isPlantableBug, plantableBugs, type PlantedBug } from './bugs/catalogue';
import { formatFaults, parseFaults } from './faults';
import { shrink } from './shrink';
import { simulate, type SimConfig, type SimResult, type StoreKind } from './simulation';
import { agentKinds, formatWeights, kindsOn, parseWeights, type AgentKind } from './swarm';

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
  --weights SPEC   fix the agent kinds' weights instead of drawing them from the seed, e.g. quota=0,tworker=2
                   (kinds: ${agentKinds.join(', ')}; 0 off, 0.5 light, 1 usual, 2 heavy)
  --failures-out F append each failing seed (its violations and the command that replays it) to file F;
                   F is created (empty) at the start, so a run with no failure leaves an empty file
  --store KIND     memory (default, deterministic), pglite or pg (differential: invariants only)
  --trace          print every step of the run
  --shrink         reduce a failing run to a smaller one that still fails
  --plant BUG      plant a known bug (to see the checkers catch it): ${plantableBugs.join(', ')}`;

interface Options {
  seeds: number[];
  agents: number;
  steps: number;
  faults: SimConfig['faults'];
  weights: SimConfig['weights'];
  failuresOut: string | undefined;
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
      weights: { type: 'string' },
      'failures-out': { type: 'string' },
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
  const plant = values.plant;
  if (plant !== undefined && !isPlantableBug(plant)) throw new UsageError(`--plant must be one of ${plantableBugs.join(', ')}`);
  const from = values.from === 'random' ? Math.floor(Date.now() / 1000) : int('from', values.from, 1);
  const seeds = values.seed !== undefined ? [int('seed', values.seed, 1)] : Array.from({ length: int('seeds', values.seeds, 20) }, (_, i) => from + i);
  return {
    seeds,
    agents: Math.max(1, int('agents', values.agents, 10)),
    steps: Math.max(1, int('steps', values.steps, 2_000)),
    faults: values.faults === undefined ? undefined : parseFaults(values.faults),
    weights: values.weights === undefined ? undefined : parseWeights(values.weights),
    failuresOut: values['failures-out'],
    store,
    trace: values.trace ?? false,
    shrink: values.shrink ?? false,
    plant,
  };
}

class UsageError extends Error {}

/** `explicitFaults`: print the run's faults (and weights) rather than let the seed draw them again. */
export function replayCommand(result: SimResult, plant: PlantedBug | undefined, explicitFaults: boolean, explicitWeights = explicitFaults): string {
  const c = result.config;
  const parts = [`npm run sim -- --seed ${c.seed} --agents ${c.agents} --steps ${c.steps}`];
  if (c.store !== 'memory') parts.push(`--store ${c.store}`);
  if (explicitFaults) parts.push(`--faults ${formatFaults(c.faults)}`);
  if (explicitWeights) parts.push(`--weights ${formatWeights(c.weights)}`);
  if (plant) parts.push(`--plant ${plant}`);
  return parts.join(' ');
}

export async function main(argv: string[]): Promise<number> {
  let options: Options;
  try {
    options = parse(argv);
  } catch (error) {
    if (!(error instanceof UsageError) && !(error instanceof TypeError) && !(error instanceof Error && (error.message.startsWith('--faults') || error.message.startsWith('--weights')))) throw error;
    process.stderr.write(`${error.message ? `sim: ${error.message}\n\n` : ''}${usage}\n`);
    return 2;
  }
  let failures = 0;
  let requests = 0;
  let wallMs = 0;
  let cpuMs = 0;
  /** Runs each agent kind was on in: with drawn weights, every kind must be in some. */
  const runsWith = new Map<AgentKind, number>(agentKinds.map((k) => [k, 0]));
  const first = options.seeds[0]!;
  if (options.failuresOut) {
    mkdirSync(dirname(options.failuresOut), { recursive: true });
    writeFileSync(options.failuresOut, '');
  }
  process.stdout.write(`sim: ${options.seeds.length} seed(s) from ${first}, ${options.agents} agents, ${options.steps} steps, store ${options.store}${options.plant ? `, planted bug ${options.plant}` : ''}\n`);
  for (const seed of options.seeds) {
    const cpuBefore = process.cpuUsage();
    const result = await simulate({ seed, agents: options.agents, steps: options.steps, faults: options.faults, weights: options.weights, store: options.store, trace: options.trace, plant: options.plant });
    const cpu = process.cpuUsage(cpuBefore);
    cpuMs += (cpu.user + cpu.system) / 1000;
    requests += result.requests;
    wallMs += result.wallMs;
    for (const kind of kindsOn(result.config.weights)) runsWith.set(kind, runsWith.get(kind)! + 1);
    if (options.seeds.length === 1 || options.trace) process.stdout.write(`seed ${seed}: ${result.violations.length === 0 ? 'ok' : 'FAILED'}, trace ${result.traceHash}, ${result.requests} requests, ${result.steps} steps, ${(result.simulatedMs / 1000).toFixed(0)} s simulated, faults ${formatFaults(result.config.faults)}\n`);
    if (options.seeds.length === 1) process.stdout.write(`  weights ${formatWeights(result.config.weights)}\n  task groups: ${JSON.stringify(result.groups)}\n`);
    if (result.violations.length === 0) continue;
    failures++;
    report(result, options);
    let shrunk: SimResult | undefined;
    if (options.shrink) {
      process.stdout.write('  shrinking...\n');
      shrunk = await shrink(result, 80, (r) => process.stdout.write(`  still fails with ${r.config.agents} agents, ${r.config.steps} steps, faults ${formatFaults(r.config.faults)}, weights ${formatWeights(r.config.weights)}\n`));
      process.stdout.write(`  minimal failing run: ${shrunk.violations[0]}\n  replay: ${replayCommand(shrunk, options.plant, true)}\n`);
    }
    if (options.failuresOut) appendFileSync(options.failuresOut, failureRecord(result, options, shrunk));
  }
  const rate = requests / (wallMs / 1000);
  const cpuRate = requests / (cpuMs / 1000);
  process.stdout.write(`sim: ${options.seeds.length - failures} of ${options.seeds.length} seeds passed; ${requests} simulated requests in ${(wallMs / 1000).toFixed(1)} s (${rate.toFixed(0)} requests/s; ${cpuRate.toFixed(0)} per CPU second)\n`);
  if (options.seeds.length > 1) process.stdout.write(`sim: runs with each agent kind: ${agentKinds.map((k) => `${k} ${runsWith.get(k)}`).join(', ')}\n`);
  // Over a large set (the nightly's slice) every kind must have run: else the swarm left a kind untested.
  const missing = agentKinds.filter((k) => runsWith.get(k) === 0);
  if (options.weights === undefined && options.seeds.length >= 100 && missing.length > 0) {
    process.stdout.write(`sim: FAILED: no run had agent kind ${missing.join(', ')}\n`);
    return 1;
  }
  return failures === 0 ? 0 : 1;
}

/** What --failures-out keeps of a failing seed: its violations and the commands that replay it. */
function failureRecord(result: SimResult, options: Options, shrunk: SimResult | undefined): string {
  const replay = replayCommand(result, options.plant, options.faults !== undefined, options.weights !== undefined);
  const lines = [`FAILED seed ${result.config.seed} (trace ${result.traceHash}):`, ...result.violations.slice(0, 10).map((v) => `  - ${v}`), `  replay: ${replay}`, `  step by step: ${replay} --trace`];
  if (shrunk) lines.push(`  minimal failing run: ${shrunk.violations[0]}`, `  minimal replay: ${replayCommand(shrunk, options.plant, true)}`);
  return `${lines.join('\n')}\n\n`;
}

function report(result: SimResult, options: Options): void {
  process.stdout.write(`FAILED seed ${result.config.seed} (trace ${result.traceHash}):\n`);
  for (const v of result.violations.slice(0, 10)) process.stdout.write(`  - ${v}\n`);
  const replay = replayCommand(result, options.plant, options.faults !== undefined, options.weights !== undefined);
  process.stdout.write(`  replay: ${replay}\n`);
  process.stdout.write(`  step by step: ${replay} --trace\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (error: unknown) => {
    process.stderr.write(`sim: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}
