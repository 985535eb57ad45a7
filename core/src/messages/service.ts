import { assert } from '../assert';
import { canonicalJson } from '../canonical-json';
import type { OpContext } from '../context';
import { BatonError, forbidden, notFound, conflict, validationFailed } from '../errors';
import { eventTypes, type NewEvent } from '../events/model';
import { decodeNameCursor, encodeNameCursor } from '../paging';
import type { MailboxCreateBody, MailboxView, MessageView, RenewBody, RenewReply, SendBody } from '../schemas/messages';
import type { Page } from '../store/page';
import type { Tx } from '../store/store';
import { isoFromMs, msFromIso } from '../time';
import type { Mailbox, Message, MessageListPosition, MessageState, NewMessage, SendTarget } from './model';
import { assertMailbox, holdsLease, leaseUntil, payloadBytes, renewed } from './rules';
import { mailboxView, messageView } from './views';
import type { DeliveryRequirements } from '../admission/model';
import { readyTopicOf } from '../notifier';
import { governingRun, refuseIfEnded } from '../runs/guard';
import { together } from '../store/together';

/**
 * Mailboxes and messages with leases (docs/design/0008-tasks-and-deliveries.md): the queue alone. What ends a claim (complete,
 * nack, lease expiry) and moves a task with it lives in core/src/deliveries/lifecycle.ts. Lock order (docs/lock-order.md): a
 * message row first (renew, complete, nack, the expiry sweep), then a mailbox row (a send, also
 * the result a complete publishes). A send locks its mailbox so backlogLimit is exact; recv
 * locks nothing beyond the one row its claim takes (FOR UPDATE SKIP LOCKED).
 *
 * Every message event has the mailbox as its aggregate: the NotifyingStore then wakes a recv
 * long-polling on `mailbox:<id>` whenever a send, a nack or an expiry makes a message READY.
 */

export const messageEvent = (m: Pick<Message, 'id' | 'mailboxId' | 'scopeId' | 'attempt'>, type: string, data: Record<string, unknown> = {}): NewEvent => ({
  type,
  aggregateType: 'mailbox',
  aggregateId: m.mailboxId,
  scopeId: m.scopeId,
  data: { messageId: m.id, attempt: m.attempt, ...data },
});

/**
 * message.claimed, however the claim came (recv, recv-batch, admit, admit-batch): who holds the
 * lease until when, and the scope the claimer asked from (`claimScopeId`, which may be an
 * ancestor of the message's own). An admission adds `admitted: true` and what it claimed.
 */
export const claimedEvent = (m: Message, claimScopeId: string, admission?: { claimed: unknown }): NewEvent =>
  messageEvent(m, eventTypes.messageClaimed, {
    holder: m.holder,
    holderSession: m.holderSession,
    leaseExpiresAt: isoFromMs(m.leaseExpiresAt!),
    claimScopeId,
    ...(admission === undefined ? {} : { admitted: true, claimed: admission.claimed }),
  });

/** The event of a message that became READY (sent, or given back): it wakes one poll that can take it (notifier.ts readyTopicOf). */
export const readyEvent = (m: Pick<Message, 'id' | 'mailboxId' | 'scopeId' | 'attempt' | 'taskId'>, type: string, data: Record<string, unknown> = {}): NewEvent => ({
  ...messageEvent(m, type, data),
  wakesOne: readyTopicOf(m.mailboxId, m.scopeId, m.taskId === null ? 'plain' : 'task'),
});

// ---------------------------------------------------------------------------------------------
// Mailboxes

/**
 * Creates a mailbox, or returns the existing one of that name when its settings are identical
 * (create-or-get; the repeat-create rule of docs/api.md "Authentication and permissions" lets a key without resource_config do this).
 */
export async function createMailbox(ctx: OpContext, body: MailboxCreateBody, canCreate: boolean): Promise<{ created: boolean; view: MailboxView }> {
  const existing = await ctx.tx.mailboxes.getByName(ctx.spaceId, body.name);
  if (existing) return { created: false, view: mailboxView(sameSettings(existing, body)) };
  if (!canCreate) throw forbidden('credential lacks resource_config');
  const mailbox: Mailbox = {
    id: ctx.random.uuid(),
    spaceId: ctx.spaceId,
    name: body.name,
    mode: body.mode,
    recipientId: body.recipientId ?? null,
    backlogLimit: body.backlogLimit,
    createdAt: ctx.nowMs,
    updatedAt: ctx.nowMs,
  };
  assertMailbox(mailbox);
  if (!(await ctx.tx.mailboxes.insert(mailbox))) {
    // A concurrent create of the same name committed first: answer as a repeat create.
    const winner = await ctx.tx.mailboxes.getByName(ctx.spaceId, body.name);
    if (!winner) throw conflict(`mailbox ${body.name} is being created; retry`);
    return { created: false, view: mailboxView(sameSettings(winner, body)) };
  }
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [
    { type: eventTypes.mailboxCreated, aggregateType: 'mailbox', aggregateId: mailbox.id, scopeId: null, data: { name: mailbox.name, mode: mailbox.mode, recipientId: mailbox.recipientId, backlogLimit: mailbox.backlogLimit } },
  ]);
  return { created: true, view: mailboxView(mailbox) };
}

