import { assert } from '../assert';
import type { OpContext } from '../context';
import { BatonError, conflict, notFound, validationFailed } from '../errors';
import { eventTypes, type NewEvent } from '../events/model';
import type { AllowanceCreateBody, AllowanceView, ConsumeBody, ConsumptionView, CooldownBody, WaitBody, WaiterView } from '../schemas/allowances';
import { decodeNameCursor, encodeNameCursor } from '../paging';
import type { Page } from '../store/page';
import type { Tx } from '../store/store';
import { together } from '../store/together';
import { isoFromMs } from '../time';
import type { Allowance, AllowanceWaiter, Consumption } from './model';
import { assertAllowance, coolingDown, fits, grantFromHead, nextWakeAt, rollWindow, take, windowStartAt, withCooldown } from './rules';
import { allowanceView, consumptionView, waiterView } from './views';
import { governingRun, refuseIfEnded } from '../runs/guard';

export { waiterView as waiterViewOf } from './views';

/**
 * Allowances: fixed-window unit counts with a strict FIFO line and cooldowns (docs/design/0012-allowances.md).
 * Lock order: the allowance row, then its waiters. Every operation that can move the line
 * serves it from the head in the same transaction; time alone moves it through the grant
 * sweep (serveDueLines), which claims lines by wakeAt.
 */

/** Waiters one pass serves: the head blocks the rest anyway, and expiry catches up next pass. */
const linePassLimit = 1_000;

const event = (a: Pick<Allowance, 'id'>, type: string, scopeId: string | null, data: Record<string, unknown>): NewEvent => ({
  type,
  aggregateType: 'allowance',
  aggregateId: a.id,
  scopeId,
  data,
});

export async function createAllowance(ctx: OpContext, body: AllowanceCreateBody, canCreate: boolean): Promise<{ created: boolean; view: AllowanceView }> {
  const existing = await ctx.tx.allowances.getByName(ctx.spaceId, body.name);
  if (existing) {
    if (existing.unitsLimit !== body.unitsLimit || existing.windowSeconds !== body.windowSeconds) throw conflict(`allowance ${body.name} exists with other settings`);
    return { created: false, view: await loadView(ctx.tx, existing, ctx.nowMs) };
  }
  if (!canCreate) throw new BatonError('FORBIDDEN', 'credential lacks resource_config');
  const allowance: Allowance = {
    id: ctx.random.uuid(),
    spaceId: ctx.spaceId,
    name: body.name,
    unitsLimit: body.unitsLimit,
    windowSeconds: body.windowSeconds,
    windowStartsAt: ctx.nowMs,
    usedUnits: 0,
    cooldownUntil: null,
    cooldownReason: null,
    nextPosition: 1,
    wakeAt: null,
    createdAt: ctx.nowMs,
    updatedAt: ctx.nowMs,
  };
  assertAllowance(allowance);
  await ctx.tx.allowances.insert(allowance);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [event(allowance, eventTypes.allowanceCreated, null, { name: body.name, unitsLimit: body.unitsLimit, windowSeconds: body.windowSeconds })]);
  return { created: true, view: allowanceView(allowance, 0, ctx.nowMs) };
}

async function loadView(tx: Tx, a: Allowance, nowMs: number): Promise<AllowanceView> {
  return allowanceView(a, await tx.allowanceWaiters.countWaiting(a.spaceId, a.id), nowMs);
}

export async function getAllowance(tx: Tx, spaceId: string, id: string, nowMs: number): Promise<AllowanceView> {
  const a = await tx.allowances.get(spaceId, id);
  if (!a) throw notFound('allowance');
  return loadView(tx, a, nowMs);
}

export async function listAllowances(tx: Tx, spaceId: string, cursor: string | undefined, limit: number, nowMs: number): Promise<Page<AllowanceView>> {
  const afterName = cursor === undefined ? null : decodeNameCursor(cursor);
  const rows = await tx.allowances.list(spaceId, afterName, limit + 1);
  const page = rows.slice(0, limit);
  const items = await Promise.all(page.map((a) => loadView(tx, a, nowMs)));
  return { items, nextCursor: rows.length > limit ? encodeNameCursor(page.at(-1)!.name) : null };
}

async function lockAllowance(ctx: OpContext, id: string): Promise<Allowance> {
  const a = await ctx.tx.allowances.get(ctx.spaceId, id, { forUpdate: true });
  if (!a) throw notFound('allowance');
  return rollWindow(a, ctx.nowMs);
}

function checkUnits(a: Allowance, units: number): void {
  if (units > a.unitsLimit) throw validationFailed('body.units', `must be at most the allowance's unitsLimit ${a.unitsLimit}`);
}

