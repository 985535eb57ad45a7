import type { DeliveryRequirements, JournalEvent, Store } from '@baton/core';

/** Claims a delivery gets before it is DEAD (core/src/messages/model.ts maxAttempts). */
const maxAttempts = 5;

/** The run's task resources, made at set-up. Their limits never change, so the checks may take them as given. */
export interface TaskWorld {
  mailboxIds: readonly string[];
  pools: readonly { id: string; name: string; capacity: number }[];
  workLimits: readonly { id: string; name: string; maxConcurrent: number }[];
  /** `createdAt` aligns the windows (core/src/allowances/rules.ts windowStartAt). */
  allowances: readonly { id: string; name: string; unitsLimit: number; windowSeconds: number; createdAt: number }[];
  budgets: readonly { id: string; name: string; limitMinor: bigint }[];
}

/** What the store says of each delivery that the journal does not: its FIFO position and requirements. */
export interface DeliveryFacts {
  seq: number;
  requirements: DeliveryRequirements | null;
}

/** A claim as the admit (or recv) reply showed it: names, as in the journal's data.claimed. */
export interface ClaimedView {
  pools: { name: string; units: number }[];
  quotas: { name: string; units: number }[];
  budgets: { name: string; reservationId: string; amountMinor: string }[];
  workLimit: string | null;
}

/** One delivery a task worker received, as the client saw it. */
interface ClaimRecord {
  messageId: string;
  token: string;
  session: string;
  attempt: number;
  leaseExpiresAtMs: number;
  /** What the admit reply said was claimed; null for a raw recv (it claims nothing). */
  claimed: ClaimedView | null;
  /** When a complete answering 200 was heard. */
  completedHeardAtMs?: number;
  /** When a LEASE_LOST was first heard for this token. */
  leaseLostHeardAtMs?: number;
  /** A complete or nack of this token that answered LEASE_LOST (checked against the journal at the end). */
  finishLostHeard?: 'complete' | 'nack';
  /** When the runtime worker holding this token reported it lost (event lease_lost). */
  runtimeLostAtMs?: number;
}

/** What the runtime workers did, counted as it happens: shows a run exercised each path. */
export interface TaskRuntimeStats {
  admitted: number;
  /** Deliveries received with attempt above 1 (a nack with retry or an expiry came first). */
  redelivered: number;
  completed: number;
  nackedRetry: number;
  nackedNoRetry: number;
  /** LEASE_LOST answers heard by a renew, complete or nack. */
  leaseLostAnswers: number;
  /** The workers' lease_lost events, by cause. */
  leaseLostEvents: { LEASE_LOST: number; EXPIRED: number };
}

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * What task clients were told, checked as replies arrive where that suffices (one taskKey, one
 * task; attempt at most 5; no delivery of a message the client heard ACKED; no token accepted
 * after its lease ran out) and against the journal at the end (checkTasksFinal).
 */
export class TaskLedger {
  readonly taskIdByKey = new Map<string, string>();
  /** Every task a submitter or coordinator heard of, in the order heard: what the cancellers pick from. */
  readonly taskIds: string[] = [];
  private readonly heardIds = new Set<string>();
  readonly claims = new Map<string, ClaimRecord>();
  /** Per message, when a complete that answered 200 was first heard. */
  private readonly ackedHeardAtMs = new Map<string, number>();
  /** Tasks whose cancel answered 200. */
  readonly cancelledTaskIds = new Set<string>();

  constructor(private readonly violation: (message: string) => void) {}

  submitted(taskKey: string, taskId: string): void {
    const known = this.taskIdByKey.get(taskKey);
    if (known !== undefined && known !== taskId) this.violation(`taskKey ${taskKey} answered two tasks: ${known} and ${taskId}`);
    if (known !== undefined) return;
    this.taskIdByKey.set(taskKey, taskId);
    this.heardOf(taskId);
  }

  readonly stats: TaskRuntimeStats = { admitted: 0, redelivered: 0, completed: 0, nackedRetry: 0, nackedNoRetry: 0, leaseLostAnswers: 0, leaseLostEvents: { LEASE_LOST: 0, EXPIRED: 0 } };

  delivered(claim: Omit<ClaimRecord, 'completedHeardAtMs' | 'leaseLostHeardAtMs' | 'runtimeLostAtMs'>, claimAtMs: number): void {
    if (!this.claims.has(claim.token)) {
      this.stats.admitted++;
      if (claim.attempt > 1) this.stats.redelivered++;
    }
    if (claim.attempt > maxAttempts) this.violation(`task delivery ${claim.messageId} delivered with attempt ${claim.attempt} > ${maxAttempts}`);
    const ackedAtMs = this.ackedHeardAtMs.get(claim.messageId);
    if (ackedAtMs !== undefined && ackedAtMs <= claimAtMs) this.violation(`task delivery ${claim.messageId} delivered again (attempt ${claim.attempt}, to ${claim.session}) after a complete of it answered 200`);
    if (!this.claims.has(claim.token)) this.claims.set(claim.token, { ...claim });
  }

  renewed(token: string, leaseExpiresAtMs: number): void {
    const record = this.claims.get(token)!;
    record.leaseExpiresAtMs = Math.max(record.leaseExpiresAtMs, leaseExpiresAtMs);
  }

  /** A renew, complete or nack answered 200; `sentAtMs` is when it was sent (its commit is no earlier). */
  accepted(token: string, what: string, sentAtMs: number, heardAtMs: number): void {
    const record = this.claims.get(token)!;
    if (sentAtMs >= record.leaseExpiresAtMs) this.violation(`task delivery ${record.messageId}: ${what} by ${record.session} sent at ${iso(sentAtMs)} answered 200 after its lease ran out at ${iso(record.leaseExpiresAtMs)}`);
    if (what !== 'complete') return;
    if (record.completedHeardAtMs === undefined) this.stats.completed++;
    record.completedHeardAtMs ??= heardAtMs;
    if (!this.ackedHeardAtMs.has(record.messageId)) this.ackedHeardAtMs.set(record.messageId, heardAtMs);
  }