function sameSettings(existing: Mailbox, body: MailboxCreateBody): Mailbox {
  const same = existing.mode === body.mode && existing.recipientId === (body.recipientId ?? null) && existing.backlogLimit === body.backlogLimit;
  if (!same) throw conflict(`mailbox ${body.name} exists with other settings`);
  return existing;
}

export async function listMailboxes(tx: Tx, spaceId: string, cursor: string | undefined, limit: number): Promise<Page<MailboxView>> {
  const afterName = cursor === undefined ? null : decodeNameCursor(cursor);
  const rows = await tx.mailboxes.list(spaceId, afterName, limit + 1);
  const page = rows.slice(0, limit);
  return { items: page.map(mailboxView), nextCursor: rows.length > limit ? encodeNameCursor(page.at(-1)!.name) : null };
}

/**
 * The mailbox a recv or admit takes from, with the scopes it claims from: the request's scopeId
 * and every group gate scope below it (docs/design/0008-tasks-and-deliveries.md), read in the same round trip. A WORK
 * mailbox serves any worker (competing consumers); an INBOX with a recipientId is that
 * recipient's alone: only a holder named recipientId may receive from it, anyone may send to it.
 */
export async function receivableMailbox(tx: Tx, spaceId: string, id: string, holder: string, scopeId: string): Promise<{ mailbox: Mailbox; scopeIds: string[] }> {
  const found = await tx.mailboxes.getForClaim(spaceId, id, scopeId);
  if (!found) throw notFound('mailbox');
  const { mailbox, scopeIds } = found;
  assert(scopeIds[0] === scopeId, `claim scopes of ${scopeId} begin with ${scopeIds[0]}`);
  if (mailbox.mode === 'INBOX' && mailbox.recipientId !== null && mailbox.recipientId !== holder) {
    throw forbidden(`mailbox ${mailbox.name} is the inbox of ${mailbox.recipientId}; only that holder receives from it`);
  }
  return found;
}

/** Locks the mailbox a send goes to: sends holding it count its backlog one after another. */
const lockMailbox = (tx: Tx, spaceId: string, mailboxId: string): Promise<Mailbox> => mailboxOf(tx, spaceId, mailboxId, true);

export async function mailboxOf(tx: Tx, spaceId: string, id: string, lock = false): Promise<Mailbox> {
  const mailbox = await tx.mailboxes.get(spaceId, id, { forUpdate: lock });
  if (!mailbox) throw notFound('mailbox');
  return mailbox;
}

// ---------------------------------------------------------------------------------------------
// Messages: list and send

export interface MessageListRequest {
  states: readonly MessageState[] | undefined;
  cursor: string | undefined;
  limit: number;
}

/** Messages of a mailbox oldest first (send order), optionally filtered by state. */
export async function listMessages(tx: Tx, spaceId: string, mailboxId: string, request: MessageListRequest): Promise<Page<MessageView>> {
  await mailboxOf(tx, spaceId, mailboxId);
  const after = request.cursor === undefined ? null : decodeSeqCursor(request.cursor);
  const rows = await tx.messages.list(spaceId, mailboxId, request.states ?? null, after, request.limit + 1);
  const page = rows.slice(0, request.limit);
  return { items: page.map(messageView), nextCursor: rows.length > request.limit ? encodeSeqCursor(page.at(-1)!.seq) : null };
}

const encodeSeqCursor = (seq: MessageListPosition): string => Buffer.from(`m:${seq}`, 'utf8').toString('base64url');

function decodeSeqCursor(cursor: string): MessageListPosition {
  const match = /^m:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  const seq = match ? Number(match[1]) : undefined;
  if (seq === undefined || encodeSeqCursor(seq) !== cursor) throw validationFailed('cursor', 'not a cursor this list returned');
  return seq;
}

export function checkPayloadSize(path: string, payload: unknown, limitBytes: number): void {
  const bytes = payloadBytes(payload);
  if (bytes > limitBytes) throw new BatonError('PAYLOAD_TOO_LARGE', `${path} is ${bytes} bytes of JSON; at most ${limitBytes} (the space's maxPayloadBytes)`);
}

export interface SendRequest {
  scopeId: string;
  payload: unknown;
  workKey?: string | undefined;
  deadline?: string | undefined;
  /** Set when the message is a task's delivery (core/src/tasks). */
  taskId?: string | undefined;
  /** What admission must claim with the delivery; null or absent when nothing. */
  requirements?: DeliveryRequirements | null;
}

