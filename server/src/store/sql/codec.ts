import { InvariantViolation, isoFromMs } from '@baton/core';

/**
 * The one place where driver values become domain values and back. The drivers disagree:
 * `pg` returns int8 as a string, PGlite as a number when it is a safe integer and a bigint
 * otherwise; PGlite returns timestamptz as a Date, `pg` as PostgreSQL's text on the statement
 * batch (pg-statement-batch.ts) and as a Date elsewhere; both return json/jsonb parsed. Parameters go out as
 * text (bigint as digits, times as ISO 8601), which both drivers pass through unchanged.
 */

export function toBigint(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return BigInt(value);
  throw new InvariantViolation(`sql store: not an integer: ${describe(value)}`);
}

/** int4 and count(*) columns, which must fit a JS number. */
export function toInt(value: unknown): number {
  const n = typeof value === 'number' ? value : Number(toBigint(value));
  if (!Number.isSafeInteger(n)) throw new InvariantViolation(`sql store: not a safe integer: ${describe(value)}`);
  return n;
}

/** timestamptz to epoch ms. */
export function toMs(value: unknown): number {
  const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw new InvariantViolation(`sql store: not a timestamp: ${describe(value)}`);
  return ms;
}

export const toMsOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : toMs(value));

export function toText(value: unknown): string {
  if (typeof value !== 'string') throw new InvariantViolation(`sql store: not text: ${describe(value)}`);
  return value;
}

export const toTextOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : toText(value));

export function toTextArray(value: unknown): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new InvariantViolation(`sql store: not text[]: ${describe(value)}`);
  return value;
}

/** json/jsonb columns arrive parsed from both drivers; SQL NULL is JSON null. */
export const fromJson = <T>(value: unknown): T => (value === undefined ? null : value) as T;

export const bigintParam = (value: bigint): string => value.toString();
export const timeParam = (ms: number): string => isoFromMs(ms);
export const timeParamOrNull = (ms: number | null): string | null => (ms === null ? null : timeParam(ms));
/** Serialised here rather than by the driver: `pg` would send a JS array as a PostgreSQL array. */
export const jsonParam = (value: unknown): string => JSON.stringify(value ?? null);

function describe(value: unknown): string {
  return `${typeof value} ${String(value)}`;
}
