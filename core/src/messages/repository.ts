import type { BatchClaimRequest, Candidate, CandidateRequest, CandidatesRequest, ClaimedDelivery, ClaimRequest, LiveCounts, LockedDelivery, Mailbox, MailboxCensus, Message, MessageListPosition, MessageState, NewMessage, SendTarget } from './model';
import type { LockOptions } from '../store/lock-options';
import type { SpaceCutoff } from '../store/retention-repository';

export interface MailboxRepository {
  /** False, writing nothing, when the space already has a mailbox of that name (a concurrent create won). */
  insert(mailbox: Mailbox): Promise<boolean>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Mailbox | undefined>;
  getByName(spaceId: string, name: string): Promise<Mailbox | undefined>;
  /**
   * What a recv or admit needs before it claims, in one round trip: the mailbox, and the scopes
   * it may claim from: `scopeId` first, then every group gate scope below it at any depth (a
   * group's gate scope is a child of its parentScopeId). Undefined for an unknown mailbox.
   */
  getForClaim(spaceId: string, id: string, scopeId: string): Promise<{ mailbox: Mailbox; scopeIds: string[] } | undefined>;
  /**
   * What a send needs before it inserts, in one statement: the mailbox (unlocked), and its live
   * backlog counted as MessageRepository.countLive counts it, capped at the mailbox's own
   * backlogLimit and at `spaceCap`. Undefined for an unknown mailbox.
   */
  getForSend(spaceId: string, id: string, spaceCap: number): Promise<SendTarget | undefined>;
  /** Mailboxes ordered by name; `afterName` is exclusive. */
  list(spaceId: string, afterName: string | null, limit: number): Promise<Mailbox[]>;
}

/**
 * Messages of mailboxes. `claimNext` is the hot path of recv: one atomic step that picks the
 * oldest READY message of a mailbox and scope and claims it, passing over rows another
 * transaction is claiming.
 *
 * A task moves with its delivery. Where the store moves the delivery itself (every claim), the
 * same operation moves its task, by the rule of tasks/rules.ts movedWithDelivery (a PENDING or
 * RUNNING task to RUNNING, an ended one left as it is), and answers it (ClaimedDelivery); where
 * core moves the delivery (a complete, a nack, a lease expiry), the store answers the delivery
 * locked with its task read under the lock (LockedDelivery) and core moves both. Lock order:
 * the message, then its task (docs/lock-order.md).
 */
export interface MessageRepository {
  /**
   * Inserts the message; the store assigns its seq (send order). Nothing is answered, so on
   * PostgreSQL the insert rides with the transaction's next round trip (a pipelined write).
   */
  insert(message: NewMessage): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Message | undefined>;
  /**
   * The messages of `ids` that exist, locked for this transaction in id order (the lock order
   * among messages) and answered in id order: the deliveries a complete-, nack- or renew-batch
   * names, locked in one statement.
   */
  lockMany(spaceId: string, ids: readonly string[]): Promise<Message[]>;
  getByWorkKey(spaceId: string, mailboxId: string, workKey: string): Promise<Message | undefined>;
  update(message: Message): Promise<void>;
  /** Messages of a mailbox in seq order after `after` (exclusive), in any of `states` (any state when null). */
  list(spaceId: string, mailboxId: string, states: readonly MessageState[] | null, after: MessageListPosition | null, limit: number): Promise<Message[]>;
  /**
   * READY plus CLAIMED messages of a mailbox (what its backlogLimit counts) and of the whole space
   * (what maxBacklog counts), each counted up to its cap: a send needs to know only whether a
   * limit is reached, so a long backlog costs a count up to the limit, not a count of everything.
   */
  countLive(spaceId: string, mailboxId: string, caps: LiveCounts): Promise<LiveCounts>;
  /**
   * Claims the oldest (lowest seq) READY message of the mailbox in `scopeIds`: CLAIMED, attempt
   * + 1, the token hash, holder, session and lease written; a task delivery's task moved to
   * RUNNING with it (ClaimedDelivery). Undefined when none is free. One statement in SQL (FOR
   * UPDATE SKIP LOCKED): concurrent claims never take one message twice and never wait on each
   * other.
   */
  claimNext(request: ClaimRequest): Promise<ClaimedDelivery | undefined>;
  /**
   * Admission's step: the oldest READY task delivery (taskId set) of the mailbox and scope after
   * `afterSeq`. A delivery without requirements is claimed at once, its task with it, as
   * claimNext claims (claimed: true); one with requirements is only locked and returned READY
   * (claimed: false), for admission to try its resources and then claim it with update. One
   * statement in SQL.
   */
  claimCandidate(request: CandidateRequest): Promise<Candidate | undefined>;
  /**
   * claimNext for up to `tokenHashes.length` messages at once (recv-batch): the oldest READY ones
   * of the mailbox and scopes, in seq order, each with its own token hash and its task moved
   * with it. One statement in SQL.
   */
  claimMany(request: BatchClaimRequest): Promise<ClaimedDelivery[]>;
  /**
   * claimCandidate for up to `tokenHashes.length` task deliveries at once (admit-batch): the
   * oldest READY ones after `afterSeq`, in seq order; each without requirements is claimed (with
   * one of the hashes) and its task moved, each with requirements only locked. One
   * statement in SQL. At most that many are answered, so an admit-batch that admits every one
   * never passes its maxTasks.
   */
  claimCandidates(request: CandidatesRequest): Promise<Candidate[]>;
  /**
   * CLAIMED messages of any space whose lease ran out at or before `nowMs`, locked for this
   * transaction, earliest expiry first, each with its task read under that lock
   * (LockedDelivery): the lease-expiry sweep moves both. Messages another server (or a complete)
   * holds are skipped. One statement in SQL.
   */
  claimExpired(nowMs: number, limit: number): Promise<LockedDelivery[]>;
  /**
   * The metrics census (server/src/metrics/census-sampler.ts): the mailboxes of any space with
   * the most live (READY plus CLAIMED) messages, then the most DEAD ones, at most `limit`, each
   * with its READY, CLAIMED and DEAD counts and its oldest READY message's createdAt. Mailboxes
   * holding none of these are left out. Read every few seconds by one server, never by an
   * operation: in SQL it reads only the partial indexes of live and of DEAD rows, so its cost
   * follows what waits and what died, not the history of ACKED messages.
   */
  census(limit: number): Promise<MailboxCensus[]>;
  /**
   * Retention (docs/design/0017-retention.md): deletes up to `limit` finished messages (ACKED, DEAD, CANCELLED)
   * of the given spaces that finished (were last updated) at or before their space's cutoff,
   * payload and all, and says how many. READY and CLAIMED messages are never touched. Rows
   * another transaction holds are skipped (SKIP LOCKED).
   */
  purgeFinished(cutoffs: readonly SpaceCutoff[], limit: number): Promise<number>;
}