/**
 * Sends a message: READY at the back of the mailbox. A workKey already sent to this mailbox
 * answers with the committed message (created: false) and sends nothing; the same workKey with
 * another scopeId or payload is CONFLICT. A mailbox holding backlogLimit READY plus CLAIMED
 * messages refuses with BACKLOG_FULL.
 */
export async function send(ctx: OpContext, mailboxId: string, body: SendBody | SendRequest): Promise<{ created: boolean; view: MessageView }> {
  return sendToTarget(ctx, await sendTargetOf(ctx, mailboxId), body);
}

/**
 * POST /mailboxes/{id}/messages: send, refused under an ended run (docs/design/0019-runs.md). The scope's
 * run is read, and locked against its end, in the mailbox's round trip. Only a client's send is
 * refused: a timer armed before its run completed still fires, and a complete still publishes
 * its result (both call send).
 */
export async function clientSend(ctx: OpContext, mailboxId: string, body: SendBody): Promise<{ created: boolean; view: MessageView }> {
  const [run, target] = await together(governingRun(ctx, body.scopeId), ctx.tx.mailboxes.getForSend(ctx.spaceId, mailboxId, ctx.limits.maxBacklog));
  refuseIfEnded(run, body.scopeId);
  if (!target) throw notFound('mailbox');
  return sendToTarget(ctx, target, body);
}

async function sendToTarget(ctx: OpContext, target: SendTarget, body: SendBody | SendRequest): Promise<{ created: boolean; view: MessageView }> {
  const sent = await sendTo(ctx, target, body);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, sent.events);
  return { created: sent.created, view: messageView(sent.message) };
}

/**
 * How far below a backlog limit a send goes without the mailbox's row lock. Locking every send
 * made all sends to one mailbox run one at a time (measured: at 8 submitters a submit waited
 * 27 ms p50 for the lock, an admit 9 ms); far from a limit, unlocked sends can only pass it if
 * more than this many commit at the same moment, so near a limit every send locks and counts
 * again, which keeps both limits exact below that concurrency.
 */
export const unlockedSendMargin = 100;

/**
 * The send itself, into `target.mailbox` as read (unlocked); answers the events instead of appending
 * them, so a task's submit appends its own and its delivery's in one statement. `id` lets the
 * caller know the message id before the insert (the task row names its delivery). A send with
 * a workKey always takes the mailbox's row lock: the lookup of the key and the insert that
 * takes it must not be split by another send of the same key. `target` is the mailbox with its
 * backlog as read in this transaction (sendTargetOf): near a limit the send locks the mailbox
 * and counts again.
 */
/** The mailbox a send goes to, with its backlog counted, in one statement (MailboxRepository.getForSend). */
export async function sendTargetOf(ctx: OpContext, mailboxId: string): Promise<SendTarget> {
  const target = await ctx.tx.mailboxes.getForSend(ctx.spaceId, mailboxId, ctx.limits.maxBacklog);
  if (!target) throw notFound('mailbox');
  return target;
}

export async function sendTo(ctx: OpContext, target: SendTarget, body: (SendBody | SendRequest) & { id?: string }): Promise<{ created: boolean; message: NewMessage; events: NewEvent[] }> {
  const prepared = await prepareSend(ctx, target, body);
  if (!prepared.created) return { created: false, message: prepared.message, events: [] };
  return { created: true, message: prepared.message, events: await insertSend(ctx, target, prepared.message) };
}

/** Writes a message prepareSend made; answers its event (not yet appended). */
export async function insertSend(ctx: OpContext, target: SendTarget, message: NewMessage): Promise<NewEvent[]> {
  await ctx.tx.messages.insert(message);
  // A batch sends again to the target it read: what this send added counts against the limits.
  target.live.mailbox += 1;
  target.live.space += 1;
  return [readyEvent(message, eventTypes.messageSent, { workKey: message.workKey })];
}

/**
 * Everything a send decides before it writes: the workKey's prior message (created: false), or
 * the new message once the payload, the backlog limits and the workKey allow it. Nothing is
 * written, so a caller that writes more with it (a task's submit) fails, when it fails, before
 * its first write (batches/items.ts relies on it).
 */
