import { parseArgs } from 'node:util';
import { simulate } from '../simulation';

/**
 * One mutant's trial (run by sim/src/mutants/cli.ts inside the sandbox that holds the mutant):
 * seeds one after another until one fails. Exit 1 on the first failing seed, printing its first
 * violation; 0 when every seed passes. A mutant's crash ends the process with another code.
 */
async function probe(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { seeds: { type: 'string' }, from: { type: 'string' }, agents: { type: 'string' } } });
  const from = Number(values.from ?? 1);
  const seeds = Number(values.seeds ?? 20);
  const agents = Number(values.agents ?? 20);
  for (let seed = from; seed < from + seeds; seed++) {
    const result = await simulate({ seed, agents, steps: 2_000, store: 'memory' });
    if (result.violations.length > 0) {
      process.stdout.write(`killed by seed ${seed}: ${result.violations[0]}\n`);
      return 1;
    }
  }
  process.stdout.write(`survived ${seeds} seeds\n`);
  return 0;
}

probe(process.argv.slice(2)).then((code) => process.exit(code), (error: unknown) => {
  process.stdout.write(`crashed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(3);
});
