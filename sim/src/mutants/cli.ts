import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { mutantsOf, planted, spreadSample, type MutationReport, type Mutant } from './mutants';
import { Sandbox } from './sandbox';
import { summarize, type Outcome, type Trial } from './summary';

/**
 * `npm run sim:mutants -- [options]`: the simulator's own kill rate. Takes mutants from a
 * StrykerJS JSON report (by default the rules files', `npm run mutate:rules`), plants each one
 * in a sandbox copy of the sources and runs the simulator's seeds on it (sim/src/mutants/probe.ts);
 * a mutant is killed when a seed fails. Trials are kept in --out and a later run goes on from
 * there (the same mutant on the same source is not tried twice).
 */
const usage = `usage: npm run sim:mutants -- [options]
  --report F       Stryker's JSON report (default reports/mutation/rules.json)
  --out F          trials kept between runs (default reports/sim-mutants.json)
  --status S       only mutants the tests gave this status (default Killed: each is a real change of behaviour; all: every one)
  --files LIST     only files whose path contains one of these comma-separated words
  --sample N       at most N mutants per file, spread evenly over it
  --seeds N        seeds per mutant (default 20), --agents A agents (default 20)
  --minutes M      start no new trial after M minutes (default: no limit)`;

const root = resolve(dirname(new URL(import.meta.url).pathname), '../../..');

interface Kept {
  seeds: number;
  agents: number;
  trials: Record<string, Trial>;
}

function main(argv: string[]): number {
  const { values } = parseArgs({
    args: argv,
    options: {
      report: { type: 'string' }, out: { type: 'string' }, status: { type: 'string' }, files: { type: 'string' },
      sample: { type: 'string' }, seeds: { type: 'string' }, agents: { type: 'string' }, minutes: { type: 'string' }, help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const reportPath = resolve(root, values.report ?? 'reports/mutation/rules.json');
  const outPath = resolve(root, values.out ?? 'reports/sim-mutants.json');
  const seeds = Number(values.seeds ?? 20);
  const agents = Number(values.agents ?? 20);
  const deadline = values.minutes === undefined ? Infinity : Date.now() + Number(values.minutes) * 60_000;
  if (!existsSync(reportPath)) {
    process.stderr.write(`sim:mutants: no report at ${reportPath}: run npm run mutate:rules first\n`);
    return 2;
  }
  let mutants = mutantsOf(JSON.parse(readFileSync(reportPath, 'utf8')) as MutationReport);
  const status = values.status ?? 'Killed';
  if (status !== 'all') mutants = mutants.filter((m) => m.testStatus === status);
  const words = values.files?.split(',');
  if (words) mutants = mutants.filter((m) => words.some((w) => m.file.includes(w)));
  if (values.sample !== undefined) mutants = spreadSample(mutants, Number(values.sample));

  const kept: Kept = existsSync(outPath) ? JSON.parse(readFileSync(outPath, 'utf8')) as Kept : { seeds, agents, trials: {} };
  if (kept.seeds !== seeds || kept.agents !== agents) kept.trials = {};
  Object.assign(kept, { seeds, agents });
  const save = (): void => {
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, `${JSON.stringify(kept, null, 1)}\n`);
  };

  const sandbox = Sandbox.build(root, join(root, '.stryker-tmp', 'sim-sandbox'));
  const tsx = createRequire(join(root, 'package.json')).resolve('tsx/cli');
  const run = (timeoutMs: number): { outcome: Outcome; detail: string; ms: number } => {
    const started = Date.now();
    const child = spawnSync(process.execPath, [tsx, '--conditions=@baton/source', 'sim/src/mutants/probe.ts', '--seeds', String(seeds), '--agents', String(agents)], { cwd: sandbox.dir, encoding: 'utf8', timeout: timeoutMs });
    const ms = Date.now() - started;
    const detail = (child.stdout ?? '').trim().split('\n').pop() ?? '';
    if (child.error || child.signal) return { outcome: 'timeout', detail: `no verdict within ${timeoutMs} ms`, ms };
    if (child.status === 0) return { outcome: 'survived', detail, ms };
    if (child.status === 1) return { outcome: 'killed', detail, ms };
    return { outcome: 'crashed', detail: detail || (child.stderr ?? '').trim().split('\n')[0] || `exit ${child.status}`, ms };
  };

  // The unmutated sources must pass every seed, or every "kill" would be the simulator's own failure.
  process.stdout.write(`sim:mutants: ${mutants.length} mutant(s), ${seeds} seeds and ${agents} agents each; first the unmutated sources\n`);
  const baseline = run(30 * 60_000);
  if (baseline.outcome !== 'survived') {
    process.stderr.write(`sim:mutants: the unmutated sources fail: ${baseline.detail}\n`);
    return 1;
  }
  const timeoutMs = 3 * baseline.ms + 30_000;
  process.stdout.write(`sim:mutants: unmutated: ${baseline.ms} ms; a trial longer than ${timeoutMs} ms counts as a timeout\n`);

  for (const [i, mutant] of mutants.entries()) {
    if (kept.trials[mutant.key]) continue;
    if (Date.now() > deadline) {
      process.stdout.write('sim:mutants: out of time; run again to go on\n');
      break;
    }
    const restore = sandbox.plant(mutant.file, planted(sandbox.source(mutant.file), mutant));
    try {
      const trial = run(timeoutMs);
      kept.trials[mutant.key] = { ...identify(mutant), ...trial };
      process.stdout.write(`[${i + 1}/${mutants.length}] ${trial.outcome.padEnd(8)} ${mutant.file}:${mutant.line} ${mutant.mutator} ${oneLine(mutant.original)} -> ${oneLine(mutant.replacement)}  ${trial.detail.slice(0, 160)}\n`);
    } finally {
      restore();
    }
    save();
  }
  save();
  const chosen = new Set(mutants.map((m) => m.key));
  process.stdout.write(summarize(Object.values(kept.trials).filter((t) => chosen.has(t.key))));
  return 0;
}

function identify(m: Mutant): Omit<Trial, 'outcome' | 'detail' | 'ms'> {
  return { key: m.key, file: m.file, line: m.line, mutator: m.mutator, original: m.original, replacement: m.replacement, testStatus: m.testStatus };
}

const oneLine = (text: string): string => text.replace(/\s+/g, ' ').slice(0, 60);

process.exit(main(process.argv.slice(2)));