  /** Checked at the end: a LEASE_LOST before the lease ran out needs a journal event that ended the claim first (a cancel). */
  leaseLost(token: string, heardAtMs: number, what: 'renew' | 'complete' | 'nack'): void {
    const record = this.claims.get(token)!;
    record.leaseLostHeardAtMs ??= heardAtMs;
    if (what !== 'renew') record.finishLostHeard ??= what;
    this.stats.leaseLostAnswers++;
  }

  /** A runtime worker reported the lease of `token` lost (its lease_lost event): from then on it must send nothing with that token. */
  runtimeLeaseLost(token: string, cause: 'LEASE_LOST' | 'EXPIRED', atMs: number): void {
    this.stats.leaseLostEvents[cause]++;
    const record = this.claims.get(token);
    if (record) record.runtimeLostAtMs ??= atMs;
  }

  /**
   * The runtime check: a runtime worker is about to send a complete or nack with `token`. Once
   * it observed the lease lost it must not (the delivery may be someone else's by now), nor once
   * the lease deadline it holds for the token (`deadlineMs`, as it computes it from what it was
   * told) has passed: a finish that waited past its lease must be withdrawn, not sent.
   */
  runtimeSends(token: string, what: 'complete' | 'nack', atMs: number, deadlineMs?: number): void {
    const record = this.claims.get(token);
    if (record && deadlineMs !== undefined && atMs >= deadlineMs && record.runtimeLostAtMs === undefined) {
      this.violation(`runtime: ${record.session} sent ${what} for task delivery ${record.messageId} (attempt ${record.attempt}) at ${iso(atMs)}, after its lease ran out at ${iso(deadlineMs)} by its own deadline`);
    }
    if (record?.runtimeLostAtMs === undefined) return;
    this.violation(`runtime: ${record.session} sent ${what} for task delivery ${record.messageId} (attempt ${record.attempt}) at ${iso(atMs)} with a token whose lease it reported lost at ${iso(record.runtimeLostAtMs)}`);
  }

  /** A task heard of other than by submit (a group's member, an outside task a coordinator joined): the canceller may pick it too. */
  heardOf(taskId: string): void {
    if (this.heardIds.has(taskId)) return;
    this.heardIds.add(taskId);
    this.taskIds.push(taskId);
  }

  cancelAnswered(taskId: string): void {
    this.cancelledTaskIds.add(taskId);
  }
}

// ---------------------------------------------------------------------------------------------
// The journal replay. The memory store runs one transaction at a time and an admission appends
// its resource events and its message.claimed in one statement, so the journal order is the
// commit order and an admission's events sit together, right before its message.claimed.

type DeliveryState = 'READY' | 'CLAIMED' | 'ACKED' | 'DEAD' | 'CANCELLED';

/** What one claim holds, by resource id, and what of it has been released so far. */
interface Holding {
  attempt: number;
  admitted: boolean;
  claimed: ClaimedView;
  pools: Map<string, number>;
  workLimitId: string | null;
  reservationIds: string[];
  released: { pools: Map<string, number>; workLimit: boolean };
}

interface Delivery {
  id: string;
  mailboxId: string;
  scopeId: string;
  taskId: string | null;
  state: DeliveryState;
  attempt: number;
  leaseExpiresAtMs: number;
  holderSession: string | null;
  holding: Holding | null;
  /** `${attempt}` → when and how that claim ended. */
  ends: Map<number, { type: string; atMs: number }>;
}

interface Reservation {
  budgetId: string;
  remainingMinor: bigint;
  state: string;
  messageId: string | null;
}

/** A resource event of an admission, waiting for its message.claimed in the same statement. */
interface PendingClaim {
  messageId: string;
  event: JournalEvent;
}

export interface TaskReplay {
  deliveries: Map<string, Delivery>;
  /** Per task, its terminal events in journal order. */
  terminals: Map<string, string[]>;
  /** `${messageId} ${attempt}` → data.claimed of an admitted claim. */
  admittedClaims: Map<string, ClaimedView>;
  poolInUse: Map<string, number>;
  workLimitInUse: Map<string, number>;
  reservations: Map<string, Reservation>;
  /** A group's gate scope → its parentScopeId (group.created): a claim on a scope takes from its whole subtree. */
  scopeParents: Map<string, string>;
}

/** Is `scopeId` the claim's scope or below it (a gate scope of a group under it, at any depth)? */
export function inSubtree(scopeParents: ReadonlyMap<string, string>, scopeId: string, claimScopeId: string): boolean {
  const seen = new Set<string>();
  for (let s: string | undefined = scopeId; s !== undefined && !seen.has(s); s = scopeParents.get(s)) {
    if (s === claimScopeId) return true;
    seen.add(s);
  }
  return false;
}

const terminalTaskEvents = new Set(['task.succeeded', 'task.failed', 'task.cancelled', 'task.expired']);

/**
 * Replays the journal's task deliveries and resources in commit order. Problems named: two live
 * leases on one delivery (any claim of a delivery that is not READY), a claim of an ACKED, DEAD or
 * CANCELLED delivery, attempts not counting up by one or above 5, a task with two terminal
 * outcomes or moving after one, pool units or work-limit slots above their limit (or not what
 * the event says), a partial admission (resource events that do not match the claim's
 * data.claimed), a claim that ended without releasing what it held (or an expiry/nack/cancel
 * leaving its reservation ACTIVE), a release of what was not held, and (when `fifo`) an
 * admission passing over an older READY delivery of its mailbox and scope that was admissible.
 */