/**
 * Takes units now or refuses with QUOTA_EXHAUSTED: only when nobody waits in line, no cooldown
 * runs and the units fit the current window. A workKey already consumed answers with that
 * consumption (replay) and takes nothing.
 */
export async function consume(ctx: OpContext, id: string, body: ConsumeBody): Promise<{ replay: boolean; view: ConsumptionView }> {
  // One round trip: the allowance's lock, then, read under it, the workKey's prior consumption
  // and the line. Sent together they run in this order, so the count sees every waiter that a
  // wait holding the lock before us committed (a single statement would take its snapshot
  // before the lock was granted and could miss one, letting this consume pass the line).
  // The scope's run goes first, locked against its end (docs/lock-order.md).
  const [run, locked, prior, waiting] = await together(
    governingRun(ctx, body.scopeId),
    ctx.tx.allowances.get(ctx.spaceId, id, { forUpdate: true }),
    body.workKey === undefined ? Promise.resolve(undefined) : ctx.tx.consumptions.getByWorkKey(ctx.spaceId, id, body.workKey),
    ctx.tx.allowanceWaiters.countWaiting(ctx.spaceId, id),
  );
  if (!locked) throw notFound('allowance');
  refuseIfEnded(run, body.scopeId);
  const a = rollWindow(locked, ctx.nowMs);
  checkUnits(a, body.units);
  if (prior) {
    if (prior.units !== body.units) throw conflict(`workKey ${body.workKey} already consumed ${prior.units} units`);
    return { replay: true, view: consumptionView(prior, true) };
  }
  const windowEndsInMs = a.windowStartsAt + a.windowSeconds * 1000 - ctx.nowMs;
  if (waiting > 0) throw exhausted(`allowance ${a.name} has waiters in line; join the line with /wait`, windowEndsInMs);
  if (coolingDown(a, ctx.nowMs)) throw exhausted(`allowance ${a.name} is cooling down until ${isoFromMs(a.cooldownUntil!)}`, a.cooldownUntil! - ctx.nowMs);
  if (!fits(a, body.units)) throw exhausted(`allowance ${a.name} has ${a.unitsLimit - a.usedUnits} units left in this window, ${body.units} requested`, windowEndsInMs);
  const next = take(a, body.units, ctx.nowMs);
  const consumption: Consumption = {
    id: ctx.random.uuid(),
    spaceId: ctx.spaceId,
    allowanceId: id,
    scopeId: body.scopeId,
    holder: body.holder,
    units: body.units,
    workKey: body.workKey ?? null,
    windowStartsAt: next.windowStartsAt,
    createdAt: ctx.nowMs,
  };
  await ctx.tx.allowances.update(next);
  await ctx.tx.consumptions.insert(consumption);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [
    event(a, eventTypes.allowanceConsumed, body.scopeId, { consumptionId: consumption.id, holder: body.holder, units: body.units, workKey: consumption.workKey, windowStartsAt: isoFromMs(next.windowStartsAt), usedUnits: next.usedUnits }),
  ]);
  return { replay: false, view: consumptionView(consumption, false) };
}

/** docs/design/0016-limits-and-retry-after.md: Retry-After runs to the window's end, or the cooldown's. */
const exhausted = (message: string, retryAfterMs: number): BatonError => new BatonError('QUOTA_EXHAUSTED', message, undefined, retryAfterMs);

/** Joins the line: GRANTED at once on the fast path (nobody waiting, no cooldown, units fit), else WAITING. */
export async function wait(ctx: OpContext, id: string, body: WaitBody): Promise<WaiterView> {
  const [run, a] = await together(governingRun(ctx, body.scopeId), lockAllowance(ctx, id));
  refuseIfEnded(run, body.scopeId);
  checkUnits(a, body.units);
  if ((await ctx.tx.allowanceWaiters.countWaitingInSpace(ctx.spaceId)) >= ctx.limits.maxPendingWaiters) {
    throw new BatonError('BACKLOG_FULL', `the space has ${ctx.limits.maxPendingWaiters} waiters in line (maxPendingWaiters; PUT /limits raises it)`);
  }
  const waiter: AllowanceWaiter = {
    id: ctx.random.uuid(),
    spaceId: ctx.spaceId,
    allowanceId: id,
    position: a.nextPosition,
    scopeId: body.scopeId,
    holder: body.holder,
    units: body.units,
    state: 'WAITING',
    grantedAt: null,
    expiresAt: ctx.nowMs + body.ttlSeconds * 1000,
    createdAt: ctx.nowMs,
    updatedAt: ctx.nowMs,
  };
  await ctx.tx.allowanceWaiters.insert(waiter);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [
    event(a, eventTypes.allowanceWaiterQueued, body.scopeId, { waiterId: waiter.id, holder: body.holder, units: body.units, expiresAt: isoFromMs(waiter.expiresAt) }),
  ]);
  // Serving the line right away is the fast path: an empty line, no cooldown and room grant it now.
  await serveLine(ctx.tx, { ...a, nextPosition: a.nextPosition + 1, updatedAt: ctx.nowMs }, ctx.nowMs);
  const after = await ctx.tx.allowanceWaiters.get(ctx.spaceId, waiter.id);
  assert(after !== undefined, 'a waiter vanished in its own transaction');
  return waiterView(after);
}

