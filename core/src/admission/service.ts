import { assert } from '../assert';
import type { OpContext } from '../context';
import type { NewEvent } from '../events/model';
import type { ClaimedDelivery, ClaimRequest, LockedDelivery, Message } from '../messages/model';
import { claim, leaseUntil, newToken } from '../messages/rules';
import { claimedEvent, receivableMailbox } from '../messages/service';
import { deliveryView } from '../messages/views';
import { readyTopicsOf } from '../notifier';
import type { AdmitBody, AdmittedDeliveryView } from '../schemas/admission';
import * as taskHooks from '../tasks/service';
import { together } from '../store/together';
import type { TaskMoved } from '../tasks/service';
import { claimResources, Shortages } from './claims';
import { maxCandidatesPerAdmit, leasesOf, unlimitedLeases, type LeaseRoom, type ResourceKind } from './model';
import { maxKeptSavepoints } from '../batches/items';
import { claimedView } from './views';

/**
 * Admission (POST /tasks/admit): claims the oldest admissible READY task delivery of a mailbox
 * and scope together with every resource its task requires, all in one transaction or nothing.
 * Candidates come in FIFO (seq) order; one whose resources are short is passed over for the
 * next, its partial claims rolled back to a savepoint. See docs/lock-order.md.
 */

export interface AdmitAttempt {
  delivery: AdmittedDeliveryView | undefined;
  /**
   * When nothing was admitted: the topics whose commits could make a passed-over candidate
   * admissible (a task delivery READY in one of the scopes claimed from, plus each resource
   * found short), and the earliest time the clock alone could (a quota window's roll, a
   * cooldown's end). The long poll waits on these.
   */
  wakeTopics: string[];
  retryAtMs: number | null;
  /**
   * When nothing was admitted: the kinds of resource found short for the candidates examined
   * (empty when there was no candidate at all). Known without a statement of its own: metrics
   * count blocked admissions from it.
   */
  blockedBy: ResourceKind[];
  /**
   * When nothing was admitted: whether a candidate was passed over because `leases` (the plan's
   * agents at once) had too few left for it and its pool units. The route answers
   * CONCURRENCY_LIMITED then.
   */
  leasesShort: boolean;
}

/**
 * `leases`: what the plan's agents at once leaves (LeaseRoom). The caller has set aside one
 * delivery's lease, so a candidate that needs nothing is always claimed; one with requirements
 * takes its leases (itself and its pool units) when tried.
 */
export async function admit(ctx: OpContext, body: AdmitBody, leases: LeaseRoom = unlimitedLeases): Promise<AdmitAttempt> {
  const { token, tokenHash } = newToken(ctx.random);
  const inScope: ClaimRequest = {
    spaceId: ctx.spaceId,
    mailboxId: body.mailboxId,
    scopeIds: [body.scopeId],
    holder: body.holder,
    holderSession: body.holderSession,
    tokenHash,
    leaseExpiresAt: leaseUntil(body.leaseSeconds, ctx.nowMs, ctx.limits.maxLeaseSeconds),
    nowMs: ctx.nowMs,
  };
  // The first claim goes out with the mailbox read, in its round trip: it claims nothing when
  // gate scopes lie below the request's scope, and the mailbox read then names them. A refused
  // receiver (an INBOX) fails the transaction, the claim with it.
  const [{ scopeIds }, first] = await together(
    receivableMailbox(ctx.tx, ctx.spaceId, body.mailboxId, body.holder, body.scopeId),
    ctx.tx.messages.claimCandidate({ ...inScope, unlessGated: true, afterSeq: 0 }),
  );
  const request: ClaimRequest = { ...inScope, scopeIds };
  const shortages = new Shortages();
  let candidate = first ?? (scopeIds.length > 1 ? await ctx.tx.messages.claimCandidate({ ...request, afterSeq: 0 }) : undefined);
  for (let examined = 1; candidate !== undefined; examined++) {
    if (candidate.claimed) return admitted(ctx, claimedAtOnce(candidate), token, body.scopeId);
    const admission = await tryCandidate(ctx, candidate.message, request, shortages, leases);
    if (admission) return admitted(ctx, await withResources(ctx, admission), token, body.scopeId);
    // A candidate is claimed when it needs nothing: only ask for one that will be examined.
    if (examined >= maxCandidatesPerAdmit) break;
    candidate = await ctx.tx.messages.claimCandidate({ ...request, afterSeq: candidate.message.seq });
  }
  return { delivery: undefined, ...notAdmitted(body, scopeIds, shortages) };
}

/** What one admit-batch try admitted, in FIFO order; when nothing, what the long poll waits on (as AdmitAttempt). */
export interface AdmitManyAttempt {
  deliveries: AdmittedDeliveryView[];
  wakeTopics: string[];
  retryAtMs: number | null;
  blockedBy: ResourceKind[];
  leasesShort: boolean;
}

