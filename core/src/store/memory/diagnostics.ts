import type { AllowanceWaiter, WaitLineCensus } from '../../allowances/model';
import type { Reservation } from '../../budgets/model';
import type { BarrierWait, StateCount } from '../../diagnostics/model';
import type { DeliverySummary, DiagnosticsRepository, TaskSummary } from '../../diagnostics/repository';
import { eventTypes, type JournalEvent } from '../../events/model';
import type { MailboxCensus, Message } from '../../messages/model';
import type { Task } from '../../tasks/model';
import type { Repositories } from '../repositories';
import type { MemoryTable } from './table';

/** "No limit" for the list reads below: the memory store answers from memory, so a read of everything is a scan. */
const all = Number.MAX_SAFE_INTEGER;

/**
 * The diagnostics reads in memory (the simulator's and unit tests' store), built on the other
 * memory repositories' reads, since transactions run one at a time and a scan is all any read
 * is here. Two things no repository reads: waiters in every state (the allowances' own table)
 * and who arrived at a barrier, which comes from its barrier.arrived events (one per counted
 * arrival), each checked against the arrival rows (BarrierRepository.getArrival).
 */
export function memoryDiagnostics(repositories: () => Repositories, tables: { waiters: MemoryTable<AllowanceWaiter>; events: () => Iterable<JournalEvent> }): DiagnosticsRepository {
  const r = repositories;
  const reservationsOf = async (spaceId: string): Promise<Reservation[]> => {
    const out: Reservation[] = [];
    for (const b of await r().budgets.list(spaceId, null, all)) out.push(...(await r().reservations.list(spaceId, b.id, null, null, all)));
    return out;
  };
  const messagesOf = async (spaceId: string, states: Message['state'][] | null): Promise<Message[]> => {
    const out: Message[] = [];
    for (const m of await r().mailboxes.list(spaceId, null, all)) out.push(...(await r().messages.list(spaceId, m.id, states, null, all)));
    return out;
  };
  const waitersOf = (spaceId: string): AllowanceWaiter[] => [...tables.waiters.scan()].filter((w) => w.spaceId === spaceId);

  return {
    census: async (spaceId, cap) => {
      const repos = r();
      return [
        ...counted('budgets', await repos.budgets.list(spaceId, null, all), cap),
        ...counted('reservations', await reservationsOf(spaceId), cap),
        ...counted('barriers', await repos.barriers.list(spaceId, null, null, all), cap),
        ...counted('pools', await repos.pools.list(spaceId, null, all), cap),
        ...counted('workLimits', await repos.workLimits.list(spaceId, null, all), cap),
        ...counted('allowances', await repos.allowances.list(spaceId, null, all), cap),
        ...counted('allowanceWaiters', waitersOf(spaceId), cap),
        ...counted('mailboxes', await repos.mailboxes.list(spaceId, null, all), cap),
        ...counted('messages', await messagesOf(spaceId, null), cap),
        ...counted('tasks', await repos.tasks.list(spaceId, null, null, null, all), cap),
        ...counted('taskGroups', await repos.taskGroups.list(spaceId, null, null, all), cap),
        ...counted('destinations', await repos.destinations.list(spaceId, null, all), cap),
      ];
    },
    backlog: async (spaceId, afterName, limit, cap) => {
      const out: MailboxCensus[] = [];
      for (const box of await r().mailboxes.list(spaceId, afterName, limit)) {
        // READY and CLAIMED read together up to the cap, as the SQL store reads messages_live.
        const live = await r().messages.list(spaceId, box.id, ['READY', 'CLAIMED'], null, cap);
        const ready = live.filter((m) => m.state === 'READY');
        const claimed = live.filter((m) => m.state === 'CLAIMED');
        const dead = await r().messages.list(spaceId, box.id, ['DEAD'], null, cap);
        const oldestReadyAt = ready.length === 0 ? null : Math.min(...ready.map((m) => m.createdAt));
        out.push({ spaceId, mailboxId: box.id, mailboxName: box.name, ready: ready.length, claimed: claimed.length, dead: dead.length, oldestReadyAt });
      }
      return out;
    },
    waitLines: async (spaceId, cap) => {
      // Line order (allowance, position), as the SQL store reads allowance_waiters_line.
      const waiting = waitersOf(spaceId)
        .filter((w) => w.state === 'WAITING')
        .sort((a, b) => (a.allowanceId < b.allowanceId ? -1 : a.allowanceId > b.allowanceId ? 1 : a.position - b.position))
        .slice(0, cap);
      const lines = new Map<string, WaitLineCensus>();
      for (const w of waiting) {
        const line = lines.get(w.allowanceId);
        if (line) {
          line.waiting++;
          line.oldestWaitingAt = Math.min(line.oldestWaitingAt, w.createdAt);
          continue;
        }
        const allowance = await r().allowances.get(spaceId, w.allowanceId);
        lines.set(w.allowanceId, { spaceId, allowanceId: w.allowanceId, allowanceName: allowance?.name ?? '', waiting: 1, oldestWaitingAt: w.createdAt });
      }
      return [...lines.values()];
    },
    waitingBarriers: async (spaceId, limit, arrivalLimit) => {
      const out: BarrierWait[] = [];
      for (const b of await r().barriers.list(spaceId, ['WAITING'], null, limit)) {
        const keys = new Set<string>();
        for (const e of tables.events()) {
          if (e.spaceId !== spaceId || e.type !== eventTypes.barrierArrived || e.aggregateId !== b.id || e.data.epoch !== b.epoch) continue;
          const key = String(e.data.arrivalKey);
          if (await r().barriers.getArrival(spaceId, b.id, b.epoch, key)) keys.add(key);
        }
        const arrivalKeys = [...keys].sort().slice(0, arrivalLimit);
        out.push({ id: b.id, scopeId: b.scopeId, epoch: b.epoch, target: b.target, arrivals: b.arrivals, arrivalKeys, createdAt: b.createdAt });
      }
      return out;
    },
    gatedDeliveries: async (spaceId, limit) =>
      (await messagesOf(spaceId, ['READY']))
        .filter((m) => m.taskId !== null && m.requirements !== null)
        .sort((a, b) => a.seq - b.seq)
        .slice(0, limit)
        .map(deliverySummary),
    deliveries: async (spaceId, messageIds) => {
      const found = await Promise.all([...new Set(messageIds)].map((id) => r().messages.get(spaceId, id)));
      return found.filter((m): m is Message => m !== undefined).map(deliverySummary);
    },
    taskSummaries: async (spaceId, ids) => {
      const found = await Promise.all([...new Set(ids)].map((id) => r().tasks.get(spaceId, id)));
      return found.filter((t): t is Task => t !== undefined).map(taskSummary);
    },
    scopeTasks: async (spaceId, scopeId, after, limit) => (await r().tasks.list(spaceId, scopeId, null, after, limit)).map(taskSummary),
    allowancesWithWaiters: async (spaceId, allowanceIds) => {
      const out: string[] = [];
      for (const id of new Set(allowanceIds)) if ((await r().allowanceWaiters.listWaiting(spaceId, id, 1)).length > 0) out.push(id);
      return out;
    },
    runCounts: async (spaceId, scopeId, cap) => [
      ...counted('tasks', await r().tasks.list(spaceId, scopeId, null, null, cap), cap),
      ...counted('taskGroups', (await r().taskGroups.list(spaceId, null, null, all)).filter((g) => g.parentScopeId === scopeId), cap),
      ...counted('reservations', (await reservationsOf(spaceId)).filter((x) => x.scopeId === scopeId), cap),
      ...counted('timers', await r().timers.list(spaceId, { states: null, scopeId }, null, cap), cap),
      ...counted('claims', await r().claims.list(spaceId, { claimKey: null, scopeId, states: null }, null, cap), cap),
    ],
  };
}

/** The first `cap` rows counted by state (null for a type without states); no zero counts, as DiagnosticsRepository says. */
function counted<T extends string>(type: T, rows: readonly object[], cap: number): StateCount<T>[] {
  const kept = rows.slice(0, cap);
  const byState = new Map<string | null, number>();
  for (const row of kept) {
    const state = 'state' in row && typeof row.state === 'string' ? row.state : null;
    byState.set(state, (byState.get(state) ?? 0) + 1);
  }
  return [...byState].map(([state, count]) => ({ type, state, count }));
}

const deliverySummary = (m: Message): DeliverySummary => ({
  messageId: m.id,
  taskId: m.taskId,
  mailboxId: m.mailboxId,
  scopeId: m.scopeId,
  state: m.state,
  attempt: m.attempt,
  requirements: m.requirements,
  holder: m.holder,
  holderSession: m.holderSession,
  leaseExpiresAt: m.leaseExpiresAt,
  createdAt: m.createdAt,
});

const taskSummary = (t: Task): TaskSummary => ({ id: t.id, taskKey: t.taskKey, state: t.state, mailboxId: t.mailboxId, scopeId: t.scopeId, messageId: t.messageId, createdAt: t.createdAt });