export async function startCooldown(ctx: OpContext, id: string, body: CooldownBody): Promise<AllowanceView> {
  const a = await lockAllowance(ctx, id);
  const next = withCooldown(a, body.seconds, body.reason ?? null, ctx.nowMs);
  if (next !== a) {
    await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [event(a, eventTypes.allowanceCooldownStarted, null, { cooldownUntil: isoFromMs(next.cooldownUntil!), reason: next.cooldownReason })]);
  }
  const served = await serveLine(ctx.tx, next, ctx.nowMs);
  return loadView(ctx.tx, served, ctx.nowMs);
}

export async function getWaiter(tx: Tx, spaceId: string, id: string): Promise<AllowanceWaiter> {
  const w = await tx.allowanceWaiters.get(spaceId, id);
  if (!w) throw notFound('waiter');
  return w;
}

/** Leaves the line (only a WAITING waiter can); whoever stood behind may be granted at once. */
export async function cancelWaiter(ctx: OpContext, waiterId: string): Promise<WaiterView> {
  const peek = await getWaiter(ctx.tx, ctx.spaceId, waiterId);
  const a = await lockAllowance(ctx, peek.allowanceId);
  const w = await ctx.tx.allowanceWaiters.get(ctx.spaceId, waiterId, { forUpdate: true });
  assert(w !== undefined, 'a waiter vanished under its allowance lock');
  if (w.state !== 'WAITING') throw conflict(`waiter ${w.id} is ${w.state}`);
  const cancelled: AllowanceWaiter = { ...w, state: 'CANCELLED', updatedAt: ctx.nowMs };
  await ctx.tx.allowanceWaiters.update(cancelled);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [event(a, eventTypes.allowanceWaiterCancelled, w.scopeId, { waiterId: w.id, holder: w.holder, units: w.units })]);
  await serveLine(ctx.tx, a, ctx.nowMs);
  return waiterView(cancelled);
}

/**
 * Serves the line of a locked allowance from its head and stores the result: grants, expiries,
 * the new balance and when time should next look at it. Returns the allowance as stored.
 */
async function serveLine(tx: Tx, locked: Allowance, nowMs: number): Promise<Allowance> {
  const line = await tx.allowanceWaiters.listWaiting(locked.spaceId, locked.id, linePassLimit);
  const pass = grantFromHead(locked, line, nowMs);
  const done = new Set([...pass.granted, ...pass.expired].map((w) => w.id));
  const stillWaiting = line.filter((w) => !done.has(w.id));
  // A full page may hide more waiters: look again at the next tick rather than never.
  const wakeAt = stillWaiting.length === 0 && line.length === linePassLimit ? nowMs + 1 : nextWakeAt(pass.allowance, stillWaiting, nowMs);
  const allowance = { ...pass.allowance, wakeAt };
  await tx.allowances.update(allowance);
  const events: NewEvent[] = [];
  for (const w of pass.expired) {
    await tx.allowanceWaiters.update(w);
    events.push(event(allowance, eventTypes.allowanceWaiterExpired, w.scopeId, { waiterId: w.id, holder: w.holder, units: w.units }));
  }
  for (const w of pass.granted) {
    await tx.allowanceWaiters.update(w);
    events.push(event(allowance, eventTypes.allowanceWaiterGranted, w.scopeId, { waiterId: w.id, holder: w.holder, units: w.units, windowStartsAt: isoFromMs(windowStartAt(allowance, nowMs)), usedUnits: allowance.usedUnits }));
  }
  if (events.length > 0) await tx.events.append(allowance.spaceId, nowMs, events);
  return allowance;
}

/**
 * The grant sweep: serves every line that time alone has moved (a window rolled, a cooldown
 * ended, a waiter expired), with nobody calling. Returns how many lines it served.
 */
export async function serveDueLines(tx: Tx, nowMs: number, limit: number): Promise<number> {
  const due = await tx.allowances.claimDue(nowMs, limit);
  for (const a of due) await serveLine(tx, a, nowMs);
  return due.length;
}
