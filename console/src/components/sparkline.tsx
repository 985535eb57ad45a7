/**
 * A small line of recent values over time as inline SVG (no chart library: a polyline is
 * enough), with the figures it shows in its accessible name, since a screen reader cannot read
 * the line. The width is `windowMs` ending at the newest point: the line grows leftwards as
 * readings come, and a pause in them (the page was not shown) is a long straight stretch.
 */
const width = 240;
const height = 48;
const pad = 3;

export interface SparkPoint {
  atMs: number;
  value: number;
}

export function Sparkline({ points, windowMs, label, describe }: { points: SparkPoint[]; windowMs: number; label: string; describe: (v: number) => string }) {
  const newest = points[points.length - 1];
  if (!newest) return null;
  const shown = points.filter((p) => newest.atMs - p.atMs <= windowMs);
  const values = shown.map((p) => p.value);
  const highest = Math.max(...values);
  const top = highest > 0 ? highest : 1;
  const xy = shown.map((p) => ({
    x: width - pad - ((newest.atMs - p.atMs) / windowMs) * (width - 2 * pad),
    y: height - pad - (p.value / top) * (height - 2 * pad),
  }));
  const last = xy[xy.length - 1]!;
  const summary = `${label}: now ${describe(newest.value)}; lowest ${describe(Math.min(...values))}, highest ${describe(highest)} over the last ${values.length} readings`;
  return (
    <svg class="sparkline" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={summary} data-points={values.length}>
      <title>{summary}</title>
      <line class="sparkline-base" x1={pad} x2={width - pad} y1={height - pad} y2={height - pad} />
      {xy.length > 1 && <polyline class="sparkline-line" points={xy.map((p) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ')} />}
      <circle class="sparkline-dot" cx={last.x} cy={last.y} r={2.5} />
    </svg>
  );
}