export function replayTasks(journal: readonly JournalEvent[], world: TaskWorld, facts: ReadonlyMap<string, DeliveryFacts>, problems: string[], fifo: boolean): TaskReplay {
  const replay: TaskReplay = {
    deliveries: new Map(),
    terminals: new Map(),
    admittedClaims: new Map(),
    poolInUse: new Map(world.pools.map((p) => [p.id, 0])),
    workLimitInUse: new Map(world.workLimits.map((w) => [w.id, 0])),
    reservations: new Map(),
    scopeParents: new Map(),
  };
  const state = new ResourceState(world, replay);
  let pending: PendingClaim[] = [];
  const mailboxes = new Set(world.mailboxIds);
  const ids = new Set([...world.pools, ...world.workLimits, ...world.allowances, ...world.budgets].map((r) => r.id));

  for (const e of journal) {
    const admissionEvent = e.data.messageId !== undefined && ['pool.units_claimed', 'work_limit.slot_claimed', 'allowance.consumed', 'budget.reserved'].includes(e.type);
    if (pending.length > 0 && !admissionEvent && !(e.type === 'message.claimed' && mailboxes.has(e.aggregateId))) {
      problems.push(`partial admission: ${pending.map((p) => p.event.type).join(', ')} for delivery ${pending[0]!.messageId} without its message.claimed (next event ${e.type})`);
      pending = [];
    }
    if (admissionEvent && ids.has(e.aggregateId)) {
      pending.push({ messageId: String(e.data.messageId), event: e });
      continue;
    }
    if (e.type === 'group.created' && typeof e.data.parentScopeId === 'string' && e.scopeId) {
      replay.scopeParents.set(e.scopeId, e.data.parentScopeId);
    } else if (e.aggregateType === 'mailbox' && mailboxes.has(e.aggregateId)) {
      onDeliveryEvent(e, replay, state, facts, pending, problems, fifo);
      pending = [];
    } else if (e.aggregateType === 'task') {
      onTaskEvent(e, replay, problems);
    } else if (ids.has(e.aggregateId)) {
      state.applyRelease(e, problems);
    }
  }
  if (pending.length > 0) problems.push(`partial admission: ${pending.length} resource claim event(s) for delivery ${pending[0]!.messageId} at the end of the journal without its message.claimed`);
  return replay;
}

function onTaskEvent(e: JournalEvent, replay: TaskReplay, problems: string[]): void {
  const done = replay.terminals.get(e.aggregateId) ?? [];
  if (terminalTaskEvents.has(e.type)) {
    if (done.length > 0) problems.push(`task ${e.aggregateId} recorded a second terminal outcome: ${e.type} after ${done.join(', ')}`);
    done.push(e.type);
    replay.terminals.set(e.aggregateId, done);
  } else if ((e.type === 'task.running' || e.type === 'task.requeued') && done.length > 0) {
    problems.push(`task ${e.aggregateId} moved (${e.type}) after its terminal ${done[0]}`);
  }
}

function onDeliveryEvent(e: JournalEvent, replay: TaskReplay, state: ResourceState, facts: ReadonlyMap<string, DeliveryFacts>, pending: PendingClaim[], problems: string[], fifo: boolean): void {
  const id = String(e.data.messageId);
  const d = replay.deliveries.get(id);
  if (e.type === 'message.sent') {
    if (d) problems.push(`task delivery ${id} sent twice`);
    replay.deliveries.set(id, { id, mailboxId: e.aggregateId, scopeId: String(e.scopeId), taskId: null, state: 'READY', attempt: 0, leaseExpiresAtMs: 0, holderSession: null, holding: null, ends: new Map() });
    return;
  }
  if (!d) {
    if (e.data.messageId !== undefined) problems.push(`task delivery ${id}: ${e.type} before it was sent`);
    return;
  }
  const live = d.state === 'CLAIMED' && d.leaseExpiresAtMs > e.occurredAt;
  switch (e.type) {
    case 'message.claimed':
      return onClaimed(e, d, replay, state, facts, pending, problems, fifo);
    case 'message.lease_renewed':
      if (!live) problems.push(`task delivery ${id}: lease renewed at ${iso(e.occurredAt)} without a live claim (${d.state})`);
      else d.leaseExpiresAtMs = Date.parse(String(e.data.leaseExpiresAt));
      return;
    case 'message.acked':
      if (!live) problems.push(`task delivery ${id} ACKED at ${iso(e.occurredAt)} without a live claim (${d.state})`);
      return endClaim(e, d, 'ACKED', false, state, problems);
    case 'message.nacked':
      if (!live) problems.push(`task delivery ${id} nacked at ${iso(e.occurredAt)} without a live claim (${d.state})`);
      return endClaim(e, d, String(e.data.state) === 'DEAD' ? 'DEAD' : 'READY', true, state, problems);
    case 'message.lease_expired':
      if (d.state !== 'CLAIMED' || d.leaseExpiresAtMs > e.occurredAt) problems.push(`task delivery ${id}: lease expired at ${iso(e.occurredAt)} while ${d.state === 'CLAIMED' ? `live until ${iso(d.leaseExpiresAtMs)}` : d.state}`);
      return endClaim(e, d, String(e.data.state) === 'DEAD' ? 'DEAD' : 'READY', true, state, problems);
    case 'message.cancelled':
      if (d.state !== 'READY' && d.state !== 'CLAIMED') problems.push(`task delivery ${id} cancelled while ${d.state}`);
      return endClaim(e, d, 'CANCELLED', true, state, problems);
  }
}