/** An attempt that admitted nothing: what could change that, for the long poll, and what blocked it. */
function notAdmitted(body: AdmitBody, scopeIds: string[], shortages: Shortages) {
  return { wakeTopics: [...readyTopicsOf(body.mailboxId, scopeIds, ['task']), ...shortages.topics], retryAtMs: shortages.retryAtMs, blockedBy: [...shortages.kinds], leasesShort: shortages.leasesShort };
}

/**
 * admit-batch (docs/design/0015-batches.md): admit's rule applied up to `maxTasks` times in one transaction, the
 * oldest admissible deliveries first. Candidates come `maxTasks` at a time in one statement
 * (claimCandidates): those that need nothing are claimed there, those with requirements are
 * tried one by one as admit tries them, in seq order among the rest. At most `maxTasks` are
 * asked for each time, so the batch never admits more. Every admission's events are appended in
 * one statement. Examines at most maxCandidatesPerAdmit candidates beyond those it admits, and
 * admits at most maxKeptSavepoints deliveries that claim resources (each keeps a savepoint).
 * Each ask takes its tokens' leases from `leases` first (a candidate that needs nothing is
 * claimed by the asking) and gives back those not claimed with; a candidate with requirements
 * takes its own when tried, as admit's. Asks no more than `leases` has left.
 */
export async function admitMany(ctx: OpContext, body: AdmitBody, maxTasks: number, leases: LeaseRoom = unlimitedLeases): Promise<AdmitManyAttempt> {
  assert(Number.isInteger(maxTasks) && maxTasks >= 1, `admit-batch of ${maxTasks}`);
  const base = {
    spaceId: ctx.spaceId,
    mailboxId: body.mailboxId,
    holder: body.holder,
    holderSession: body.holderSession,
    leaseExpiresAt: leaseUntil(body.leaseSeconds, ctx.nowMs, ctx.limits.maxLeaseSeconds),
    nowMs: ctx.nowMs,
  };
  const newTokens = (n: number) => Array.from({ length: n }, () => newToken(ctx.random));
  let tokens = newTokens(Math.min(maxTasks, leases.left()));
  const took = leases.take(tokens.length);
  assert(tokens.length >= 1 && took, 'admit-batch: no lease set aside for its first delivery');
  const [{ scopeIds }, first] = await together(
    receivableMailbox(ctx.tx, ctx.spaceId, body.mailboxId, body.holder, body.scopeId),
    ctx.tx.messages.claimCandidates({ ...base, scopeIds: [body.scopeId], tokenHashes: tokens.map((t) => t.tokenHash), afterSeq: 0, unlessGated: true }),
  );
  const ask = (afterSeq: number) => ctx.tx.messages.claimCandidates({ ...base, scopeIds, tokenHashes: tokens.map((t) => t.tokenHash), afterSeq });
  let candidates = first.length > 0 || scopeIds.length === 1 ? first : await ask(0);
  /** Keeps the leases of the candidates an ask claimed: the rest of its tokens' go back. */
  const keepClaimed = () => leases.giveBack(tokens.length - candidates.filter((c) => c.claimed).length);
  keepClaimed();
  const shortages = new Shortages();
  const deliveries: AdmittedDeliveryView[] = [];
  const events: NewEvent[] = [];
  let passedOver = 0;
  // Each admission with resources keeps its savepoint (a subtransaction): past the cap the rest
  // are passed over, as if short, and the batch answers what it has (batches/items.ts).
  let kept = 0;
  for (;;) {
    // A claimed candidate carries one of the batch's token hashes; each with requirements takes one nobody took.
    const byHash = new Map(tokens.map((t) => [t.tokenHash, t]));
    const taken = new Set(candidates.map((c) => (c.claimed ? c.message.tokenHash : null)));
    const unused = tokens.filter((t) => !taken.has(t.tokenHash));
    for (const candidate of candidates) {
      const token = candidate.claimed ? byHash.get(candidate.message.tokenHash!) : unused.pop();
      assert(token !== undefined, `admit-batch: no token for candidate ${candidate.message.id}`);
      const room = kept < maxKeptSavepoints;
      const taken = candidate.claimed
        ? admittedDelivery(claimedAtOnce(candidate), token.token, body.scopeId)
        : room
          ? await admittedWithResources(ctx, candidate.message, { ...base, scopeIds, tokenHash: token.tokenHash }, shortages, leases, token.token, body.scopeId)
          : undefined;
      if (!taken) {
        passedOver++;
        continue;
      }
      if (!candidate.claimed) kept++;
      assert(taken.delivery.token === token.token, `admit-batch: candidate ${candidate.message.id} admitted with another token`);
      deliveries.push(taken.delivery);
      events.push(...taken.events);
    }
    const wanted = maxTasks - deliveries.length;
    if (wanted === 0 || candidates.length < tokens.length || passedOver >= maxCandidatesPerAdmit || kept >= maxKeptSavepoints) break;
    const room = Math.min(wanted, leases.left());
    if (room === 0 || !leases.take(room)) {
      shortages.leasesShort = true;
      break;
    }
    tokens = newTokens(room);
    candidates = await ask(candidates.at(-1)!.message.seq);
    keepClaimed();
  }
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  if (deliveries.length > 0) return { deliveries, wakeTopics: [], retryAtMs: null, blockedBy: [], leasesShort: false };
  return { deliveries, ...notAdmitted(body, scopeIds, shortages) };
}

