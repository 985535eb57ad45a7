/**
 * The growth bench's tables: per level and request, latency and PostgreSQL work with ratios to
 * the empty level; the statements whose work grows; the cycle target; and (in the markdown report)
 * the plans of the explain pass.
 */
import { cpus } from 'node:os';
import type { Config, LevelResult } from './model';
import { fmt } from '../harness';
import { kindNotes, requestKinds, type PhaseResult, type RequestKind } from './phases';

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

interface Figures {
  n: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  buffers: number;
  read: number;
  statements: number;
  rows: number;
}

function figuresOf(p: PhaseResult): Figures {
  const n = p.samplesMs.length;
  const sum = (f: (s: PhaseResult['statements'][number]) => number) => p.statements.reduce((a, s) => a + f(s), 0) / n;
  return {
    n,
    meanMs: mean(p.samplesMs),
    p50Ms: percentile(p.samplesMs, 50),
    p99Ms: percentile(p.samplesMs, 99),
    buffers: sum((s) => s.hit + s.read),
    read: sum((s) => s.read),
    statements: sum((s) => s.calls),
    rows: sum((s) => s.rows),
  };
}

const phaseOf = (r: LevelResult, kind: RequestKind) => r.phases.find((p) => p.kind === kind);
const ratio = (a: number, b: number) => (b > 0 ? `${fmt(a / b, 2)}×` : '-');

function growthTable(results: LevelResult[]): string[] {
  const empty = results.find((r) => r.level.name === 'empty');
  const lines = [
    '| request | level | n | mean ms | p50 ms | p99 ms | buffers / req (hit+read) | of which read | statements / req | rows / req | mean vs empty | buffers vs empty |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const kind of requestKinds) {
    const base = empty && phaseOf(empty, kind) ? figuresOf(phaseOf(empty, kind)!) : undefined;
    for (const r of results) {
      const p = phaseOf(r, kind);
      if (!p) continue;
      const f = figuresOf(p);
      lines.push(
        `| ${kind} | ${r.level.name} | ${f.n} | ${fmt(f.meanMs, 2)} | ${fmt(f.p50Ms, 2)} | ${fmt(f.p99Ms, 2)} | ${fmt(f.buffers, 0)} | ${fmt(f.read, 0)} | ${fmt(f.statements, 1)} | ${fmt(f.rows, 1)} | ${base ? ratio(f.meanMs, base.meanMs) : '-'} | ${base ? ratio(f.buffers, base.buffers) : '-'} |`,
      );
    }
  }
  return lines;
}

function cycleTarget(results: LevelResult[]): string[] {
  const empty = results.find((r) => r.level.name === 'empty');
  const full = results.find((r) => r.level.name === 'mailbox-90k');
  const a = empty && phaseOf(empty, 'cycle');
  const b = full && phaseOf(full, 'cycle');
  if (!a || !b) return ['cycle target: needs the empty and mailbox-90k levels'];
  const fa = figuresOf(a);
  const fb = figuresOf(b);
  const r = fb.meanMs / fa.meanMs;
  return [
    `cycle (submit → admit → complete) with 90,000 READY tasks of another scope in the mailbox: mean ${fmt(fb.meanMs, 2)} ms vs ${fmt(fa.meanMs, 2)} ms empty = ${fmt(r, 2)}× ` +
      `(target ≤ 1.5×: ${r <= 1.5 ? 'met' : 'NOT met'}); p50 ${fmt(fb.p50Ms, 2)} vs ${fmt(fa.p50Ms, 2)} ms; PostgreSQL buffers ${fmt(fb.buffers, 0)} vs ${fmt(fa.buffers, 0)} per cycle = ${ratio(fb.buffers, fa.buffers)}`,
  ];
}

const oneLine = (q: string, max: number) => {
  const s = q.replace(/\s+/g, ' ').trim();
  return (s.length > max ? `${s.slice(0, max - 1)}…` : s).replace(/\|/g, '\\|');
};

/**
 * Per request, the statements whose buffers per request grow: at some level at least 1.5× and
 * 10 buffers above the empty level. The most useful list for making the hot path flat.
 */