function onClaimed(e: JournalEvent, d: Delivery, replay: TaskReplay, state: ResourceState, facts: ReadonlyMap<string, DeliveryFacts>, pending: PendingClaim[], problems: string[], fifo: boolean): void {
  const at = iso(e.occurredAt);
  if (d.state === 'CLAIMED') problems.push(`task delivery ${d.id} claimed by ${String(e.data.holderSession)} at ${at} while ${d.holderSession}'s claim (lease until ${iso(d.leaseExpiresAtMs)}) had not ended: two live leases`);
  else if (d.state !== 'READY') problems.push(`task delivery ${d.id} claimed at ${at} after it was ${d.state}`);
  const claimScopeId = String(e.data.claimScopeId ?? d.scopeId);
  if (!inSubtree(replay.scopeParents, d.scopeId, claimScopeId)) problems.push(`task delivery ${d.id} (scope ${d.scopeId}) claimed at ${at} by a request on scope ${claimScopeId}, which is not its scope nor above it`);
  const attempt = Number(e.data.attempt);
  if (attempt > maxAttempts) problems.push(`task delivery ${d.id} claimed for attempt ${attempt} > ${maxAttempts}`);
  if (attempt !== d.attempt + 1) problems.push(`task delivery ${d.id}: claim counted attempt ${attempt} after ${d.attempt}`);
  const admitted = e.data.admitted === true;
  const claimed = (e.data.claimed as ClaimedView | undefined) ?? { pools: [], quotas: [], budgets: [], workLimit: null };
  if (!admitted && pending.length > 0) problems.push(`task delivery ${d.id}: resource claims (${pending.map((p) => p.event.type).join(', ')}) with a claim that was not an admission`);
  if (admitted) {
    checkAllOrNothing(d.id, claimed, pending, state, problems);
    if (fifo) checkFifo(e, d, replay, state, facts, problems);
    for (const p of pending) state.applyClaim(p.event, problems);
    replay.admittedClaims.set(`${d.id} ${attempt}`, claimed);
  }
  Object.assign(d, {
    state: 'CLAIMED',
    attempt,
    leaseExpiresAtMs: Date.parse(String(e.data.leaseExpiresAt)),
    holderSession: String(e.data.holderSession),
    holding: admitted ? state.holdingOf(attempt, claimed, pending) : null,
  });
}

/** Every resource data.claimed names has its one claim event for this delivery, and no event claims more. */
function checkAllOrNothing(messageId: string, claimed: ClaimedView, pending: PendingClaim[], state: ResourceState, problems: string[]): void {
  const expected = [
    ...claimed.pools.map((p) => `pool.units_claimed ${state.idOf('pool', p.name)} ${p.units}`),
    ...claimed.quotas.map((q) => `allowance.consumed ${state.idOf('allowance', q.name)} ${q.units}`),
    ...claimed.budgets.map((b) => `budget.reserved ${state.idOf('budget', b.name)} ${b.amountMinor} ${b.reservationId}`),
    ...(claimed.workLimit === null ? [] : [`work_limit.slot_claimed ${state.idOf('work_limit', claimed.workLimit)}`]),
  ].sort();
  const found = pending
    .map(({ event: e }) => {
      if (e.type === 'budget.reserved') return `${e.type} ${e.aggregateId} ${String(e.data.amountMinor)} ${String(e.data.reservationId)}`;
      if (e.type === 'work_limit.slot_claimed') return `${e.type} ${e.aggregateId}`;
      return `${e.type} ${e.aggregateId} ${Number(e.data.units)}`;
    })
    .sort();
  const strangers = pending.filter((p) => p.messageId !== messageId);
  if (strangers.length > 0) problems.push(`partial admission: delivery ${messageId} was admitted among resource claims of delivery ${strangers[0]!.messageId}`);
  if (expected.join('|') !== found.join('|')) problems.push(`partial admission of delivery ${messageId}: it says it claimed [${expected.join('; ')}] but the journal has [${found.join('; ')}]`);
}

/**
 * No older READY delivery of the same mailbox in the claim's scope subtree (the scope the admit
 * named and the gate scopes of groups below it) was admissible at the admission's position in
 * the journal (the state before its own claims): admission is FIFO over that subtree among the
 * admissible ones, passing over only those whose resources were short.
 */
function checkFifo(e: JournalEvent, d: Delivery, replay: TaskReplay, state: ResourceState, facts: ReadonlyMap<string, DeliveryFacts>, problems: string[]): void {
  const mine = facts.get(d.id);
  if (!mine) return void problems.push(`task delivery ${d.id} was admitted but is not in the store`);
  const claimScopeId = String(e.data.claimScopeId ?? d.scopeId);
  for (const other of replay.deliveries.values()) {
    if (other.state !== 'READY' || other.mailboxId !== d.mailboxId || other.id === d.id || !inSubtree(replay.scopeParents, other.scopeId, claimScopeId)) continue;
    const theirs = facts.get(other.id);
    if (!theirs || theirs.seq >= mine.seq) continue;
    if (state.admissible(theirs.requirements, e.occurredAt)) {
      problems.push(`admission of task delivery ${d.id} at ${iso(e.occurredAt)} passed over the older READY delivery ${other.id}, which was admissible then`);
      return;
    }
  }
}

/**
 * The end of a claim (ACKED, nacked, expired, cancelled): everything it held in pools and work
 * limits was released before it, in its transaction; on a failure or cancel its reservations are
 * no longer ACTIVE (voided now, or settled or voided earlier by the worker).
 */
