/** Wire timestamps are ISO 8601 UTC with milliseconds (docs/design/0006-wire-shapes.md). */
export function isoFromMs(ms: number): string {
  return new Date(ms).toISOString();
}

export function msFromIso(iso: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new RangeError(`not a timestamp: ${iso}`);
  return ms;
}
