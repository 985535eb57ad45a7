import { createHash, type Hash } from 'node:crypto';

/**
 * Everything observable in a run, one line per event, hashed as it goes. Two runs of one seed
 * must give one hash; lines are kept only when asked for (--trace), to spare memory.
 */
export class Trace {
  private readonly hash: Hash = createHash('sha256');
  readonly lines: string[] = [];
  count = 0;

  constructor(private readonly keep: boolean, private readonly print: boolean) {}

  add(atMs: number, line: string): void {
    const entry = `${atMs} ${line}`;
    this.hash.update(entry).update('\n');
    this.count++;
    if (this.keep) this.lines.push(entry);
    if (this.print) process.stdout.write(`  ${entry}\n`);
  }

  digest(): string {
    return this.hash.copy().digest('hex').slice(0, 16);
  }
}
