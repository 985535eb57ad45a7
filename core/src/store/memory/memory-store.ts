import { assert } from '../../assert';
import type { Allowance, AllowanceWaiter, Consumption } from '../../allowances/model';
import { memoryAllowances } from './allowances';
import type { Budget, BudgetEntry, Reservation } from '../../budgets/model';
import { assertConservation } from '../../budgets/rules';
import type { JournalEvent, NewEvent } from '../../events/model';
import type { Pool, WorkLimit } from '../../pools/model';
import { memoryPools } from './pools';
import { memoryBarriers } from './barriers';
import { memoryClaims } from './claims';
import { memoryTimers } from './timers';
import { memoryMessages } from './messages';
import { memoryTasks } from './tasks';
import { memoryGroups } from './groups';
import { memoryDestinations } from './destinations';
import { memoryDiagnostics } from './diagnostics';
import { memoryUsage } from './usage';
import { memoryRuns } from './runs';
import { pageByCreated } from './created-order';
import type { OrgLoad } from '../../usage/repository';
import type { ApiKey, Org, Space } from '../../tenancy/model';
import type { IdempotencyRecord, LockOptions, Repositories } from '../repositories';
import type { Store, Tx } from '../store';
import { MemoryTable } from './table';
import { maxRacedAttempts, racedTooOften, TransactionRaced } from '../raced';

const key = (spaceId: string, id: string): string => `${spaceId}\u0000${id}`;

