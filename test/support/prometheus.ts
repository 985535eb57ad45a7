/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), for tests of
 * GET /metrics: no installed library parses it. Strict where a scraper would choke or a
 * dashboard would mislead: every sample line is `name{labels} value`, every family has exactly
 * one HELP and one TYPE before its first sample, names and label names are legal, label values
 * are properly escaped, no series appears twice, and a histogram's buckets are cumulative with a
 * +Inf bucket equal to its _count.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const labelName = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const types = new Set<MetricType>(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export class ExpositionError extends Error {
  constructor(line: number, message: string) {
    super(`line ${line}: ${message}`);
  }
}

export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  lines.forEach((line, i) => {
    const n = i + 1;
    if (line.trim() === '') return;
    if (line.startsWith('#')) return readComment(families, line, n);
    const sample = readSample(line, n);
    const family = families.get(familyOf(families, sample.name));
    if (!family) throw new ExpositionError(n, `sample ${sample.name} has no HELP and TYPE before it`);
    if (family.help === undefined || family.type === undefined) throw new ExpositionError(n, `family ${family.name} lacks HELP or TYPE`);
    const series = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
    if (seen.has(series)) throw new ExpositionError(n, `series ${series} appears twice`);
    seen.add(series);
    family.samples.push(sample);
  });
  for (const family of families.values()) {
    if (family.help === undefined || family.type === undefined) throw new ExpositionError(0, `family ${family.name} lacks HELP or TYPE`);
    if (family.type === 'histogram') checkHistogram(family);
  }
  return families;
}

function readComment(families: Map<string, Family>, line: string, n: number): void {
  const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
  if (!m) return; // An ordinary comment.
  const [, keyword, name, rest] = m as unknown as [string, 'HELP' | 'TYPE', string, string];
  if (!metricName.test(name)) throw new ExpositionError(n, `bad metric name ${name}`);
  const family = families.get(name) ?? ({ name, samples: [] } as unknown as Family);
  families.set(name, family);
  if (family.samples.length > 0) throw new ExpositionError(n, `${keyword} of ${name} after its samples`);
  if (keyword === 'HELP') {
    if (family.help !== undefined) throw new ExpositionError(n, `second HELP for ${name}`);
    family.help = unescape(rest, false, n);
  } else {
    if (family.type !== undefined) throw new ExpositionError(n, `second TYPE for ${name}`);
    if (!types.has(rest as MetricType)) throw new ExpositionError(n, `unknown TYPE ${rest} for ${name}`);
    family.type = rest as MetricType;
  }
}

/** `name{a="x",b="y"} value [timestamp]`, label values escaped with \\, \" and \n. */
function readSample(line: string, n: number): Sample {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)( -?\d+)?$/.exec(line);
  if (!m) throw new ExpositionError(n, `not a sample line: ${line}`);
  const [, name, labelText, valueText] = m as unknown as [string, string, string | undefined, string];
  return { name, labels: labelText === undefined ? {} : readLabels(labelText, n), value: readValue(valueText, n) };
}

function readLabels(text: string, n: number): Record<string, string> {
  const labels: Record<string, string> = {};
  let rest = text.slice(1, -1);
  while (rest.length > 0) {
    const m = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/.exec(rest);
    if (!m) throw new ExpositionError(n, `bad labels ${text}`);
    const [whole, name, value] = m as unknown as [string, string, string];
    if (!labelName.test(name) || name in labels) throw new ExpositionError(n, `bad or repeated label ${name}`);
    labels[name] = unescape(value, true, n);
    rest = rest.slice(whole.length);
  }
  return labels;
}

/**
 * A float as Prometheus reads it (Go's strconv.ParseFloat): NaN and Inf in any case. prom-client
 * writes NaN as `Nan` (an event-loop delay histogram with nothing recorded since the last scrape).
 */
function readValue(text: string, n: number): number {
  if (/^[+]?inf(inity)?$/i.test(text)) return Infinity;
  if (/^-inf(inity)?$/i.test(text)) return -Infinity;
  if (/^nan$/i.test(text)) return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new ExpositionError(n, `bad value ${text}`);
  return Number(text);
}

function unescape(text: string, quoted: boolean, n: number): string {
  return text.replace(/\\(.)/g, (_, c: string) => {
    if (c === '\\') return '\\';
    if (c === 'n') return '\n';
    if (c === '"' && quoted) return '"';
    throw new ExpositionError(n, `bad escape \\${c}`);
  });
}

/** The family a sample belongs to: its own name, or a histogram's or summary's name without the suffix. */
function familyOf(families: Map<string, Family>, sample: string): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!sample.endsWith(suffix)) continue;
    const base = sample.slice(0, -suffix.length);
    const type = families.get(base)?.type;
    if (type === 'histogram' || (type === 'summary' && suffix !== '_bucket')) return base;
  }
  return sample;
}

function checkHistogram(family: Family): void {
  const byLabels = new Map<string, { buckets: [number, number][]; count?: number }>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    const k = JSON.stringify(Object.entries(rest).sort());
    const entry = byLabels.get(k) ?? { buckets: [] };
    byLabels.set(k, entry);
    if (s.name === `${family.name}_bucket`) {
      if (le === undefined) throw new ExpositionError(0, `${family.name}_bucket without le`);
      entry.buckets.push([readValue(le, 0), s.value]);
    } else if (s.name === `${family.name}_count`) entry.count = s.value;
  }
  for (const [k, { buckets, count }] of byLabels) {
    const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < sorted.length; i++) if (sorted[i]![1] < sorted[i - 1]![1]) throw new ExpositionError(0, `${family.name}${k}: buckets not cumulative`);
    const inf = sorted.at(-1);
    if (!inf || inf[0] !== Infinity || inf[1] !== count) throw new ExpositionError(0, `${family.name}${k}: +Inf bucket ${inf?.[1]} is not _count ${count}`);
  }
}

/**
 * The value of the one sample named `name` whose labels include `labels`; undefined when there
 * is none, an error when several match (the test asked an ambiguous question).
 */
export function valueOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const family = families.get(familyOf(families, name));
  const matches = (family?.samples ?? []).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (matches.length > 1) throw new Error(`${name}${JSON.stringify(labels)} matches ${matches.length} series`);
  return matches[0]?.value;
}
