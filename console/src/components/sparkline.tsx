/**
 * A small line of recent values as inline SVG (no chart library: a polyline is enough), with
 * the figures it shows in its accessible name, since a screen reader cannot read the line.
 */
const width = 240;
const height = 48;
const pad = 3;

export function Sparkline({ values, label, describe }: { values: number[]; label: string; describe: (v: number) => string }) {
  if (values.length === 0) return null;
  const highest = Math.max(...values);
  const top = highest > 0 ? highest : 1;
  const step = values.length > 1 ? (width - 2 * pad) / (values.length - 1) : 0;
  const xy = values.map((v, i) => ({ x: pad + i * step, y: height - pad - (v / top) * (height - 2 * pad) }));
  const last = xy[xy.length - 1]!;
  const summary = `${label}: now ${describe(values[values.length - 1]!)}; lowest ${describe(Math.min(...values))}, highest ${describe(highest)} over the last ${values.length} readings`;
  return (
    <svg class="sparkline" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={summary} data-points={values.length}>
      <title>{summary}</title>
      <line class="sparkline-base" x1={pad} x2={width - pad} y1={height - pad} y2={height - pad} />
      {xy.length > 1 && <polyline class="sparkline-line" points={xy.map((p) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ')} />}
      <circle class="sparkline-dot" cx={last.x} cy={last.y} r={2.5} />
    </svg>
  );
}
