import { createHash } from 'node:crypto';

/**
 * Mutants for the simulator to face, read from StrykerJS's JSON report (the mutation testing
 * report schema: each file's source and its mutants, located by 1-based line and column).
 */

export interface Position {
  line: number;
  column: number;
}

export interface ReportedMutant {
  id: string;
  mutatorName: string;
  replacement?: string;
  status: string;
  location: { start: Position; end: Position };
}

export interface MutationReport {
  files: Record<string, { source: string; mutants: ReportedMutant[] }>;
}

/** A mutant taken from the report, with what it replaces, ready to plant. */
export interface Mutant {
  /** Stable across runs while the file's source does not change. */
  key: string;
  file: string;
  line: number;
  mutator: string;
  original: string;
  replacement: string;
  /** What the tests made of it (Stryker's status: Killed, Survived, NoCoverage, Timeout...). */
  testStatus: string;
  /** Whether the mutant only weakens an invariant check (an `assert` or an assert* function's body): it changes nothing while the code it guards is right. */
  assertion: boolean;
  sourceHash: string;
  start: number;
  end: number;
}

export function sourceHash(source: string): string {
  return createHash('sha256').update(source).digest('hex').slice(0, 16);
}

/** The offset in `source` of a 1-based line and column. */
export function offsetOf(source: string, at: Position): number {
  let offset = 0;
  for (let line = 1; line < at.line; line++) {
    const newline = source.indexOf('\n', offset);
    if (newline < 0) throw new Error(`line ${at.line} is past the end of the source`);
    offset = newline + 1;
  }
  return offset + at.column - 1;
}

export function mutantsOf(report: MutationReport): Mutant[] {
  const mutants: Mutant[] = [];
  for (const [file, { source, mutants: reported }] of Object.entries(report.files)) {
    const hash = sourceHash(source);
    for (const m of reported) {
      if (m.replacement === undefined) continue;
      const start = offsetOf(source, m.location.start);
      const end = offsetOf(source, m.location.end);
      const line = source.split('\n')[m.location.start.line - 1] ?? '';
      mutants.push({
        key: `${file}:${m.location.start.line}:${m.location.start.column}:${m.mutatorName}:${sourceHash(m.replacement)}`,
        file, line: m.location.start.line, mutator: m.mutatorName,
        original: source.slice(start, end), replacement: m.replacement, testStatus: m.status, sourceHash: hash, start, end,
        assertion: /^\s*(if \(.*\) )?assert\(/.test(line) || /^export (function|const) assert\w*/.test(line),
      });
    }
  }
  return mutants;
}

/** The file's source with the mutant planted. */
export function planted(source: string, mutant: Mutant): string {
  if (sourceHash(source) !== mutant.sourceHash) throw new Error(`${mutant.file} changed since the report was written: run Stryker again`);
  return source.slice(0, mutant.start) + mutant.replacement + source.slice(mutant.end);
}

/** Up to `n` mutants of each file, spread evenly over it (all of them when it has no more). */
export function spreadSample(mutants: Mutant[], n: number): Mutant[] {
  const byFile = new Map<string, Mutant[]>();
  for (const m of mutants) byFile.set(m.file, [...(byFile.get(m.file) ?? []), m]);
  const chosen: Mutant[] = [];
  for (const list of byFile.values()) {
    if (list.length <= n) chosen.push(...list);
    else for (let i = 0; i < n; i++) chosen.push(list[Math.floor((i * list.length) / n)]!);
  }
  return chosen;
}