function endClaim(e: JournalEvent, d: Delivery, next: DeliveryState, voids: boolean, state: ResourceState, problems: string[]): void {
  const h = d.holding;
  if (h && d.state === 'CLAIMED') {
    for (const [poolId, units] of h.pools) {
      const released = h.released.pools.get(poolId) ?? 0;
      if (released !== units) problems.push(`task delivery ${d.id}: claim (attempt ${h.attempt}) ended by ${e.type} at ${iso(e.occurredAt)} having released ${released} of its ${units} units of pool ${state.nameOf(poolId)}`);
    }
    if (h.workLimitId !== null && !h.released.workLimit) problems.push(`task delivery ${d.id}: claim (attempt ${h.attempt}) ended by ${e.type} at ${iso(e.occurredAt)} without releasing its slot of work limit ${state.nameOf(h.workLimitId)}`);
    if (voids) {
      for (const id of h.reservationIds) {
        if (state.reservationState(id) === 'ACTIVE') problems.push(`task delivery ${d.id}: claim (attempt ${h.attempt}) ended by ${e.type} leaving its reservation ${id} ACTIVE`);
      }
    }
  }
  if (d.state === 'CLAIMED') d.ends.set(d.attempt, { type: e.type, atMs: e.occurredAt });
  Object.assign(d, { state: next, leaseExpiresAtMs: 0, holding: null });
}

/** Pools, work limits, allowance windows and budget balances, as the journal has them so far. */
class ResourceState {
  private readonly byName = new Map<string, string>();
  private readonly names = new Map<string, string>();
  /** `${allowanceId} ${windowStartsAt ms}` → units taken in that window. */
  private readonly windowUnits = new Map<string, number>();
  private readonly waiting = new Map<string, number>();
  private readonly cooldownUntilMs = new Map<string, number>();
  private readonly availableMinor = new Map<string, bigint>();

  constructor(
    private readonly world: TaskWorld,
    private readonly replay: TaskReplay,
  ) {
    for (const [kind, list] of [['pool', world.pools], ['work_limit', world.workLimits], ['allowance', world.allowances], ['budget', world.budgets]] as const) {
      for (const r of list) {
        this.byName.set(`${kind} ${r.name}`, r.id);
        this.names.set(r.id, r.name);
      }
    }
    for (const b of world.budgets) this.availableMinor.set(b.id, b.limitMinor);
  }

  idOf(kind: string, name: string): string {
    return this.byName.get(`${kind} ${name}`) ?? `unknown ${kind} ${name}`;
  }

  nameOf(id: string): string {
    return this.names.get(id) ?? id;
  }

  reservationState(id: string): string | undefined {
    return this.replay.reservations.get(id)?.state;
  }

  holdingOf(attempt: number, claimed: ClaimedView, pending: PendingClaim[]): Holding {
    const pools = new Map(claimed.pools.map((p) => [this.idOf('pool', p.name), p.units]));
    return {
      attempt,
      admitted: true,
      claimed,
      pools,
      workLimitId: claimed.workLimit === null ? null : this.idOf('work_limit', claimed.workLimit),
      reservationIds: pending.filter((p) => p.event.type === 'budget.reserved').map((p) => String(p.event.data.reservationId)),
      released: { pools: new Map(), workLimit: false },
    };
  }

  /** Would admission have found every requirement fit, at `nowMs`, in this state? */
  admissible(r: DeliveryRequirements | null, nowMs: number): boolean {
    if (r === null) return true;
    for (const p of r.pools) if ((this.replay.poolInUse.get(p.id) ?? 0) + p.units > this.capacityOf(p.id)) return false;
    for (const q of r.quotas) {
      const a = this.world.allowances.find((x) => x.id === q.id);
      if (!a || (this.waiting.get(a.id) ?? 0) > 0 || nowMs < (this.cooldownUntilMs.get(a.id) ?? 0)) return false;
      const windowMs = a.windowSeconds * 1_000;
      const start = a.createdAt + Math.floor((nowMs - a.createdAt) / windowMs) * windowMs;
      if ((this.windowUnits.get(`${a.id} ${start}`) ?? 0) + q.units > a.unitsLimit) return false;
    }
    for (const b of r.budgets) if ((this.availableMinor.get(b.id) ?? 0n) < BigInt(b.reserveMinor)) return false;
    if (r.workLimit !== null && (this.replay.workLimitInUse.get(r.workLimit.id) ?? 0) + 1 > this.maxConcurrentOf(r.workLimit.id)) return false;
    return true;
  }

  applyClaim(e: JournalEvent, problems: string[]): void {
    const at = iso(e.occurredAt);
    switch (e.type) {
      case 'pool.units_claimed': {
        const inUse = (this.replay.poolInUse.get(e.aggregateId) ?? 0) + Number(e.data.units);
        this.replay.poolInUse.set(e.aggregateId, inUse);
        if (inUse > this.capacityOf(e.aggregateId)) problems.push(`pool ${this.nameOf(e.aggregateId)}: ${inUse} units in use at ${at}, capacity ${this.capacityOf(e.aggregateId)}`);
        if (Number(e.data.inUse) !== inUse) problems.push(`pool ${this.nameOf(e.aggregateId)}: claim at ${at} says inUse ${String(e.data.inUse)}, the journal replays ${inUse}`);
        return;
      }
      case 'work_limit.slot_claimed': {
        const inUse = (this.replay.workLimitInUse.get(e.aggregateId) ?? 0) + 1;
        this.replay.workLimitInUse.set(e.aggregateId, inUse);
        if (inUse > this.maxConcurrentOf(e.aggregateId)) problems.push(`work limit ${this.nameOf(e.aggregateId)}: ${inUse} slots in use at ${at}, maxConcurrent ${this.maxConcurrentOf(e.aggregateId)}`);
        if (Number(e.data.inUse) !== inUse) problems.push(`work limit ${this.nameOf(e.aggregateId)}: claim at ${at} says inUse ${String(e.data.inUse)}, the journal replays ${inUse}`);
        return;
      }
      default:
        return this.applyOther(e);
    }
  }

