/**
 * Summarises where PostgreSQL's backends spent their CPU, from `perf script` output of a
 * `perf record -g` of those backends (docs/benchmarks.md, "Where PostgreSQL's CPU goes"):
 * each sample is put in the first stage its stack passes through, by PostgreSQL's own function
 * names, so the shares add up to 100 %. A second table counts samples whose stack passes through
 * each of a few functions worth naming (those overlap, and are not meant to add up).
 *
 *   perf script -i /tmp/perf-pg.data -F comm,ip,sym > /tmp/perf-pg.txt
 *   npx tsx server/bench/pg-perf-summary.ts /tmp/perf-pg.txt
 *
 * Debian's PostgreSQL binary keeps only its exported symbols, so a static function's frame shows
 * as an address; the stages are named by exported functions that stand above them.
 */
import { readFileSync } from 'node:fs';

/** The first stage whose function is on a sample's stack wins: a trigger runs inside ExecutorFinish, a flush inside the commit. */
const stages: [string, RegExp][] = [
  ['statement triggers (message_counts)', /^AfterTriggerEndQuery$/],
  ['commit: WAL flush (fdatasync)', /^XLogFlush$/],
  ['commit: the rest', /^CommitTransactionCommand$/],
  ['executor start (open relations and indexes, build the plan state)', /^standard_ExecutorStart$/],
  ['executor run (the main query and the CTEs it reads)', /^standard_ExecutorRun$/],
  ['executor finish (CTEs no one reads: the held writes)', /^standard_ExecutorFinish$/],
  ['executor end', /^standard_ExecutorEnd$/],
  ['plan cache check (GetCachedPlan)', /^GetCachedPlan$/],
  ['reading the socket (pq_getbyte)', /^pq_getbyte$/],
  ['writing the socket', /^(pq_flush|internal_flush|secure_write|__send)$/],
  ['utility statements (ANALYZE and the like)', /^standard_ProcessUtility$/],
];

/** Functions worth naming wherever they are on the stack. */
const through: [string, RegExp][] = [
  ['index entries written (ExecInsertIndexTuples)', /^ExecInsertIndexTuples$/],
  ['buffer lookups (ReadBufferExtended)', /^(ReadBuffer_common|ReadBufferExtended)$/],
  ['CHECK constraints (ExecConstraints)', /^ExecConstraints$/],
  ['indexes opened per statement (ExecOpenIndices)', /^ExecOpenIndices$/],
  ['node trees read from catalog text (stringToNode)', /^stringToNode$/],
  ['generated columns built per statement (ExecInitStoredGenerated)', /^ExecInitStoredGenerated$/],
  ['jsonb parsed from parameters (jsonb_in)', /^jsonb_in$/],
  ['waiting on a lock (futex)', /^futex_do_wait$/],
];

/** Each sample's frames, innermost first, from `perf script -F comm,ip,sym` (a header line, then one frame per line). */
export function samplesOf(text: string): string[][] {
  const samples: string[][] = [];
  let frames: string[] | undefined;
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      if (frames !== undefined && frames.length > 0) samples.push(frames);
      frames = undefined;
    } else if (!/^\s/.test(line)) {
      frames = [];
    } else {
      frames?.push(line.trim().split(/\s+/)[1] ?? '');
    }
  }
  if (frames !== undefined && frames.length > 0) samples.push(frames);
  return samples;
}

const passesThrough = (frames: readonly string[], pattern: RegExp): boolean => frames.some((f) => pattern.test(f));

export function stageOf(frames: readonly string[]): string {
  return stages.find(([, pattern]) => passesThrough(frames, pattern))?.[0] ?? 'other (parse, bind, memory, scheduling)';
}

function table(title: string, counts: Map<string, number>, total: number): string[] {
  const rows = [...counts].sort((a, b) => b[1] - a[1]).map(([name, n]) => `| ${name} | ${((100 * n) / total).toFixed(1)} % |`);
  return [`| ${title} | share of samples |`, '| --- | ---: |', ...rows];
}

function main(path: string): void {
  const samples = samplesOf(readFileSync(path, 'utf8'));
  if (samples.length === 0) throw new Error(`${path}: no samples (perf script -F comm,ip,sym of a perf record -g)`);
  const byStage = new Map<string, number>();
  const byFunction = new Map<string, number>(through.map(([name]) => [name, 0]));
  for (const frames of samples) {
    const stage = stageOf(frames);
    byStage.set(stage, (byStage.get(stage) ?? 0) + 1);
    for (const [name, pattern] of through) if (passesThrough(frames, pattern)) byFunction.set(name, byFunction.get(name)! + 1);
  }
  console.log(`${samples.length} samples\n`);
  console.log([...table('stage (each sample once)', byStage, samples.length), '', ...table('passing through (overlapping)', byFunction, samples.length)].join('\n'));
}

if (process.argv[1]?.endsWith('pg-perf-summary.ts')) main(process.argv[2] ?? '/tmp/perf-pg.txt');
