/**
 * The PostgreSQL profile summary (server/bench/pg-perf-summary.ts) reads `perf script` output into
 * samples, innermost frame first, and puts each sample in the first stage its stack passes
 * through: a trigger's samples are the trigger's, not the executor finish's around it.
 */
import { describe, expect, it } from 'vitest';
import { samplesOf, stageOf } from '../server/bench/pg-perf-summary';

const script = [
  'postgres',
  '\t    55d1 hash_search_with_hash_value',
  '\t    55d2 AfterTriggerEndQuery',
  '\t    55d3 standard_ExecutorFinish',
  '\t    55d4 PostgresMain',
  '',
  'postgres',
  '\t    55e1 fdatasync',
  '\t    55e2 XLogFlush',
  '\t    55e3 CommitTransactionCommand',
  '',
  'postgres',
  '\t    55f1 [unknown]',
  '\t    55f2 PostgresMain',
  '',
].join('\n');

describe('pg-perf-summary', () => {
  it('reads each sample as its frames, innermost first', () => {
    const samples = samplesOf(script);
    expect(samples).toHaveLength(3);
    expect(samples[0]).toEqual(['hash_search_with_hash_value', 'AfterTriggerEndQuery', 'standard_ExecutorFinish', 'PostgresMain']);
  });

  it('puts a sample in the first stage it passes through, else other', () => {
    const [trigger, flush, unknown] = samplesOf(script);
    expect(stageOf(trigger!)).toBe('statement triggers (message_counts)');
    expect(stageOf(flush!)).toBe('commit: WAL flush (fdatasync)');
    expect(stageOf(unknown!)).toMatch(/^other/);
  });
});
