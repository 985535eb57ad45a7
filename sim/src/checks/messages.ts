import type { JournalEvent, Store } from '@baton/core';

/** Claims a message gets before it is DEAD (core/src/messages/model.ts maxAttempts). */
const maxAttempts = 5;

/** One logical send: its workKey and what the sender was told. */
interface SendRecord {
  session: string;
  mailboxId: string;
  messageId?: string;
  /** Answered 429 BACKLOG_FULL: it must not have made a message. */
  refused?: boolean;
}

/** One delivery a worker received: a claim, as the client saw it. */
interface ClaimRecord {
  messageId: string;
  token: string;
  session: string;
  /** Server time of the claim: leaseExpiresAt - leaseSeconds (the sim asks for 5..10 s, under any cap). */
  claimAtMs: number;
  leaseExpiresAtMs: number;
  attempt: number;
  /** When the complete or nack that answered 200 was sent (its commit is no earlier). */
  acceptedSentAtMs?: number;
  /** When a complete answering 200 was heard (the message is ACKED from then on at the latest). */
  ackedHeardAtMs?: number;
}

/**
 * Message invariants. As replies arrive (MessageLedger): a workKey never makes two messages and
 * a repeat answers 200 with the committed one; a delivery never overlaps another live claim of
 * the same message whose token was accepted afterwards; an ACKED message is never delivered
 * again; attempt never exceeds 5; a live token is never refused before its lease runs out.
 * At the end (checkMessagesFinal, replayed from the store's journal): at most one live lease
 * per message at any time, no claim after ACKED, every complete that answered 200 ended the
 * live claim it held, one message per workKey, and nothing left CLAIMED past its lease.
 */
export class MessageLedger {
  readonly sends = new Map<string, SendRecord>();
  readonly claims = new Map<string, ClaimRecord>();
  private readonly byMessage = new Map<string, ClaimRecord[]>();

  constructor(
    private readonly violation: (message: string) => void,
    private readonly crashedSessions: ReadonlySet<string>,
  ) {}

  requestSend(workKey: string, session: string, mailboxId: string): void {
    if (!this.sends.has(workKey)) this.sends.set(workKey, { session, mailboxId });
  }

  /** A send answered 201 (first) or 200 (a repeat of a committed workKey). */
  ackSend(workKey: string, messageId: string, repeat: boolean, statusCode: number): void {
    const record = this.sends.get(workKey)!;
    if (record.messageId !== undefined && record.messageId !== messageId) this.violation(`message workKey ${workKey} made two messages: ${record.messageId} and ${messageId}`);
    if (repeat && statusCode !== 200) this.violation(`message workKey ${workKey}: a repeat of a committed send answered ${statusCode}, not 200`);
    record.messageId ??= messageId;
  }

  refuseSend(workKey: string): void {
    const record = this.sends.get(workKey)!;
    if (record.messageId === undefined) record.refused = true;
  }

  delivered(claim: Omit<ClaimRecord, 'acceptedSentAtMs' | 'ackedHeardAtMs'>): ClaimRecord {
    const record: ClaimRecord = { ...claim };
    if (record.attempt > maxAttempts) this.violation(`message ${record.messageId} delivered with attempt ${record.attempt} > ${maxAttempts}`);
    const others = this.byMessage.get(record.messageId) ?? [];
    for (const other of others) {
      if (other.token === record.token) continue;
      if (other.ackedHeardAtMs !== undefined && other.ackedHeardAtMs <= record.claimAtMs) {
        this.violation(`message ${record.messageId} claimed again (by ${record.session}) after it was ACKED by ${other.session}`);
      }
      this.overlap(other, record);
    }
    others.push(record);
    this.byMessage.set(record.messageId, others);
    this.claims.set(record.token, record);
    return record;
  }

  /** A complete or nack with this token answered 200; `sentAtMs` is when it was sent. */
  accepted(token: string, sentAtMs: number, heardAtMs: number, acked: boolean): void {
    const record = this.claims.get(token)!;
    if (sentAtMs >= record.leaseExpiresAtMs) this.violation(`message ${record.messageId}: ${record.session}'s token was accepted after its lease ran out at ${iso(record.leaseExpiresAtMs)} (it must answer LEASE_LOST)`);
    record.acceptedSentAtMs ??= sentAtMs;
    if (acked) record.ackedHeardAtMs ??= heardAtMs;
    for (const other of this.byMessage.get(record.messageId) ?? []) if (other.token !== token) this.overlap(other, record);
  }

