import { assert } from '../assert';
import type { Allowance, AllowanceWaiter } from './model';

/**
 * Window and grant arithmetic as pure functions. Windows are fixed and aligned to the
 * allowance's createdAt: window n covers [createdAt + n·w, createdAt + (n+1)·w).
 */
export function windowStartAt(a: Pick<Allowance, 'createdAt' | 'windowSeconds'>, nowMs: number): number {
  const windowMs = a.windowSeconds * 1000;
  assert(nowMs >= a.createdAt, 'time runs backwards for this allowance');
  return a.createdAt + Math.floor((nowMs - a.createdAt) / windowMs) * windowMs;
}

/** The allowance as of `nowMs`: a new window starts empty. Units count in the window they were taken in. */
export function rollWindow(a: Allowance, nowMs: number): Allowance {
  const start = windowStartAt(a, nowMs);
  if (start === a.windowStartsAt) return a;
  assert(start > a.windowStartsAt, 'windows only move forward');
  return { ...a, windowStartsAt: start, usedUnits: 0 };
}

export function coolingDown(a: Allowance, nowMs: number): boolean {
  return a.cooldownUntil !== null && nowMs < a.cooldownUntil;
}

export function fits(a: Allowance, units: number): boolean {
  return a.usedUnits + units <= a.unitsLimit;
}

export function assertAllowance(a: Allowance): void {
  assert(a.usedUnits >= 0 && a.usedUnits <= a.unitsLimit, `allowance ${a.id}: used ${a.usedUnits} outside 0..${a.unitsLimit}`);
  assert((a.windowStartsAt - a.createdAt) % (a.windowSeconds * 1000) === 0, `allowance ${a.id}: window not aligned to createdAt`);
}

export function take(a: Allowance, units: number, nowMs: number): Allowance {
  assert(fits(a, units) && !coolingDown(a, nowMs), `allowance ${a.id}: take of ${units} not allowed`);
  const next = { ...a, usedUnits: a.usedUnits + units, updatedAt: nowMs };
  assertAllowance(next);
  return next;
}

/** A cooldown never shortens a running one. */
export function withCooldown(a: Allowance, seconds: number, reason: string | null, nowMs: number): Allowance {
  const until = nowMs + seconds * 1000;
  if (a.cooldownUntil !== null && a.cooldownUntil >= until) return a;
  return { ...a, cooldownUntil: until, cooldownReason: reason, updatedAt: nowMs };
}

export interface GrantPass {
  allowance: Allowance;
  granted: AllowanceWaiter[];
  expired: AllowanceWaiter[];
}

/**
 * Serves the line from its head, in order: expired waiters leave it wherever they stand, the
 * head is granted while its units fit and no cooldown runs, and the first live waiter that does
 * not fit blocks everyone behind it (strict FIFO), even those whose units would fit.
 */
export function grantFromHead(a: Allowance, line: AllowanceWaiter[], nowMs: number): GrantPass {
  let allowance = rollWindow(a, nowMs);
  const granted: AllowanceWaiter[] = [];
  const expired: AllowanceWaiter[] = [];
  let blocked = false;
  for (let i = 0; i < line.length; i++) {
    const w = line[i]!;
    assert(w.state === 'WAITING' && (i === 0 || line[i - 1]!.position < w.position), `waiter ${w.id}: line out of order`);
    if (w.expiresAt <= nowMs) {
      expired.push({ ...w, state: 'EXPIRED', updatedAt: nowMs });
      continue;
    }
    const unfit = coolingDown(allowance, nowMs) || !fits(allowance, w.units);
    blocked ||= unfit;
    if (blocked) continue;
    allowance = take(allowance, w.units, nowMs);
    granted.push({ ...w, state: 'GRANTED', grantedAt: nowMs, updatedAt: nowMs });
  }
  return { allowance, granted, expired };
}

/** The next time at which time alone could change the line: null when nobody waits. */
export function nextWakeAt(a: Allowance, stillWaiting: AllowanceWaiter[], nowMs: number): number | null {
  if (stillWaiting.length === 0) return null;
  const nextWindow = windowStartAt(a, nowMs) + a.windowSeconds * 1000;
  const candidates = [nextWindow, ...stillWaiting.map((w) => w.expiresAt)];
  if (a.cooldownUntil !== null && a.cooldownUntil > nowMs) candidates.push(a.cooldownUntil);
  return Math.min(...candidates);
}
