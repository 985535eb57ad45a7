import { assert } from '../assert';
import type { OpContext } from '../context';
import { eventTypes, type NewEvent } from '../events/model';
import type { ClaimRequest, Message } from '../messages/model';
import { claim, leaseUntil, newToken } from '../messages/rules';
import { receivableMailbox } from '../messages/service';
import { topicOf } from '../notifier';
import type { AdmitBody, AdmittedDeliveryView } from '../schemas/admission';
import * as taskHooks from '../tasks/service';
import { together } from '../store/together';
import type { Task } from '../tasks/model';
import { isoFromMs } from '../time';
import { claimResources, Shortages } from './claims';
import { maxCandidatesPerAdmit } from './model';
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
   * admissible (the mailbox, plus each resource found short), and the earliest time the clock
   * alone could (a quota window's roll, a cooldown's end). The long poll waits on these.
   */
  wakeTopics: string[];
  retryAtMs: number | null;
}

export async function admit(ctx: OpContext, body: AdmitBody): Promise<AdmitAttempt> {
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
    if (candidate.claimed) return admitted(ctx, candidate.message, token, [], body.scopeId, { task: candidate.task });
    const delivery = await tryCandidate(ctx, candidate.message, request, shortages);
    if (delivery) return admitted(ctx, delivery.message, token, delivery.events, body.scopeId, undefined, delivery.task);
    // A candidate is claimed when it needs nothing: only ask for one that will be examined.
    if (examined >= maxCandidatesPerAdmit) break;
    candidate = await ctx.tx.messages.claimCandidate({ ...request, afterSeq: candidate.message.seq });
  }
  return { delivery: undefined, wakeTopics: [topicOf('mailbox', body.mailboxId), ...shortages.topics], retryAtMs: shortages.retryAtMs };
}

/**
 * Claims a locked READY candidate with its resources inside a savepoint; undefined, with nothing
 * claimed and no resource lock kept, when one is short. A candidate needing as much of a
 * resource as an earlier one found short is passed over without touching the store.
 */
async function tryCandidate(ctx: OpContext, candidate: Message, request: ClaimRequest, shortages: Shortages): Promise<{ message: Message; events: NewEvent[]; task: Task | undefined } | undefined> {
  assert(candidate.state === 'READY' && candidate.requirements !== null, `candidate ${candidate.id} is ${candidate.state}`);
  if (shortages.knownShort(candidate.requirements)) return undefined;
  let result: { message: Message; events: NewEvent[]; task: Task | undefined } | undefined;
  await ctx.tx.savepoints.attempt(async () => {
    // The candidate's task is read under the candidate's lock, in the round trip of the claims.
    const [taken, task] = await together(claimResources(ctx, candidate, request, shortages), ctx.tx.tasks.getByDelivery(ctx.spaceId, candidate.id));
    if (!taken) return false;
    const message = claim(candidate, request, taken.claimed);
    await ctx.tx.messages.update(message);
    result = { message, events: taken.events, task };
    return true;
  });
  return result;
}

/**
 * The claimed delivery's events (with its resources' events, appended in one statement), its task
 * moved to RUNNING (by the claim itself when `movedWithClaim` is given; as a write when the task
 * was `loaded` under the candidate's lock), and the reply.
 */
async function admitted(ctx: OpContext, message: Message, token: string, resourceEvents: NewEvent[], scopeId: string, movedWithClaim?: { task: Task | undefined }, loaded?: Task): Promise<AdmitAttempt> {
  assert(message.state === 'CLAIMED' && message.taskId !== null, `admitted message ${message.id} is ${message.state}`);
  const claimed = claimedView(message.claimed);
  const claimedEvent: NewEvent = {
    type: eventTypes.messageClaimed,
    aggregateType: 'mailbox',
    aggregateId: message.mailboxId,
    scopeId: message.scopeId,
    data: { messageId: message.id, attempt: message.attempt, holder: message.holder, holderSession: message.holderSession, leaseExpiresAt: isoFromMs(message.leaseExpiresAt!), claimScopeId: scopeId, admitted: true, claimed },
  };
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [...resourceEvents, claimedEvent, ...(await taskHooks.onClaimed(ctx, message, movedWithClaim, loaded)).events]);
  const delivery: AdmittedDeliveryView = {
    messageId: message.id,
    mailboxId: message.mailboxId,
    taskId: message.taskId,
    token,
    leaseExpiresAt: isoFromMs(message.leaseExpiresAt!),
    attempt: message.attempt,
    payload: message.payload,
    scopeId: message.scopeId,
    claimed,
  };
  return { delivery, wakeTopics: [], retryAtMs: null };
}
