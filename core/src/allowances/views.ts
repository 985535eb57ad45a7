import type { AllowanceView, ConsumptionView, WaiterView } from '../schemas/allowances';
import { isoFromMs } from '../time';
import type { Allowance, AllowanceWaiter, Consumption } from './model';
import { coolingDown, rollWindow } from './rules';

/** The status as of `nowMs`: the current window's balance, and the cooldown only while it runs. */
export function allowanceView(stored: Allowance, waiting: number, nowMs: number): AllowanceView {
  const a = rollWindow(stored, nowMs);
  const cooling = coolingDown(a, nowMs);
  return {
    id: a.id,
    name: a.name,
    unitsLimit: a.unitsLimit,
    windowSeconds: a.windowSeconds,
    windowStartsAt: isoFromMs(a.windowStartsAt),
    usedUnits: a.usedUnits,
    availableUnits: a.unitsLimit - a.usedUnits,
    cooldownUntil: cooling ? isoFromMs(a.cooldownUntil!) : null,
    cooldownReason: cooling ? a.cooldownReason : null,
    waiting,
    createdAt: isoFromMs(a.createdAt),
    updatedAt: isoFromMs(a.updatedAt),
  };
}

export function consumptionView(c: Consumption, replay: boolean): ConsumptionView {
  return {
    id: c.id,
    allowanceId: c.allowanceId,
    scopeId: c.scopeId,
    holder: c.holder,
    units: c.units,
    workKey: c.workKey,
    windowStartsAt: isoFromMs(c.windowStartsAt),
    replay,
    createdAt: isoFromMs(c.createdAt),
  };
}

export function waiterView(w: AllowanceWaiter): WaiterView {
  return {
    id: w.id,
    allowanceId: w.allowanceId,
    scopeId: w.scopeId,
    holder: w.holder,
    units: w.units,
    state: w.state,
    grantedAt: w.grantedAt === null ? null : isoFromMs(w.grantedAt),
    expiresAt: isoFromMs(w.expiresAt),
    createdAt: isoFromMs(w.createdAt),
    updatedAt: isoFromMs(w.updatedAt),
  };
}