  /** A complete or nack answered LEASE_LOST, heard at `heardAtMs`: fine only once the lease ran out. */
  leaseLost(token: string, heardAtMs: number, what: string): void {
    const record = this.claims.get(token)!;
    if (heardAtMs < record.leaseExpiresAtMs && record.acceptedSentAtMs === undefined) {
      this.violation(`message ${record.messageId}: ${what} by ${record.session} answered LEASE_LOST at ${iso(heardAtMs)}, before its lease ran out at ${iso(record.leaseExpiresAtMs)}`);
    }
  }

  /**
   * `b` was claimed inside `a`'s lease window; that is legal only if `a` was released first, so
   * `a`'s token accepted by a request sent after `b`'s claim means two live leases at once.
   */
  private overlap(a: ClaimRecord, b: ClaimRecord): void {
    for (const [first, second] of [
      [a, b],
      [b, a],
    ] as const) {
      const inside = first.claimAtMs <= second.claimAtMs && second.claimAtMs < first.leaseExpiresAtMs;
      if (inside && first.acceptedSentAtMs !== undefined && first.acceptedSentAtMs > second.claimAtMs && second.acceptedSentAtMs !== undefined) {
        this.violation(`message ${a.messageId}: two live leases, ${first.session} (until ${iso(first.leaseExpiresAtMs)}) and ${second.session} (claimed ${iso(second.claimAtMs)}), both tokens accepted`);
      }
    }
  }

  crashed(session: string): boolean {
    return this.crashedSessions.has(session);
  }
}

const iso = (ms: number): string => new Date(ms).toISOString();

interface Live {
  state: 'READY' | 'CLAIMED' | 'ACKED' | 'DEAD';
  holderSession: string | null;
  leaseExpiresAtMs: number;
  attempt: number;
}