export async function prepareSend(ctx: OpContext, target: SendTarget, body: (SendBody | SendRequest) & { id?: string }): Promise<{ created: false; message: NewMessage } | { created: true; message: NewMessage }> {
  const { mailbox } = target;
  checkPayloadSize('payload', body.payload, ctx.limits.maxPayloadBytes);
  let locked = body.workKey !== undefined;
  if (body.workKey !== undefined) {
    await lockMailbox(ctx.tx, ctx.spaceId, mailbox.id);
    const prior = await ctx.tx.messages.getByWorkKey(ctx.spaceId, mailbox.id, body.workKey);
    if (prior) return { created: false, message: sameSend(prior, body) };
  }
  const caps = { mailbox: mailbox.backlogLimit, space: ctx.limits.maxBacklog };
  // A send with a workKey counts again under the lock it took for the key.
  let live = locked ? await ctx.tx.messages.countLive(ctx.spaceId, mailbox.id, caps) : target.live;
  if (!locked && (live.mailbox + unlockedSendMargin >= caps.mailbox || live.space + unlockedSendMargin >= caps.space)) {
    await lockMailbox(ctx.tx, ctx.spaceId, mailbox.id);
    locked = true;
    live = await ctx.tx.messages.countLive(ctx.spaceId, mailbox.id, caps);
  }
  if (live.mailbox >= mailbox.backlogLimit) throw new BatonError('BACKLOG_FULL', `mailbox ${mailbox.name} holds ${live.mailbox} READY or CLAIMED messages (backlogLimit ${mailbox.backlogLimit})`);
  // Near maxBacklog, sends to this mailbox lock it; sends to other mailboxes committing at the
  // same moment can still each pass, so maxBacklog can be passed by at most the sends in flight
  // at once (see docs/api.md, "Mailboxes and messages").
  if (live.space >= ctx.limits.maxBacklog) throw new BatonError('BACKLOG_FULL', `the space holds ${live.space} READY or CLAIMED messages (maxBacklog ${ctx.limits.maxBacklog}; PUT /limits raises it)`);
  const message: NewMessage = {
    id: body.id ?? ctx.random.uuid(),
    spaceId: ctx.spaceId,
    mailboxId: mailbox.id,
    scopeId: body.scopeId,
    payload: body.payload ?? null,
    workKey: body.workKey ?? null,
    deadline: body.deadline === undefined ? null : msFromIso(body.deadline),
    taskId: ('taskId' in body ? body.taskId : undefined) ?? null,
    requirements: ('requirements' in body ? body.requirements : undefined) ?? null,
    claimed: null,
    state: 'READY',
    attempt: 0,
    tokenHash: null,
    holder: null,
    holderSession: null,
    leaseExpiresAt: null,
    result: null,
    createdAt: ctx.nowMs,
    updatedAt: ctx.nowMs,
  };
  return { created: true, message };
}

function sameSend(prior: Message, body: SendRequest): NewMessage {
  const same = prior.scopeId === body.scopeId && canonicalJson(prior.payload) === canonicalJson(body.payload ?? null);
  if (!same) throw conflict(`workKey ${prior.workKey} was already sent to this mailbox with another scopeId or payload`);
  return prior;
}

// ---------------------------------------------------------------------------------------------
// Leases

/** Locks the message for this transaction: NOT_FOUND when there is none of that id. */
export async function lockMessage(ctx: OpContext, messageId: string): Promise<Message> {
  const message = await ctx.tx.messages.get(ctx.spaceId, messageId, { forUpdate: true });
  if (!message) throw notFound('message');
  return message;
}

/** Checks that `token` is the live claim of `message`, read under its row lock: LEASE_LOST otherwise. */
export function checkLease(ctx: OpContext, message: Message, token: string): Message {
  if (!holdsLease(message, token, ctx.nowMs)) {
    const why = message.state === 'CLAIMED' ? 'the lease expired or the message was claimed again' : `the message is ${message.state}`;
    throw new BatonError('LEASE_LOST', `this token is not the live claim of message ${message.id}: ${why}`);
  }
  return message;
}

/**
 * Extends the lease to now + leaseSeconds. Emits message.lease_renewed: leaseExpiresAt is
 * visible in the message list, and docs/design/0013-events-and-watch.md wants an event for every observable change;
 * the price is that a recv long-polling the mailbox wakes, finds nothing and waits again.
 */
export async function renew(ctx: OpContext, messageId: string, body: RenewBody): Promise<RenewReply> {
  return renewLocked(ctx, await lockMessage(ctx, messageId), body);
}

/**
 * renew on `locked`, the message as this transaction locked it (lockMessage, or a renew-batch's
 * lock of all its messages at once: deliveries/preload.ts). A renew touches only its message:
 * no task moves, so none is read.
 */
export async function renewLocked(ctx: OpContext, locked: Message, body: RenewBody): Promise<RenewReply> {
  const message = checkLease(ctx, locked, body.token);
  const next = renewed(message, leaseUntil(body.leaseSeconds, ctx.nowMs, ctx.limits.maxLeaseSeconds), ctx.nowMs);
  await ctx.tx.messages.update(next);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [messageEvent(next, eventTypes.messageLeaseRenewed, { leaseExpiresAt: isoFromMs(next.leaseExpiresAt!) })]);
  return { leaseExpiresAt: isoFromMs(next.leaseExpiresAt!) };
}