  /** Releases, and the allowance and budget events that are not an admission's claims. */
  applyRelease(e: JournalEvent, problems: string[]): void {
    const messageId = String(e.data.messageId);
    const holding = this.replay.deliveries.get(messageId)?.holding;
    const at = iso(e.occurredAt);
    switch (e.type) {
      case 'pool.units_released': {
        const units = Number(e.data.units);
        const held = holding?.pools.get(e.aggregateId) ?? 0;
        const already = holding?.released.pools.get(e.aggregateId) ?? 0;
        if (already + units > held) problems.push(`pool ${this.nameOf(e.aggregateId)}: delivery ${messageId} released ${units} units at ${at} but held ${held - already}`);
        holding?.released.pools.set(e.aggregateId, already + units);
        const inUse = (this.replay.poolInUse.get(e.aggregateId) ?? 0) - units;
        this.replay.poolInUse.set(e.aggregateId, inUse);
        if (inUse < 0 || Number(e.data.inUse) !== inUse) problems.push(`pool ${this.nameOf(e.aggregateId)}: release at ${at} says inUse ${String(e.data.inUse)}, the journal replays ${inUse}`);
        return;
      }
      case 'work_limit.slot_released': {
        if (!holding || holding.workLimitId !== e.aggregateId || holding.released.workLimit) problems.push(`work limit ${this.nameOf(e.aggregateId)}: delivery ${messageId} released a slot at ${at} that it did not hold`);
        if (holding) holding.released.workLimit = true;
        const inUse = (this.replay.workLimitInUse.get(e.aggregateId) ?? 0) - 1;
        this.replay.workLimitInUse.set(e.aggregateId, inUse);
        if (inUse < 0 || Number(e.data.inUse) !== inUse) problems.push(`work limit ${this.nameOf(e.aggregateId)}: release at ${at} says inUse ${String(e.data.inUse)}, the journal replays ${inUse}`);
        return;
      }
      default:
        return this.applyOther(e);
    }
  }

  private applyOther(e: JournalEvent): void {
    const d = e.data;
    switch (e.type) {
      case 'allowance.consumed':
      case 'allowance.waiter_granted': {
        const key = `${e.aggregateId} ${Date.parse(String(d.windowStartsAt))}`;
        this.windowUnits.set(key, (this.windowUnits.get(key) ?? 0) + Number(d.units));
        if (e.type === 'allowance.waiter_granted') this.waiting.set(e.aggregateId, (this.waiting.get(e.aggregateId) ?? 1) - 1);
        return;
      }
      case 'allowance.waiter_queued':
        return void this.waiting.set(e.aggregateId, (this.waiting.get(e.aggregateId) ?? 0) + 1);
      case 'allowance.waiter_expired':
      case 'allowance.waiter_cancelled':
        return void this.waiting.set(e.aggregateId, (this.waiting.get(e.aggregateId) ?? 1) - 1);
      case 'allowance.cooldown_started':
        return void this.cooldownUntilMs.set(e.aggregateId, Math.max(this.cooldownUntilMs.get(e.aggregateId) ?? 0, Date.parse(String(d.cooldownUntil))));
      case 'budget.reserved': {
        const amount = BigInt(String(d.amountMinor));
        this.availableMinor.set(e.aggregateId, (this.availableMinor.get(e.aggregateId) ?? 0n) - amount);
        this.replay.reservations.set(String(d.reservationId), { budgetId: e.aggregateId, remainingMinor: amount, state: 'ACTIVE', messageId: d.messageId === undefined ? null : String(d.messageId) });
        return;
      }
      case 'budget.settled': {
        // core/src/budgets/rules.ts settleFunds: the remainder pays first, the excess comes from available.
        const r = this.replay.reservations.get(String(d.reservationId));
        if (!r) return;
        const amount = BigInt(String(d.amountMinor));
        const fromReserved = amount < r.remainingMinor ? amount : r.remainingMinor;
        this.availableMinor.set(e.aggregateId, (this.availableMinor.get(e.aggregateId) ?? 0n) - (amount - fromReserved));
        r.remainingMinor -= fromReserved;
        r.state = String(d.reservationState);
        return;
      }
      case 'budget.voided': {
        const r = this.replay.reservations.get(String(d.reservationId));
        this.availableMinor.set(e.aggregateId, (this.availableMinor.get(e.aggregateId) ?? 0n) + BigInt(String(d.amountMinor)));
        if (r) Object.assign(r, { remainingMinor: 0n, state: String(d.reservationState) });
        return;
      }
    }
  }

  private capacityOf(id: string): number {
    return this.world.pools.find((p) => p.id === id)?.capacity ?? 0;
  }

  private maxConcurrentOf(id: string): number {
    return this.world.workLimits.find((w) => w.id === id)?.maxConcurrent ?? 0;
  }
}

// ---------------------------------------------------------------------------------------------

/** After every step: each pool and work limit in the store holds 0 to its limit. */
export async function checkTaskResourcesStep(store: Store, spaceId: string, world: TaskWorld): Promise<string[]> {
  const problems: string[] = [];
  await store.read(async (tx) => {
    for (const p of world.pools) {
      const row = await tx.pools.get(spaceId, p.id);
      if (!row || row.inUse < 0 || row.inUse > row.capacity) problems.push(`pool ${p.name}: ${row?.inUse} units in use, capacity ${p.capacity}`);
    }
    for (const w of world.workLimits) {
      const row = await tx.workLimits.get(spaceId, w.id);
      if (!row || row.inUse < 0 || row.inUse > row.maxConcurrent) problems.push(`work limit ${w.name}: ${row?.inUse} slots in use, maxConcurrent ${w.maxConcurrent}`);
    }
  });
  return problems;
}