/** A candidate with requirements, tried as admit tries it: its admission, or undefined when a resource is short. */
async function admittedWithResources(ctx: OpContext, candidate: Message, request: ClaimRequest, shortages: Shortages, leases: LeaseRoom, token: string, scopeId: string) {
  const admission = await tryCandidate(ctx, candidate, request, shortages, leases);
  return admission && admittedDelivery(await withResources(ctx, admission), token, scopeId);
}

/** A delivery claimed with its resources (tryCandidate): the delivery locked and claimed, its task as read under the lock, and the resources' events. */
interface ClaimedWithResources {
  locked: LockedDelivery;
  resourceEvents: NewEvent[];
}

/**
 * Claims a locked READY candidate with its resources inside a savepoint; undefined, with nothing
 * claimed and no resource lock kept, when one is short. A candidate needing as much of a
 * resource as an earlier one found short is passed over without touching the store.
 */
async function tryCandidate(ctx: OpContext, candidate: Message, request: ClaimRequest, shortages: Shortages, leases: LeaseRoom): Promise<ClaimedWithResources | undefined> {
  assert(candidate.state === 'READY' && candidate.requirements !== null, `candidate ${candidate.id} is ${candidate.state}`);
  if (shortages.knownShort(candidate.requirements)) return undefined;
  // Its leases (itself and its pool units) are taken before it is claimed, given back if the claim fails.
  const units = leasesOf(candidate.requirements);
  if (!leases.take(units)) {
    shortages.leasesShort = true;
    return undefined;
  }
  let result: ClaimedWithResources | undefined;
  await ctx.tx.savepoints.attempt(async () => {
    // The candidate's task is read under the candidate's lock, in the round trip of the claims.
    const [taken, task] = await together(claimResources(ctx, candidate, request, shortages), ctx.tx.tasks.getByDelivery(ctx.spaceId, candidate.id));
    if (!taken) return false;
    const message = claim(candidate, request, taken.claimed);
    await ctx.tx.messages.update(message);
    result = { locked: { message, task }, resourceEvents: taken.events };
    return true;
  });
  if (!result) leases.giveBack(units);
  return result;
}

/** What an admission claimed, for its reply and events: the delivery, its resources' events, and its task's start. */
interface Admission {
  message: Message;
  resourceEvents: NewEvent[];
  started: TaskMoved;
}

/** A candidate that needed nothing, claimed by claimCandidate(s), which moved its task too. */
const claimedAtOnce = (candidate: ClaimedDelivery): Admission => ({ message: candidate.message, resourceEvents: [], started: taskHooks.startedByClaim(candidate) });

/** A candidate claimed with its resources: its task, read under the candidate's lock, starts now (a write that rides with the commit). */
async function withResources(ctx: OpContext, claimed: ClaimedWithResources): Promise<Admission> {
  return { message: claimed.locked.message, resourceEvents: claimed.resourceEvents, started: await taskHooks.startClaimed(ctx, claimed.locked) };
}

/** The admission's events (its resources' first, appended in one statement) and the reply. */
async function admitted(ctx: OpContext, admission: Admission, token: string, scopeId: string): Promise<AdmitAttempt> {
  const { delivery, events } = admittedDelivery(admission, token, scopeId);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  return { delivery, wakeTopics: [], retryAtMs: null, blockedBy: [], leasesShort: false };
}

/** admitted's reply and events, for a caller that appends the events of several admissions at once. */
function admittedDelivery(admission: Admission, token: string, scopeId: string): { delivery: AdmittedDeliveryView; events: NewEvent[] } {
  const { message, resourceEvents, started } = admission;
  assert(message.state === 'CLAIMED' && message.taskId !== null, `admitted message ${message.id} is ${message.state}`);
  const events = [...resourceEvents, claimedEvent(message, scopeId, { claimed: claimedView(message.claimed) }), ...started.events];
  const delivery: AdmittedDeliveryView = { ...deliveryView(message, token), taskId: message.taskId };
  return { delivery, events };
}