/** Replays the journal's message events and checks them against the ledger and the store. */
export async function checkMessagesFinal(store: Store, spaceId: string, mailboxIds: readonly string[], journal: JournalEvent[], ledger: MessageLedger, nowMs: number): Promise<string[]> {
  const problems: string[] = [];
  const messages = new Map<string, Live>();
  const byWorkKey = new Map<string, string>();
  /** Per message, the claims in journal order as `${holderSession} ${leaseExpiresAt}`, and which of them were acked. */
  const ackedClaims = new Set<string>();
  for (const e of journal) {
    if (e.aggregateType !== 'mailbox' || !mailboxIds.includes(e.aggregateId) || e.data.messageId === undefined) continue;
    const id = String(e.data.messageId);
    const m = messages.get(id);
    const live = m !== undefined && m.state === 'CLAIMED' && m.leaseExpiresAtMs > e.occurredAt;
    switch (e.type) {
      case 'message.sent': {
        if (m) problems.push(`message ${id} sent twice`);
        messages.set(id, { state: 'READY', holderSession: null, leaseExpiresAtMs: 0, attempt: 0 });
        if (e.data.workKey !== null && e.data.workKey !== undefined) {
          const key = `${e.aggregateId} ${String(e.data.workKey)}`;
          const other = byWorkKey.get(key);
          if (other) problems.push(`message workKey ${String(e.data.workKey)} made two messages: ${other} and ${id}`);
          byWorkKey.set(key, id);
        }
        break;
      }
      case 'message.claimed': {
        if (!m) {
          problems.push(`message ${id} claimed before it was sent`);
          break;
        }
        if (m.state === 'ACKED') problems.push(`message ${id} claimed again at ${iso(e.occurredAt)} after it was ACKED`);
        if (m.state === 'DEAD') problems.push(`message ${id} claimed at ${iso(e.occurredAt)} after it was DEAD`);
        if (live) problems.push(`message ${id} claimed by ${String(e.data.holderSession)} at ${iso(e.occurredAt)} while ${m.holderSession}'s lease was live until ${iso(m.leaseExpiresAtMs)}`);
        const attempt = Number(e.data.attempt);
        if (attempt > maxAttempts) problems.push(`message ${id} claimed for attempt ${attempt} > ${maxAttempts}`);
        if (attempt !== m.attempt + 1) problems.push(`message ${id}: claim counted attempt ${attempt} after ${m.attempt}`);
        messages.set(id, { state: 'CLAIMED', holderSession: String(e.data.holderSession), leaseExpiresAtMs: Date.parse(String(e.data.leaseExpiresAt)), attempt });
        break;
      }
      case 'message.lease_renewed':
        if (!live) problems.push(`message ${id}: lease renewed at ${iso(e.occurredAt)} without a live claim`);
        else m.leaseExpiresAtMs = Date.parse(String(e.data.leaseExpiresAt));
        break;
      case 'message.acked':
        if (!live) problems.push(`message ${id} ACKED at ${iso(e.occurredAt)} without a live claim (${m?.state ?? 'unknown'})`);
        if (m) {
          ackedClaims.add(`${id} ${m.holderSession} ${m.leaseExpiresAtMs}`);
          Object.assign(m, { state: 'ACKED', leaseExpiresAtMs: 0 });
        }
        break;
      case 'message.nacked':
        if (!live) problems.push(`message ${id} nacked at ${iso(e.occurredAt)} without a live claim (${m?.state ?? 'unknown'})`);
        if (m) Object.assign(m, { state: String(e.data.state) === 'DEAD' ? 'DEAD' : 'READY', leaseExpiresAtMs: 0 });
        break;
      case 'message.lease_expired':
        if (!m || m.state !== 'CLAIMED' || m.leaseExpiresAtMs > e.occurredAt) problems.push(`message ${id}: lease expired at ${iso(e.occurredAt)} while ${m?.state === 'CLAIMED' ? `live until ${iso(m.leaseExpiresAtMs)}` : m?.state ?? 'unknown'}`);
        if (m) Object.assign(m, { state: String(e.data.state) === 'DEAD' ? 'DEAD' : 'READY', leaseExpiresAtMs: 0 });
        break;
    }
  }

  // Every complete that answered 200 ended the very claim its token came from.
  for (const claim of ledger.claims.values()) {
    if (claim.ackedHeardAtMs === undefined) continue;
    if (!ackedClaims.has(`${claim.messageId} ${claim.session} ${claim.leaseExpiresAtMs}`)) {
      problems.push(`message ${claim.messageId}: ${claim.session}'s complete answered 200 but the journal shows no ACK of its claim (lease until ${iso(claim.leaseExpiresAtMs)})`);
    }
  }

  // Each logical send made exactly one message (at most one when the sender crashed unanswered).
  for (const [workKey, send] of ledger.sends) {
    const stored = byWorkKey.get(`${send.mailboxId} ${workKey}`);
    if (send.messageId !== undefined && stored !== send.messageId) problems.push(`message workKey ${workKey}: sender was told ${send.messageId}, the journal has ${stored ?? 'none'}`);
    if (send.refused && stored !== undefined) problems.push(`message workKey ${workKey} answered BACKLOG_FULL but made message ${stored}`);
    if (send.messageId === undefined && !send.refused && stored === undefined && !ledger.crashed(send.session)) problems.push(`message workKey ${workKey} was never answered nor sent`);
  }
  for (const key of byWorkKey.keys()) {
    const workKey = key.slice(key.indexOf(' ') + 1);
    if (!ledger.sends.has(workKey)) problems.push(`message workKey ${workKey} was sent but never requested`);
  }

  // Liveness: the sweep ran, so nothing is CLAIMED past its lease; the store agrees with the replay.
  await store.read(async (tx) => {
    for (const mailboxId of mailboxIds) {
      for (let after: number | null = null; ; ) {
        const page = await tx.messages.list(spaceId, mailboxId, null, after, 500);
        if (page.length === 0) break;
        for (const m of page) {
          if (m.state === 'CLAIMED' && m.leaseExpiresAt! <= nowMs) problems.push(`message ${m.id} still CLAIMED by ${m.holderSession} past its lease (${iso(m.leaseExpiresAt!)}) after the liveness phase`);
          const replayed = messages.get(m.id);
          if (!replayed) problems.push(`message ${m.id} is in the store but was never sent in the journal`);
          else if (replayed.state !== m.state || replayed.attempt !== m.attempt) problems.push(`message ${m.id}: store says ${m.state} attempt ${m.attempt}, the journal replays ${replayed.state} attempt ${replayed.attempt}`);
        }
        after = page.at(-1)!.seq;
      }
    }
  });
  return problems;
}
