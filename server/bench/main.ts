/**
 * `npm run bench -- <name> [--seconds N] [--warmup N] [--clients N] [--store pglite|postgres|all]`.
 * A new benchmark is one module exporting a Benchmark and one line in the registry below.
 */
import { budgetsBenchmark } from './budgets';
import { claimSqlBenchmark } from './claim-sql';
import { growthBenchmark } from './growth';
import { BenchFailure, parseOptions, stopOnInterrupt, type Benchmark } from './harness';
import { peersBenchmark } from './peers';
import { tasksBenchmark } from './tasks';

const benchmarks: Record<string, Benchmark> = {
  budgets: budgetsBenchmark,
  'claim-sql': claimSqlBenchmark,
  growth: growthBenchmark,
  peers: peersBenchmark,
  tasks: tasksBenchmark,
};

function usage(): string {
  const names = Object.entries(benchmarks).map(([name, b]) => `  ${name.padEnd(10)} ${b.description}`);
  return ['usage: npm run bench -- <name> [--seconds N] [--warmup N] [--clients N] [--store pglite|postgres|all]', 'benchmarks:', ...names].join('\n');
}

async function main(): Promise<number> {
  const [name, ...args] = process.argv.slice(2);
  const benchmark = name === undefined ? undefined : benchmarks[name];
  if (!benchmark) {
    console.error(name === undefined ? usage() : `unknown benchmark "${name}"\n${usage()}`);
    return 2;
  }
  const options = parseOptions(args);
  stopOnInterrupt();
  await benchmark.run(options);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    // Loud on purpose: a benchmark with failed requests or a broken balance has no figures.
    console.error(`\nbench FAILED: ${error instanceof BenchFailure ? error.message : (error as Error).stack ?? String(error)}`);
    process.exit(1);
  },
);