/** The store's deliveries of the task mailboxes: FIFO position, requirements, state. */
async function readDeliveries(store: Store, spaceId: string, world: TaskWorld): Promise<Map<string, DeliveryFacts & { state: string; attempt: number; leaseExpiresAt: number | null; taskId: string | null }>> {
  const out = new Map<string, DeliveryFacts & { state: string; attempt: number; leaseExpiresAt: number | null; taskId: string | null }>();
  await store.read(async (tx) => {
    for (const mailboxId of world.mailboxIds) {
      for (let after: number | null = null; ; ) {
        const page = await tx.messages.list(spaceId, mailboxId, null, after, 500);
        if (page.length === 0) break;
        for (const m of page) out.set(m.id, { seq: m.seq, requirements: m.requirements, state: m.state, attempt: m.attempt, leaseExpiresAt: m.leaseExpiresAt, taskId: m.taskId });
        after = page.at(-1)!.seq;
      }
    }
  });
  return out;
}

/**
 * The final task checks: the journal replay above, then the end state (after the liveness
 * phase: no pool unit, slot or admission reservation still held, nothing CLAIMED past its lease,
 * store rows equal to the replay), then what clients were told against the journal.
 */
export async function checkTasksFinal(store: Store, spaceId: string, world: TaskWorld, journal: readonly JournalEvent[], ledger: TaskLedger, nowMs: number, fifo: boolean): Promise<string[]> {
  const problems: string[] = [];
  const deliveries = await readDeliveries(store, spaceId, world);
  const replay = replayTasks(journal, world, deliveries, problems, fifo);
  checkDrained(replay, world, problems);
  await checkStoreAgrees(store, spaceId, world, replay, deliveries, nowMs, problems);
  checkClients(replay, ledger, deliveries, problems);
  return problems;
}

export function checkDrained(replay: TaskReplay, world: TaskWorld, problems: string[]): void {
  for (const p of world.pools) if (replay.poolInUse.get(p.id) !== 0) problems.push(`pool ${p.name}: ${replay.poolInUse.get(p.id)} units still in use after the liveness phase`);
  for (const w of world.workLimits) if (replay.workLimitInUse.get(w.id) !== 0) problems.push(`work limit ${w.name}: ${replay.workLimitInUse.get(w.id)} slots still in use after the liveness phase`);
  for (const [id, r] of replay.reservations) if (r.state === 'ACTIVE' && r.messageId !== null) problems.push(`admission reservation ${id} (delivery ${r.messageId}) still ACTIVE after the liveness phase`);
}

async function checkStoreAgrees(store: Store, spaceId: string, world: TaskWorld, replay: TaskReplay, deliveries: Awaited<ReturnType<typeof readDeliveries>>, nowMs: number, problems: string[]): Promise<void> {
  for (const [id, m] of deliveries) {
    const replayed = replay.deliveries.get(id);
    if (!replayed) problems.push(`task delivery ${id} is in the store but was never sent in the journal`);
    else if (replayed.state !== m.state || replayed.attempt !== m.attempt) problems.push(`task delivery ${id}: store says ${m.state} attempt ${m.attempt}, the journal replays ${replayed.state} attempt ${replayed.attempt}`);
    if (m.state === 'CLAIMED' && m.leaseExpiresAt! <= nowMs) problems.push(`task delivery ${id} still CLAIMED past its lease (${iso(m.leaseExpiresAt!)}) after the liveness phase`);
  }
  await store.read(async (tx) => {
    for (const p of world.pools) {
      const row = await tx.pools.get(spaceId, p.id);
      if (row?.inUse !== replay.poolInUse.get(p.id)) problems.push(`pool ${p.name}: store says ${row?.inUse} in use, the journal replays ${replay.poolInUse.get(p.id)}`);
    }
    for (const w of world.workLimits) {
      const row = await tx.workLimits.get(spaceId, w.id);
      if (row?.inUse !== replay.workLimitInUse.get(w.id)) problems.push(`work limit ${w.name}: store says ${row?.inUse} in use, the journal replays ${replay.workLimitInUse.get(w.id)}`);
    }
    for (const b of world.budgets) {
      const row = await tx.budgets.get(spaceId, b.id);
      const active = await tx.reservations.listActive(spaceId, b.id);
      if (!row || row.reservedMinor !== 0n || active.length > 0) problems.push(`task budget ${b.name}: ${active.length} reservations still ACTIVE (${row?.reservedMinor} reserved) after the liveness phase`);
    }
    for (const m of deliveries.values()) {
      if (m.taskId === null) continue;
      const task = await tx.tasks.get(spaceId, m.taskId);
      const terminal = replay.terminals.get(m.taskId)?.[0];
      const expected = terminal === undefined ? undefined : terminal.slice('task.'.length).toUpperCase();
      if (task && ['SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED'].includes(task.state) !== (expected !== undefined)) problems.push(`task ${task.id}: store says ${task.state}, the journal's terminal outcome is ${terminal ?? 'none'}`);
      else if (task && expected !== undefined && task.state !== expected) problems.push(`task ${task.id}: store says ${task.state}, the journal says ${terminal}`);
      if (task && task.attempts > maxAttempts) problems.push(`task ${task.id}: ${task.attempts} attempts > ${maxAttempts}`);
    }
  });
}