function growingStatements(results: LevelResult[], width: number, all: boolean): string[] {
  const lines: string[] = [];
  const levels = results.map((r) => r.level.name);
  for (const kind of requestKinds) {
    const perLevel = results.map((r) => {
      const p = phaseOf(r, kind);
      const map = new Map<string, { calls: number; buffers: number }>();
      if (p) for (const s of p.statements) map.set(s.query, { calls: s.calls / p.samplesMs.length, buffers: (s.hit + s.read) / p.samplesMs.length });
      return map;
    });
    const texts = new Set(perLevel.flatMap((m) => [...m.keys()]));
    const rows = [...texts]
      .map((text) => {
        const values = perLevel.map((m) => m.get(text)?.buffers ?? 0);
        const calls = Math.max(...perLevel.map((m) => m.get(text)?.calls ?? 0));
        const base = values[0] ?? 0;
        const top = Math.max(...values);
        return { text, values, calls, top, grows: top >= 1.5 * base && top - base >= 10 };
      })
      .filter((row) => (all ? row.top >= 1 : row.grows))
      .sort((a, b) => b.top - a.top)
      .slice(0, all ? 20 : 8);
    if (rows.length === 0) continue;
    lines.push('', `${kind} (${kindNotes[kind]}):`, '', `| statement | calls / req | ${levels.map((l) => `${l} buffers / req`).join(' | ')} |`, `| --- | ---: | ${levels.map(() => '---:').join(' | ')} |`);
    for (const row of rows) lines.push(`| \`${oneLine(row.text, width)}\` | ${fmt(row.calls, 2)} | ${row.values.map((v) => fmt(v, 1)).join(' | ')} |`);
  }
  return lines;
}

export function printSummary(results: LevelResult[]): void {
  console.log('\n## Growth: per request, by level (ratios to empty)\n');
  for (const line of growthTable(results)) console.log(line);
  console.log('');
  for (const line of cycleTarget(results)) console.log(line);
  console.log('\n## Statements whose buffers per request grow (≥ 1.5× and ≥ 10 buffers above empty)');
  const growing = growingStatements(results, 110, false);
  for (const line of growing.length ? growing : ['', 'none']) console.log(line);
}

export function renderReport(results: LevelResult[], config: Config): string {
  const out: string[] = [];
  out.push('## Levels', '');
  for (const r of results) {
    out.push(`- **${r.level.name}**: ${r.level.description}.${r.fill ? ` Filled in ${fmt(r.fill.seconds, 1)} s (rows per task ${JSON.stringify(r.fill.rowsPerTask)}${Object.keys(r.fill.notCloned).length ? `, left to triggers ${JSON.stringify(r.fill.notCloned)}` : ''}), VACUUM ANALYZE + CHECKPOINT ${fmt(r.settleSeconds, 1)} s.` : ''}`);
    for (const v of r.validations) out.push(`  - check: ${v}`);
    if (r.loadAverage !== undefined) out.push(`  - machine load average (1 min) after its phases: ${fmt(r.loadAverage, 1)} on ${cpus().length} cores`);
  }
  out.push('', `Sizes: ${config.sizes.singles} of each single request and journal read, ${config.sizes.batches} batches of ${config.sizes.batchSize}, ${config.sizes.cycles} cycles.`, '');
  out.push('## Growth table', '', ...growthTable(results), '', ...cycleTarget(results), '');
  out.push('## Statements whose buffers per request grow', '', 'At some level at least 1.5× and 10 buffers per request above the empty level (pg_stat_statements, top-level statements, normalized text).');
  const growing = growingStatements(results, 200, false);
  out.push(...(growing.length ? growing : ['', 'None.']), '');
  out.push('## Every statement per request, by level', '', 'Buffers per request of each statement a request ran (at least 1 buffer per request at some level).');
  out.push(...growingStatements(results, 200, true), '');
  for (const r of results) {
    if (!r.plans) continue;
    out.push(`## Plans at ${r.level.name}`, '', `auto_explain (log_min_duration 0, log_analyze, log_buffers, log_nested_statements) over a few requests of each kind after the measured phases; the last plan of each distinct statement.`, '');
    for (const kind of requestKinds) {
      const plans = r.plans[kind];
      if (!plans) continue;
      out.push(`### ${kind} at ${r.level.name}: ${kindNotes[kind]}`, '');
      for (const p of plans) {
        out.push('```', p.query, `-- ${fmt(p.durationMs, 3)} ms`, p.plan, '```', '');
      }
    }
  }
  return out.join('\n');
}