/**
 * The in-memory store: used by the simulator and by fast unit tests. Transactions run one at
 * a time (a promise-chain mutex), which gives serializable isolation and a journal that commits
 * in eventId order; a failed transaction is rolled back through the undo log.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  private undo: (() => void)[] | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly log = (): (() => void)[] | undefined => this.undo;

  private readonly orgs = new MemoryTable<Org>(this.log);
  private readonly spaces = new MemoryTable<Space>(this.log);
  private readonly apiKeys = new MemoryTable<ApiKey>(this.log);
  private readonly budgets = new MemoryTable<Budget>(this.log);
  private readonly reservations = new MemoryTable<Reservation>(this.log);
  private readonly entries = new MemoryTable<BudgetEntry>(this.log);
  private readonly events = new MemoryTable<JournalEvent>(this.log);
  private readonly idempotency = new MemoryTable<IdempotencyRecord>(this.log);
  /** Per space, the eventId of the newest event retention deleted (EventRepository.purgedThrough). */
  private readonly journalStarts = new MemoryTable<string>(this.log);
  private readonly allowanceTables = {
    allowances: new MemoryTable<Allowance>(this.log),
    waiters: new MemoryTable<AllowanceWaiter>(this.log),
    consumptions: new MemoryTable<Consumption>(this.log),
  };
  private readonly poolTables = { pools: new MemoryTable<Pool>(this.log), workLimits: new MemoryTable<WorkLimit>(this.log) };
  private lastEventId = 0;
  private readonly repositories: Repositories = this.buildRepositories();

  /** Runs `work` again after a lost race (raced.ts), as the SQL store does; see attempt. */
  async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(work);
      } catch (error) {
        if (!(error instanceof TransactionRaced)) throw error;
        if (attempt >= maxRacedAttempts) throw racedTooOften(error);
      }
    }
  }

  private attempt<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      assert(this.undo === undefined, 'memory store: nested transaction');
      this.undo = [];
      const eventIdBefore = this.lastEventId;
      try {
        const result = await work(this.repositories);
        this.undo = undefined;
        return result;
      } catch (error) {
        const undo = this.undo ?? [];
        this.undo = undefined;
        for (let i = undo.length - 1; i >= 0; i--) undo[i]!();
        this.lastEventId = eventIdBefore;
        throw error;
      }
    });
  }

  read<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.exclusive(() => work(this.repositories));
  }

  /** Nothing to keep up: no planner, no statistics. */
  async maintain(): Promise<void> {}

  async close(): Promise<void> {
    await this.tail.catch(() => undefined);
  }

  /** A savepoint is a mark in the undo log: rolling back to it undoes the writes after it. */
  private async attemptInSavepoint(work: () => Promise<boolean>): Promise<boolean> {
    assert(this.undo !== undefined, 'memory store: savepoint outside a transaction');
    const mark = this.undo.length;
    const eventIdBefore = this.lastEventId;
    const rollBack = (): void => {
      const undo = this.undo!;
      for (let i = undo.length - 1; i >= mark; i--) undo[i]!();
      undo.length = mark;
      this.lastEventId = eventIdBefore;
    };
    let keep: boolean;
    try {
      keep = await work();
    } catch (error) {
      rollBack();
      throw error;
    }
    if (!keep) rollBack();
    return keep;
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work, work);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private buildRepositories(): Repositories {
    const { orgs, spaces, apiKeys, budgets, reservations, entries, events, idempotency } = this;
    const lock = (_options?: LockOptions): void => undefined; // transactions are already exclusive
    const { tasks } = memoryTasks(
      this.log,
      () => this.events.scan(),
      async (spaceId, messageId) => (await messageRepositories.messages.get(spaceId, messageId))?.taskId,
    );
    const { taskGroups, scopeSubtree, gateParentOf } = memoryGroups(this.log, tasks);
    const { runs, activeBySpace } = memoryRuns(this.log, gateParentOf);
    const { liveBySpace, ...messageRepositories } = memoryMessages(this.log, scopeSubtree, tasks);
    const claims = memoryClaims(this.log);
    const loadOf = async (orgIds: readonly string[], nowMs: number): Promise<Map<string, OrgLoad>> => {
      const loads = new Map<string, OrgLoad>();
      const orgOf = (spaceId: string): string | undefined => {
        const orgId = spaces.get(spaceId)?.orgId;
        return orgId !== undefined && orgIds.includes(orgId) ? orgId : undefined;
      };
      const add = (spaceId: string, added: Partial<OrgLoad>): void => {
        const orgId = orgOf(spaceId);
        if (orgId === undefined) return;
        const load = loads.get(orgId) ?? { activeTasks: 0, liveLeases: 0, activeRuns: 0 };
        loads.set(orgId, { activeTasks: load.activeTasks + (added.activeTasks ?? 0), liveLeases: load.liveLeases + (added.liveLeases ?? 0), activeRuns: load.activeRuns + (added.activeRuns ?? 0) });
      };
      for (const [spaceId, live] of liveBySpace()) add(spaceId, { activeTasks: live.deliveries, liveLeases: live.claimed });
      for (const pool of this.poolTables.pools.scan()) if (pool.inUse > 0) add(pool.spaceId, { liveLeases: pool.inUse });
      for (const [spaceId, active] of activeBySpace()) add(spaceId, { activeRuns: active });
      const spaceIds = [...spaces.scan()].filter((s) => orgIds.includes(s.orgId)).map((s) => s.id);
      for (const [spaceId, held] of await claims.countLive(spaceIds, nowMs)) add(spaceId, { liveLeases: held });
      return loads;
    };
    return {
      savepoints: { attempt: (work) => this.attemptInSavepoint(work) },
      ...memoryAllowances(this.allowanceTables),
      ...memoryPools(this.poolTables),
      barriers: memoryBarriers(this.log),
      claims,
      timers: memoryTimers(this.log),
      ...memoryDestinations(this.log),
      diagnostics: memoryDiagnostics(() => this.repositories, { waiters: this.allowanceTables.waiters, events: () => this.events.scan() }),
      usage: memoryUsage(this.log, loadOf),
      runs,
      ...messageRepositories,
      tasks,
      taskGroups,
      orgs: {
        insert: async (org) => insertNew(orgs, org.id, org),
        get: async (id) => orgs.get(id),
        update: async (org) => updateExisting(orgs, org.id, org),
        count: async () => orgs.size,
        list: async (after, limit) => pageByCreated(orgs.scan(), after, limit),
      },
      spaces: {
        insert: async (space) => insertNew(spaces, space.id, space),
        get: async (id) => spaces.get(id),
        update: async (space) => updateExisting(spaces, space.id, space),
        countByOrg: async (orgId) => count(spaces.scan(), (s) => s.orgId === orgId),
        listByOrg: async (orgId, after, limit) => pageByCreated([...spaces.scan()].filter((s) => s.orgId === orgId), after, limit),
      },
      apiKeys: {
        insert: async (k) => insertNew(apiKeys, k.id, k),
        get: async (id) => apiKeys.get(id),
        update: async (k) => updateExisting(apiKeys, k.id, k),
        countActiveByOrg: async (orgId) => count(apiKeys.scan(), (k) => k.orgId === orgId && k.revokedAt === null),
        listByOrg: async (orgId, spaceId, after, limit) =>
          pageByCreated([...apiKeys.scan()].filter((k) => k.orgId === orgId && (spaceId === null || k.spaceIds === null || k.spaceIds.includes(spaceId))), after, limit),
        getWithTenant: async (keyId, spaceId) => {
          const k = apiKeys.get(keyId);
          return k && { key: k, org: orgs.get(k.orgId), space: spaces.get(spaceId) };
        },
      },
      budgets: {
        insert: async (b) => {
          assert(!find(budgets.scan(), (x) => x.spaceId === b.spaceId && x.name === b.name), `budget name ${b.name} taken`);
          insertNew(budgets, key(b.spaceId, b.id), b);
        },
        get: async (spaceId, id, options) => (lock(options), budgets.get(key(spaceId, id))),
        getByName: async (spaceId, name) => clone(find(budgets.scan(), (b) => b.spaceId === spaceId && b.name === name)),
        list: async (spaceId, afterName, limit) =>
          [...budgets.scan()]
            .filter((b) => b.spaceId === spaceId && (afterName === null || b.name > afterName))
            .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
            .slice(0, limit)
            .map((b) => structuredClone(b)),
        update: async (b) => updateExisting(budgets, key(b.spaceId, b.id), b),
        reserve: async (spaceId, id, amountMinor, nowMs) => {
          const b = budgets.get(key(spaceId, id));
          assert(b && amountMinor > 0n, `reserve of ${amountMinor} from budget ${id}`);
          if (b.availableMinor < amountMinor) throw new TransactionRaced(`budget ${id} has ${b.availableMinor} available, not ${amountMinor}`);
          const next = { ...b, availableMinor: b.availableMinor - amountMinor, reservedMinor: b.reservedMinor + amountMinor, updatedAt: Math.max(b.updatedAt, nowMs) };
          assertConservation(next);
          budgets.set(key(spaceId, id), next);
        },
      },
      reservations: {
        insert: async (r) => insertNew(reservations, key(r.spaceId, r.id), r),
        get: async (spaceId, id, options) => (lock(options), reservations.get(key(spaceId, id))),
        update: async (r) => updateExisting(reservations, key(r.spaceId, r.id), r),
        listActive: async (spaceId, budgetId) =>
          [...reservations.scan()]
            .filter((r) => r.spaceId === spaceId && r.budgetId === budgetId && r.state === 'ACTIVE')
            .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
            .map((r) => structuredClone(r)),
        list: async (spaceId, budgetId, states, after, limit) =>
          [...reservations.scan()]
            .filter((r) => r.spaceId === spaceId && r.budgetId === budgetId && (states === null || states.includes(r.state)))
            .filter((r) => after === null || r.createdAt > after.createdAt || (r.createdAt === after.createdAt && r.id > after.id))
            .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
            .slice(0, limit)
            .map((r) => structuredClone(r)),
        claimOverdue: async (nowMs, limit) =>
          [...reservations.scan()]
            .filter((r) => r.state === 'ACTIVE' && r.overdueAt === null && r.settleBy !== null && r.settleBy <= nowMs)
            .sort((a, b) => a.settleBy! - b.settleBy! || (a.id < b.id ? -1 : 1))
            .slice(0, limit)
            .map((r) => structuredClone(r)),
      },
      budgetEntries: {
        insert: async (e) => {
          const k = key(e.spaceId, `${e.budgetId}\u0000${e.workKey}`);
          insertNew(entries, k, e);
        },
        getByWorkKey: async (spaceId, budgetId, workKey) => entries.get(key(spaceId, `${budgetId}\u0000${workKey}`)),
      },
      events: {
        append: async (spaceId, occurredAt, newEvents) => {
          for (const e of newEvents) {
            this.lastEventId += 1;
            const eventId = String(this.lastEventId);
            // set() stores a deep copy: no clone of its own needed here.
            events.set(eventId, { ...(e as NewEvent), eventId, spaceId, occurredAt });
          }
        },
        listAfter: async (spaceId, afterEventId, limit) => {
          const out: JournalEvent[] = [];
          for (let id = Number(afterEventId) + 1; id <= this.lastEventId && out.length < limit; id++) {
            // Looked at before it is cloned: most events of a busy journal are other spaces'.
            if (events.peek(String(id))?.spaceId === spaceId) out.push(events.get(String(id))!);
          }
          return out;
        },
        // Ids are global and commits run one at a time: the newest id is past every event of every space.
        tail: async () => String(this.lastEventId),
        purgeBefore: async (cutoffs, limit) => {
          const cutoffOf = new Map(cutoffs.map((c) => [c.spaceId, c.cutoffMs]));
          const due = [...events.scan()]
            .filter((e) => {
              const cutoffMs = cutoffOf.get(e.spaceId);
              return cutoffMs !== undefined && e.occurredAt <= cutoffMs;
            })
            .sort((a, b) => Number(a.eventId) - Number(b.eventId))
            .slice(0, limit);
          for (const e of due) {
            events.delete(e.eventId);
            if (Number(e.eventId) > Number(this.journalStarts.get(e.spaceId) ?? '0')) this.journalStarts.set(e.spaceId, e.eventId);
          }
          return due.length;
        },
        purgedThrough: async (spaceId) => this.journalStarts.get(spaceId) ?? '0',
      },
      retention: {
        spacesAfter: async (afterSpaceId, limit) =>
          [...spaces.scan()]
            .filter((s) => afterSpaceId === null || s.id > afterSpaceId)
            .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
            .slice(0, limit)
            .map((s) => {
              const org = orgs.get(s.orgId);
              assert(org, `space ${s.id} of missing organization ${s.orgId}`);
              return { spaceId: s.id, org: { plan: org.plan, limits: structuredClone(org.limits) } };
            }),
      },
      idempotency: {
        tryLock: async () => true,
        get: async (spaceId, k) => idempotency.get(key(spaceId, k)),
        put: async (record) => idempotency.set(key(record.spaceId, record.key), record),
        purgeUntil: async (cutoffMs, limit) => {
          const due = [...idempotency.scan()].filter((r) => r.createdAt <= cutoffMs).slice(0, limit);
          for (const r of due) idempotency.delete(key(r.spaceId, r.key));
          return due.length;
        },
      },
    };
  }
}

function insertNew<V>(table: MemoryTable<V>, id: string, value: V): void {
  assert(!table.has(id), `duplicate key ${id}`);
  table.set(id, value);
}

function updateExisting<V>(table: MemoryTable<V>, id: string, value: V): void {
  assert(table.has(id), `update of missing row ${id}`);
  table.set(id, value);
}

function find<V>(rows: Iterable<V>, match: (v: V) => boolean): V | undefined {
  for (const row of rows) if (match(row)) return row;
  return undefined;
}

function count<V>(rows: Iterable<V>, match: (v: V) => boolean): number {
  let n = 0;
  for (const row of rows) if (match(row)) n++;
  return n;
}

function clone<V>(value: V | undefined): V | undefined {
  return value === undefined ? undefined : structuredClone(value);
}