/** What clients were told, against the journal. */
function checkClients(replay: TaskReplay, ledger: TaskLedger, deliveries: Awaited<ReturnType<typeof readDeliveries>>, problems: string[]): void {
  for (const claim of ledger.claims.values()) {
    const end = replay.deliveries.get(claim.messageId)?.ends.get(claim.attempt);
    if (claim.claimed !== null) {
      const journalClaim = replay.admittedClaims.get(`${claim.messageId} ${claim.attempt}`);
      if (!journalClaim) problems.push(`task delivery ${claim.messageId}: admit told ${claim.session} it was admitted (attempt ${claim.attempt}) but the journal has no such admission`);
      else if (canonical(journalClaim) !== canonical(claim.claimed)) problems.push(`task delivery ${claim.messageId}: admit told ${claim.session} it claimed ${canonical(claim.claimed)}, the journal says ${canonical(journalClaim)}`);
    }
    if (claim.completedHeardAtMs !== undefined) {
      if (end?.type !== 'message.acked') problems.push(`task delivery ${claim.messageId}: ${claim.session}'s complete answered 200 but its claim (attempt ${claim.attempt}) ended by ${end?.type ?? 'nothing'}`);
      const taskId = deliveries.get(claim.messageId)?.taskId;
      const terminal = taskId ? replay.terminals.get(taskId)?.[0] : undefined;
      // A task whose deadline passed while its delivery was claimed is EXPIRED, and the claim runs on: its complete no longer changes the task.
      if (taskId && terminal !== 'task.succeeded' && terminal !== 'task.expired') problems.push(`task ${taskId}: the complete of its delivery answered 200 but its terminal outcome is ${terminal ?? 'none'}`);
    }
    // The worker sends one logical complete or nack per claim, and a retry of it (same
    // Idempotency-Key, a batch's too) replays: so if the journal shows this claim ended by that
    // very step, its answer cannot have been LEASE_LOST.
    const endedBy = { complete: 'message.acked', nack: 'message.nacked' } as const;
    if (claim.finishLostHeard !== undefined && claim.completedHeardAtMs === undefined && end?.type === endedBy[claim.finishLostHeard]) {
      problems.push(`task delivery ${claim.messageId}: ${claim.session}'s ${claim.finishLostHeard} answered LEASE_LOST, but the journal shows its claim (attempt ${claim.attempt}) ended by that ${claim.finishLostHeard}: a retry ran it again instead of replaying`);
    }
    if (claim.leaseLostHeardAtMs !== undefined && claim.leaseLostHeardAtMs < claim.leaseExpiresAtMs && claim.completedHeardAtMs === undefined && (end === undefined || end.atMs > claim.leaseLostHeardAtMs)) {
      problems.push(`task delivery ${claim.messageId}: ${claim.session} heard LEASE_LOST at ${iso(claim.leaseLostHeardAtMs)}, before its lease ran out at ${iso(claim.leaseExpiresAtMs)}, and nothing had ended the claim`);
    }
  }
  for (const taskId of ledger.cancelledTaskIds) {
    const terminal = replay.terminals.get(taskId)?.[0];
    if (terminal !== 'task.cancelled') problems.push(`task ${taskId}: cancel answered 200 but its terminal outcome is ${terminal ?? 'none'}`);
  }
}

/** A task as the deadline check needs it. */
export interface TaskDeadlineFacts {
  id: string;
  state: string;
  deadline: number | null;
}

/**
 * Task deadlines (docs/api.md "Deadline"), for every task a client heard of: a task.expired no
 * earlier than the deadline the task holds, and none still PENDING or RUNNING at the end whose
 * deadline passed before the last deadline sweep (`sweptUntilMs`). The deadlines are absolute
 * times the clients sent on their own, skewed, clocks.
 */
export async function checkTaskDeadlines(store: Store, spaceId: string, journal: readonly JournalEvent[], taskIds: readonly string[], sweptUntilMs: number): Promise<string[]> {
  const tasks = await store.read(async (tx) => {
    const found: TaskDeadlineFacts[] = [];
    for (const taskId of taskIds) {
      const task = await tx.tasks.get(spaceId, taskId);
      if (task) found.push({ id: task.id, state: task.state, deadline: task.deadline });
    }
    return found;
  });
  return judgeTaskDeadlines(tasks, journal, sweptUntilMs);
}

export function judgeTaskDeadlines(tasks: readonly TaskDeadlineFacts[], journal: readonly Pick<JournalEvent, 'type' | 'aggregateId' | 'occurredAt'>[], sweptUntilMs: number): string[] {
  const problems: string[] = [];
  const expiredAtMs = new Map(journal.filter((e) => e.type === 'task.expired').map((e) => [e.aggregateId, e.occurredAt]));
  for (const task of tasks) {
    if (task.deadline === null) continue;
    const expiredMs = expiredAtMs.get(task.id);
    if (expiredMs !== undefined && expiredMs < task.deadline) problems.push(`task ${task.id} expired at ${iso(expiredMs)}, before its deadline ${iso(task.deadline)}`);
    if ((task.state === 'PENDING' || task.state === 'RUNNING') && task.deadline <= sweptUntilMs) problems.push(`task ${task.id} is still ${task.state} at the end though its deadline ${iso(task.deadline)} passed before the last deadline sweep`);
  }
  return problems;
}

/** Canonical JSON of a claim view: lists in the order the server keeps them (name order). */
function canonical(c: ClaimedView): string {
  return JSON.stringify({ pools: c.pools.map((p) => [p.name, p.units]), quotas: c.quotas.map((q) => [q.name, q.units]), budgets: c.budgets.map((b) => [b.name, b.reservationId, b.amountMinor]), workLimit: c.workLimit });
}
