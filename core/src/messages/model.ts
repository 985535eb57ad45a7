import type { ClaimedResources, DeliveryRequirements } from '../admission/model';
import type { Task } from '../tasks/model';

/** Mailboxes and messages as stored. Times are epoch ms from the injected clock. */
export const mailboxModes = ['WORK', 'INBOX'] as const;
export type MailboxMode = (typeof mailboxModes)[number];

/** Bounds of a mailbox's backlogLimit on create (docs/api.md "Fixed bounds"). */
export const backlogLimitBounds = { min: 1, max: 100_000, default: 1_000 } as const;

export interface Mailbox {
  id: string;
  spaceId: string;
  name: string;
  mode: MailboxMode;
  recipientId: string | null;
  /** READY plus CLAIMED messages the mailbox may hold; a send beyond it is BACKLOG_FULL. */
  backlogLimit: number;
  createdAt: number;
  updatedAt: number;
}

export const messageStates = ['READY', 'CLAIMED', 'ACKED', 'DEAD', 'CANCELLED'] as const;
export type MessageState = (typeof messageStates)[number];
/** States a message never leaves: retention deletes these once past the plan window (docs/design/0017-retention.md). */
export const finishedMessageStates: readonly MessageState[] = ['ACKED', 'DEAD', 'CANCELLED'];

/** Claims a message gets before it is DEAD (docs/api.md "Fixed bounds": attempts before a task fails). */
export const maxAttempts = 5;

export interface Message {
  id: string;
  spaceId: string;
  mailboxId: string;
  /**
   * Send order, assigned by the store on insert and increasing across the store: FIFO is by
   * seq, since many sends share one clock millisecond (and a manual clock stands still).
   */
  seq: number;
  scopeId: string;
  payload: unknown;
  workKey: string | null;
  deadline: number | null;
  /** The task whose delivery this message is (core/src/tasks), or null for a plain send. */
  taskId: string | null;
  /** What admission must claim with this delivery (its task's requirements); null when nothing. */
  requirements: DeliveryRequirements | null;
  /** What the live claim holds (admission only; a raw recv holds nothing); null otherwise. */
  claimed: ClaimedResources | null;
  state: MessageState;
  /** Claims so far; each claim adds one. */
  attempt: number;
  /**
   * SHA-256 of the live claim's token, null unless CLAIMED. One column holds it, so a message
   * has at most one live lease, and a new claim replaces (kills) every older token.
   */
  tokenHash: string | null;
  /** Who holds (or last held) the claim: recorded on each claim (docs/api.md "Authentication and permissions": worker identity). */
  holder: string | null;
  holderSession: string | null;
  leaseExpiresAt: number | null;
  /** The result recorded by complete; tasks will read their outcome from it. */
  result: unknown;
  createdAt: number;
  updatedAt: number;
}

/** A message to insert: the store assigns seq. */
export type NewMessage = Omit<Message, 'seq'>;

/** What one claim writes onto the oldest READY message of a mailbox and scope. */
export interface ClaimRequest {
  spaceId: string;
  mailboxId: string;
  /**
   * The scopes claimed from: the request's scopeId first, then the group gate scopes below it
   * (MailboxRepository.getForClaim). Usually just the one.
   */
  scopeIds: readonly string[];
  holder: string;
  holderSession: string;
  tokenHash: string;
  leaseExpiresAt: number;
  nowMs: number;
  /**
   * Claim nothing when a group gate scope lies below scopeIds[0] (which must then be the only
   * scope). The caller sent this claim before it had read the gate scopes, in the same round trip
   * as that read (MailboxRepository.getForClaim), and claims across them itself when there are
   * any: the claim stays FIFO over the whole subtree, and the common, ungated case takes one
   * round trip fewer.
   */
  unlessGated?: boolean;
}

/** An admission's claim: the oldest READY task delivery after `afterSeq` (passed-over candidates). */
export interface CandidateRequest extends ClaimRequest {
  afterSeq: number;
}

/**
 * A batch claim (recv-batch, admit-batch): ClaimRequest with one token hash per delivery it may
 * claim; each claimed row gets a different one, in no particular order (the caller finds a
 * row's token by its hash). Its length is the limit.
 */
export interface BatchClaimRequest extends Omit<ClaimRequest, 'tokenHash'> {
  tokenHashes: readonly string[];
}

/** An admit-batch's claim: the oldest READY task deliveries after `afterSeq`. */
export interface CandidatesRequest extends BatchClaimRequest {
  afterSeq: number;
}

/**
 * A delivery this transaction holds the row lock of, with its task as read under that lock
 * (undefined: a plain message). Every writer of a task's state takes its delivery's lock first
 * (docs/lock-order.md), so the task stays as read until commit: every path that moves a task
 * with its delivery (a complete, a nack, a lease expiry, an admission with resources) starts
 * from one.
 */
export interface LockedDelivery {
  message: Message;
  task: Task | undefined;
}

/**
 * A delivery a claim took (claimNext, claimMany, claimCandidate, claimCandidates): CLAIMED, with
 * its task moved to RUNNING by the same store operation (attempts: the claim's attempt,
 * updatedAt: the claim's nowMs). `task` is undefined for a plain message, and when the task had
 * ended: it stays as it is (tasks/rules.ts movedWithDelivery is the rule).
 */
export interface ClaimedDelivery {
  message: Message;
  task: Task | undefined;
}

/**
 * What claimCandidate found: a delivery claimed at once, its task moved with it, or one with
 * requirements, locked and still READY.
 */
export type Candidate = (ClaimedDelivery & { claimed: true }) | { message: Message; claimed: false };

/** READY plus CLAIMED messages of a mailbox and of its space, each counted up to a cap. */
export interface LiveCounts {
  mailbox: number;
  space: number;
}

/** A mailbox as a send reads it: the row, and its backlog counted against its backlogLimit and the space's cap. */
export interface SendTarget {
  mailbox: Mailbox;
  live: LiveCounts;
}

/** Position in a mailbox's message list, which is ordered by seq. */
export type MessageListPosition = number;

/**
 * One mailbox as a metrics census sees it (MessageRepository.census): how many of its messages
 * wait, are leased, and died, and when the oldest waiting one was sent. For operators, across
 * spaces; never read by an operation.
 */
export interface MailboxCensus {
  spaceId: string;
  mailboxId: string;
  mailboxName: string;
  ready: number;
  claimed: number;
  dead: number;
  /** createdAt of the oldest READY message (epoch ms, injected clock); null when none is READY. */
  oldestReadyAt: number | null;
}
