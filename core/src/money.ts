import { assert } from './assert';

/** Budget amounts: digit strings of at most 18 digits, held as bigint, never as number. */
export const maxMinorDigits = 18;
export const maxMinor = 10n ** BigInt(maxMinorDigits) - 1n;

export function parseMinor(text: string): bigint {
  assert(/^\d{1,18}$/.test(text), `minor amount must be 1 to 18 digits, got ${JSON.stringify(text)}`);
  return BigInt(text);
}

export function formatMinor(value: bigint): string {
  assert(value >= 0n, `minor amount must not be negative, got ${value}`);
  return value.toString();
}
