import { assert } from '../../assert';
import { finishedMessageStates, type Candidate, type ClaimedDelivery, type ClaimRequest, type LiveCounts, type LockedDelivery, type Mailbox, type MailboxCensus, type Message } from '../../messages/model';
import { assertMessage, claim } from '../../messages/rules';
import type { MailboxRepository, MessageRepository } from '../../messages/repository';
import type { TaskRepository } from '../../tasks/repository';
import { claimMove, movedWithDelivery } from '../../tasks/rules';
import type { LockOptions } from '../repositories';
import { MemoryTable } from './table';

const key = (spaceId: string, id: string): string => `${spaceId}\u0000${id}`;
const byName = (a: Mailbox, b: Mailbox): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const bySeq = (a: Message, b: Message): number => a.seq - b.seq;

/**
 * Mailboxes and messages in memory. Transactions run one at a time, so a lock is a no-op and a
 * claim is a scan, the core rule and a write: the SQL store does the same in one UPDATE.
 */
/** A space's live messages: task deliveries among them, and those CLAIMED. */
export interface LiveMessages {
  deliveries: number;
  claimed: number;
}

export function memoryMessages(
  undoLog: () => (() => void)[] | undefined,
  scopeSubtree: (spaceId: string, scopeId: string) => string[],
  /** The tasks table: a claim moves a task delivery's task with it, a lease expiry reads it. */
  tasks: Pick<TaskRepository, 'get' | 'update'>,
): { mailboxes: MailboxRepository; messages: MessageRepository; liveBySpace: () => Map<string, LiveMessages> } {
  const mailboxes = new MemoryTable<Mailbox>(undoLog);
  const messages = new MemoryTable<Message>(undoLog);
  // Like a SQL sequence: never rolled back, so a failed transaction leaves a gap, never a reuse.
  let lastSeq = 0;
  const lock = (_options?: LockOptions): void => undefined;
  const findMailbox = (spaceId: string, name: string): Mailbox | undefined => {
    for (const m of mailboxes.scan()) if (m.spaceId === spaceId && m.name === name) return structuredClone(m);
    return undefined;
  };
  const write = (m: Message): Message => {
    assertMessage(m);
    messages.set(key(m.spaceId, m.id), m);
    return structuredClone(m);
  };
  const select = (match: (m: Message) => boolean): Message[] => [...messages.scan()].filter(match).sort(bySeq);
  const countLive = (spaceId: string, mailboxId: string, caps: LiveCounts): LiveCounts => {
    const live = select((m) => m.spaceId === spaceId && (m.state === 'READY' || m.state === 'CLAIMED'));
    return { mailbox: Math.min(caps.mailbox, live.filter((m) => m.mailboxId === mailboxId).length), space: Math.min(caps.space, live.length) };
  };
  /** census: every mailbox holding READY, CLAIMED or DEAD messages, the most live first, then the most DEAD. */
  const census = (limit: number): MailboxCensus[] => {
    const counted = new Map<string, MailboxCensus>();
    for (const m of messages.scan()) {
      if (m.state !== 'READY' && m.state !== 'CLAIMED' && m.state !== 'DEAD') continue;
      const k = key(m.spaceId, m.mailboxId);
      let c = counted.get(k);
      if (!c) {
        const box = mailboxes.get(k);
        assert(box, `message ${m.id} of missing mailbox ${m.mailboxId}`);
        counted.set(k, (c = { spaceId: m.spaceId, mailboxId: m.mailboxId, mailboxName: box.name, ready: 0, claimed: 0, dead: 0, oldestReadyAt: null }));
      }
      if (m.state === 'READY') {
        c.ready++;
        if (c.oldestReadyAt === null || m.createdAt < c.oldestReadyAt) c.oldestReadyAt = m.createdAt;
      } else if (m.state === 'CLAIMED') c.claimed++;
      else c.dead++;
    }
    const live = (c: MailboxCensus): number => c.ready + c.claimed;
    const byKey = (a: MailboxCensus, b: MailboxCensus): number => (key(a.spaceId, a.mailboxId) < key(b.spaceId, b.mailboxId) ? -1 : 1);
    return [...counted.values()].sort((a, b) => live(b) - live(a) || b.dead - a.dead || byKey(a, b)).slice(0, limit);
  };
  /** READY or CLAIMED messages per space: what the usage repository's load counts (memory/usage.ts). */
  const liveBySpace = (): Map<string, LiveMessages> => {
    const bySpace = new Map<string, LiveMessages>();
    for (const m of messages.scan()) {
      if (m.state !== 'READY' && m.state !== 'CLAIMED') continue;
      const live = bySpace.get(m.spaceId) ?? { deliveries: 0, claimed: 0 };
      if (m.taskId !== null) live.deliveries++;
      if (m.state === 'CLAIMED') live.claimed++;
      bySpace.set(m.spaceId, live);
    }
    return bySpace;
  };
  /** A claim's write: the message claimed, and its task moved with it by the rule of tasks/rules.ts (an ended task stays as it is). */
  const claimWith = async (m: Message, c: ClaimRequest): Promise<ClaimedDelivery> => {
    const message = write(claim(m, c));
    if (message.taskId === null) return { message, task: undefined };
    const task = await tasks.get(message.spaceId, message.taskId);
    assert(task !== undefined, `delivery ${message.id} of missing task ${message.taskId}`);
    const moved = movedWithDelivery(task, claimMove(message.attempt, c.nowMs));
    if (moved) await tasks.update(moved);
    return { message, task: moved };
  };
  /** A lease expiry's find: the delivery (locked: transactions run one at a time) with its task. */
  const withTask = async (message: Message): Promise<LockedDelivery> => ({
    message,
    task: message.taskId === null ? undefined : await tasks.get(message.spaceId, message.taskId),
  });
  /** An unlessGated claim finds nothing when a gate scope lies below its scope. */
  const gated = (c: Pick<ClaimRequest, 'spaceId' | 'scopeIds' | 'unlessGated'>): boolean => {
    if (c.unlessGated !== true) return false;
    assert(c.scopeIds.length === 1, `an unlessGated claim names ${c.scopeIds.length} scopes`);
    return scopeSubtree(c.spaceId, c.scopeIds[0]!).length > 1;
  };

  return {
    liveBySpace,
    mailboxes: {
      insert: async (m) => {
        if (findMailbox(m.spaceId, m.name)) return false;
        assert(!mailboxes.has(key(m.spaceId, m.id)), `duplicate mailbox ${m.id}`);
        mailboxes.set(key(m.spaceId, m.id), m);
        return true;
      },
      get: async (spaceId, id, options) => (lock(options), mailboxes.get(key(spaceId, id))),
      getByName: async (spaceId, name) => findMailbox(spaceId, name),
      getForSend: async (spaceId, id, spaceCap) => {
        const mailbox = mailboxes.get(key(spaceId, id));
        return mailbox && { mailbox, live: countLive(spaceId, id, { mailbox: mailbox.backlogLimit, space: spaceCap }) };
      },
      getForClaim: async (spaceId, id, scopeId) => {
        const mailbox = mailboxes.get(key(spaceId, id));
        return mailbox && { mailbox, scopeIds: scopeSubtree(spaceId, scopeId) };
      },
      list: async (spaceId, afterName, limit) =>
        [...mailboxes.scan()]
          .filter((m) => m.spaceId === spaceId && (afterName === null || m.name > afterName))
          .sort(byName)
          .slice(0, limit)
          .map((m) => structuredClone(m)),
    },
    messages: {
      insert: async (m) => {
        assert(!messages.has(key(m.spaceId, m.id)), `duplicate message ${m.id}`);
        if (m.workKey !== null) assert(select((x) => x.spaceId === m.spaceId && x.mailboxId === m.mailboxId && x.workKey === m.workKey).length === 0, `message workKey ${m.workKey} taken`);
        write({ ...m, seq: ++lastSeq });
      },
      get: async (spaceId, id, options) => (lock(options), messages.get(key(spaceId, id))),
      lockMany: async (spaceId, ids) =>
        [...new Set(ids)]
          .sort()
          .map((id) => messages.get(key(spaceId, id)))
          .filter((m): m is Message => m !== undefined),
      getByWorkKey: async (spaceId, mailboxId, workKey) => structuredClone(select((m) => m.spaceId === spaceId && m.mailboxId === mailboxId && m.workKey === workKey)[0]),
      update: async (m) => {
        const prior = messages.get(key(m.spaceId, m.id));
        assert(prior && prior.seq === m.seq, `update of missing message ${m.id}`);
        write(m);
      },
      list: async (spaceId, mailboxId, states, after, limit) =>
        select((m) => m.spaceId === spaceId && m.mailboxId === mailboxId && (states === null || states.includes(m.state)) && (after === null || m.seq > after))
          .slice(0, limit)
          .map((m) => structuredClone(m)),
      countLive: async (spaceId, mailboxId, caps) => countLive(spaceId, mailboxId, caps),
      claimNext: async (c) => {
        if (gated(c)) return undefined;
        const [oldest] = select((m) => m.spaceId === c.spaceId && m.mailboxId === c.mailboxId && c.scopeIds.includes(m.scopeId) && m.state === 'READY');
        return oldest && claimWith(oldest, c);
      },
      claimCandidate: async (c) => {
        if (gated(c)) return undefined;
        const [oldest] = select((m) => m.spaceId === c.spaceId && m.mailboxId === c.mailboxId && c.scopeIds.includes(m.scopeId) && m.taskId !== null && m.state === 'READY' && m.seq > c.afterSeq);
        if (!oldest) return undefined;
        if (oldest.requirements !== null) return { message: oldest, claimed: false };
        return { ...(await claimWith(oldest, c)), claimed: true };
      },
      claimMany: async (c) => {
        if (gated(c)) return [];
        const ready = select((m) => m.spaceId === c.spaceId && m.mailboxId === c.mailboxId && c.scopeIds.includes(m.scopeId) && m.state === 'READY');
        const claimed: ClaimedDelivery[] = [];
        for (const [k, m] of ready.slice(0, c.tokenHashes.length).entries()) claimed.push(await claimWith(m, { ...c, tokenHash: c.tokenHashes[k]! }));
        return claimed;
      },
      claimCandidates: async (c) => {
        if (gated(c)) return [];
        const ready = select((m) => m.spaceId === c.spaceId && m.mailboxId === c.mailboxId && c.scopeIds.includes(m.scopeId) && m.taskId !== null && m.state === 'READY' && m.seq > c.afterSeq);
        const found: Candidate[] = [];
        for (const [k, m] of ready.slice(0, c.tokenHashes.length).entries()) {
          if (m.requirements !== null) {
            found.push({ message: m, claimed: false });
            continue;
          }
          found.push({ ...(await claimWith(m, { ...c, tokenHash: c.tokenHashes[k]! })), claimed: true });
        }
        return found;
      },
      claimExpired: async (nowMs, limit) => {
        const expired = [...messages.scan()]
          .filter((m) => m.state === 'CLAIMED' && m.leaseExpiresAt! <= nowMs)
          .sort((a, b) => a.leaseExpiresAt! - b.leaseExpiresAt! || a.seq - b.seq)
          .slice(0, limit);
        const found: LockedDelivery[] = [];
        for (const m of expired) found.push(await withTask(structuredClone(m)));
        return found;
      },
      census: async (limit) => census(limit),
      purgeFinished: async (cutoffs, limit) => {
        const cutoffOf = new Map(cutoffs.map((c) => [c.spaceId, c.cutoffMs]));
        const due = [...messages.scan()]
          .filter((m) => {
            const cutoffMs = cutoffOf.get(m.spaceId);
            return cutoffMs !== undefined && finishedMessageStates.includes(m.state) && m.updatedAt <= cutoffMs;
          })
          .sort((a, b) => a.updatedAt - b.updatedAt || bySeq(a, b))
          .slice(0, limit);
        for (const m of due) messages.delete(key(m.spaceId, m.id));
        return due.length;
      },
    },
  };
}
