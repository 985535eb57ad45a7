import { execFileSync, spawn } from 'node:child_process';
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
  --status S       only mutants the tests gave one of these comma-separated statuses (default Killed: each
                   is a real change of behaviour; NoCoverage adds those no test reaches; all: every one)
  --without LIST   leave out these comma-separated mutators (e.g. StringLiteral: no checker reads a message)
  --files LIST     only files whose path contains one of these comma-separated words
  --sample N       at most N mutants per file, spread evenly over it
  --seeds N        seeds per mutant (default 20), --agents A agents (default 20)
  --jobs J         trials side by side, each in a sandbox of its own (default 1)
  --minutes M      start no new trial after M minutes (default: no limit)
  --summary        only print the summary of the trials kept in --out for the chosen mutants`;

const root = resolve(dirname(new URL(import.meta.url).pathname), '../../..');

interface Kept {
  seeds: number;
  agents: number;
  /** The unmutated sources' trial, for the packages' trees it ran on (git tree hashes). */
  baseline?: { trees: string; ms: number };
  trials: Record<string, Trial>;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      report: { type: 'string' }, out: { type: 'string' }, status: { type: 'string' }, files: { type: 'string' }, without: { type: 'string' },
      sample: { type: 'string' }, jobs: { type: 'string' }, seeds: { type: 'string' }, agents: { type: 'string' }, minutes: { type: 'string' }, summary: { type: 'boolean' }, help: { type: 'boolean' },
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
  if (status !== 'all') mutants = mutants.filter((m) => status.split(',').includes(m.testStatus));
  const without = values.without?.split(',') ?? [];
  mutants = mutants.filter((m) => !without.includes(m.mutator));
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

  const chosen = new Set(mutants.map((m) => m.key));
  const assertion = new Map(mutants.map((m) => [m.key, m.assertion]));
  const summary = (): string => summarize(Object.values(kept.trials).filter((t) => chosen.has(t.key)).map((t) => ({ ...t, assertion: assertion.get(t.key) ?? false })));
  if (values.summary) {
    process.stdout.write(summary());
    return 0;
  }

  const jobs = Math.max(1, Number(values.jobs ?? 1));
  const sandboxes = Array.from({ length: jobs }, (_, i) => Sandbox.build(root, join(root, '.tmp', `sim-mutants-sandbox-${i}`)));
  const tsx = createRequire(join(root, 'package.json')).resolve('tsx/cli');
  const probeArgs = [tsx, '--conditions=@baton/source', 'sim/src/mutants/probe.ts', '--seeds', String(seeds), '--agents', String(agents)];

  // The unmutated sources must pass every seed, or every "kill" would be the simulator's own failure.
  process.stdout.write(`sim:mutants: ${mutants.length} mutant(s), ${seeds} seeds and ${agents} agents each, ${jobs} at a time; first the unmutated sources\n`);
  const trees = execFileSync('git', ['rev-parse', 'HEAD:core', 'HEAD:server', 'HEAD:runtime', 'HEAD:sim'], { cwd: root, encoding: 'utf8' }).trim().replace(/\n/g, ' ');
  if (kept.baseline?.trees !== trees) {
    const baseline = await trial(sandboxes[0]!.dir, probeArgs, 60 * 60_000);
    if (baseline.outcome !== 'survived') {
      process.stderr.write(`sim:mutants: the unmutated sources fail: ${baseline.detail}\n`);
      return 1;
    }
    kept.baseline = { trees, ms: baseline.ms };
    save();
  }
  const baseline = kept.baseline;
  const timeoutMs = 3 * baseline.ms + 60_000;
  process.stdout.write(`sim:mutants: unmutated: ${baseline.ms} ms; a trial longer than ${timeoutMs} ms counts as a timeout\n`);

  const waiting = mutants.filter((m) => !kept.trials[m.key]);
  let done = mutants.length - waiting.length;
  const worker = async (sandbox: Sandbox): Promise<void> => {
    for (let mutant = waiting.shift(); mutant; mutant = waiting.shift()) {
      if (Date.now() > deadline) {
        waiting.length = 0;
        process.stdout.write('sim:mutants: out of time; run again to go on\n');
        return;
      }
      const restore = sandbox.plant(mutant.file, planted(sandbox.source(mutant.file), mutant));
      try {
        const result = await trial(sandbox.dir, probeArgs, timeoutMs);
        kept.trials[mutant.key] = { ...identify(mutant), ...result };
        process.stdout.write(`[${++done}/${mutants.length}] ${result.outcome.padEnd(8)} ${mutant.file}:${mutant.line} ${mutant.mutator} ${oneLine(mutant.original)} -> ${oneLine(mutant.replacement)}  ${result.detail.slice(0, 160)}\n`);
      } finally {
        restore();
      }
      save();
    }
  };
  await Promise.all(sandboxes.map(worker));
  save();
  process.stdout.write(summary());
  return 0;
}

function identify(m: Mutant): Omit<Trial, 'outcome' | 'detail' | 'ms'> {
  return { key: m.key, file: m.file, line: m.line, mutator: m.mutator, original: m.original, replacement: m.replacement, testStatus: m.testStatus, assertion: m.assertion };
}

const oneLine = (text: string): string => text.replace(/\s+/g, ' ').slice(0, 60);

/** Runs the probe in `dir`; its verdict is the line it ends with (killed by seed..., survived..., crashed...). */
function trial(dir: string, args: string[], timeoutMs: number): Promise<{ outcome: Outcome; detail: string; ms: number }> {
  const started = Date.now();
  return new Promise((done) => {
    const child = spawn(process.execPath, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-4_000); });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const ms = Date.now() - started;
      const verdict = stdout.split('\n').filter((line) => /^(killed by seed|survived|crashed)/.test(line)).pop() ?? '';
      if (signal) done({ outcome: 'timeout', detail: `no verdict within ${timeoutMs} ms`, ms });
      else if (code === 0) done({ outcome: 'survived', detail: verdict, ms });
      else if (code === 1) done({ outcome: 'killed', detail: verdict, ms });
      else done({ outcome: 'crashed', detail: verdict || stderr.trim().split('\n').pop() || `exit ${code}`, ms });
    });
  });
}

main(process.argv.slice(2)).then((code) => process.exit(code), (error: unknown) => {
  process.stderr.write(`sim:mutants: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
