import type { Mutant } from './mutants';

/** What the simulator made of one planted mutant, and the tables that sum the trials up. */

export type Outcome = 'killed' | 'survived' | 'timeout' | 'crashed';

/** A trial names its mutant as the report did; `assertion` is optional in trials kept before it was recorded. */
export interface Trial extends Pick<Mutant, 'key' | 'file' | 'line' | 'mutator' | 'original' | 'replacement' | 'testStatus'>, Partial<Pick<Mutant, 'assertion'>> {
  outcome: Outcome;
  /** The first violation (killed), or why there is no verdict. */
  detail: string;
  ms: number;
}

/** A timeout or a crash ends the run with an error a real test would also see: both count as killed, as Stryker counts them. */
export const isKilled = (t: Trial): boolean => t.outcome !== 'survived';

export function killRate(trials: Trial[]): number {
  return trials.length === 0 ? 0 : trials.filter(isKilled).length / trials.length;
}

/** A markdown summary: the kill rate per file and overall, then the survivors. */
export function summarize(trials: Trial[]): string {
  const byFile = new Map<string, Trial[]>();
  for (const t of trials) byFile.set(t.file, [...(byFile.get(t.file) ?? []), t]);
  const pct = (r: number): string => `${(100 * r).toFixed(1)} %`;
  const lines = ['', '| file | mutants | killed | kill rate |', '| --- | ---: | ---: | ---: |'];
  for (const [file, list] of [...byFile].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`| ${file} | ${list.length} | ${list.filter(isKilled).length} | ${pct(killRate(list))} |`);
  }
  lines.push(`| **all** | ${trials.length} | ${trials.filter(isKilled).length} | **${pct(killRate(trials))}** |`);
  const behaviour = trials.filter((t) => !t.assertion);
  lines.push(`| all but weakened assertions | ${behaviour.length} | ${behaviour.filter(isKilled).length} | **${pct(killRate(behaviour))}** |`, '', 'Survivors:');
  for (const t of trials.filter((x) => !isKilled(x)).sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line)) {
    lines.push(`- ${t.file}:${t.line} ${t.mutator}${t.assertion ? ' (weakens an assertion)' : ''}: \`${t.original.replace(/\s+/g, ' ').slice(0, 70)}\` → \`${t.replacement.replace(/\s+/g, ' ').slice(0, 70)}\``);
  }
  return `${lines.join('\n')}\n`;
}
