import type { Barrier, BarrierArrival, BarrierListPosition, BarrierState } from '../barriers/model';
import type { Budget, BudgetEntry, Reservation } from '../budgets/model';
import type { AllowanceRepository, AllowanceWaiterRepository, ConsumptionRepository } from './allowance-repositories';
import type { MailboxRepository, MessageRepository } from './message-repositories';
import type { TaskRepository } from './task-repositories';
import type { TaskGroupRepository } from './group-repositories';
import type { JournalEvent, NewEvent } from '../events/model';
import type { Pool, WorkLimit } from '../pools/model';
import type { ApiKey, Org, Space } from '../tenancy/model';

/**
 * The typed repositories every store implements (memory in core, SQL in server). One
 * conformance suite (test/store-conformance.test.ts) holds every implementation to them.
 * Every tenant query takes spaceId first: tenant isolation in depth.
 */

export interface Page<T> {
  items: T[];
  /** Opaque position after the last item, or null when there is nothing more. */
  nextCursor: string | null;
}

export interface OrgRepository {
  insert(org: Org): Promise<void>;
  get(id: string): Promise<Org | undefined>;
  update(org: Org): Promise<void>;
  count(): Promise<number>;
}

export interface SpaceRepository {
  insert(space: Space): Promise<void>;
  get(id: string): Promise<Space | undefined>;
  update(space: Space): Promise<void>;
  countByOrg(orgId: string): Promise<number>;
}

/** A key with its organization and the space a request names, as authentication reads them. */
export interface KeyWithTenant {
  key: ApiKey;
  org: Org | undefined;
  space: Space | undefined;
}

export interface ApiKeyRepository {
  insert(key: ApiKey): Promise<void>;
  get(id: string): Promise<ApiKey | undefined>;
  update(key: ApiKey): Promise<void>;
  countActiveByOrg(orgId: string): Promise<number>;
  /**
   * The key with its organization and the space a request names, in one round trip: every
   * request authenticates, so this is on every request's path (server/src/http/auth.ts).
   */
  getWithTenant(keyId: string, spaceId: string): Promise<KeyWithTenant | undefined>;
}

export interface LockOptions {
  /** Hold a row lock until the transaction ends (SELECT ... FOR UPDATE). */
  forUpdate?: boolean;
  /**
   * With forUpdate: do not wait for a lock another transaction holds; fail at once instead
   * (FOR UPDATE NOWAIT). The SQL store then retries the whole transaction (sql-store.ts). For a
   * holder of a group's lock that needs a member's row, which the lock order puts before the
   * group (docs/lock-order.md): waiting there could deadlock.
   */
  noWait?: boolean;
}

export interface BudgetRepository {
  insert(budget: Budget): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Budget | undefined>;
  getByName(spaceId: string, name: string): Promise<Budget | undefined>;
  /** Budgets ordered by name; `afterName` is exclusive. */
  list(spaceId: string, afterName: string | null, limit: number): Promise<Budget[]>;
  update(budget: Budget): Promise<void>;
}

export interface ReservationRepository {
  insert(reservation: Reservation): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Reservation | undefined>;
  update(reservation: Reservation): Promise<void>;
  /** ACTIVE reservations of a budget, oldest first. */
  listActive(spaceId: string, budgetId: string): Promise<Reservation[]>;
  /**
   * ACTIVE reservations of any space whose settleBy is at or before `nowMs` and whose overdue
   * event is not yet emitted, locked for this transaction. Rows another server is already
   * sweeping are skipped, so sweepers on several servers never emit one event twice.
   */
  claimOverdue(nowMs: number, limit: number): Promise<Reservation[]>;
}

export interface BudgetEntryRepository {
  insert(entry: BudgetEntry): Promise<void>;
  getByWorkKey(spaceId: string, budgetId: string, workKey: string): Promise<BudgetEntry | undefined>;
}

export interface EventRepository {
  append(spaceId: string, occurredAt: number, events: NewEvent[]): Promise<void>;
  /**
   * Events after `afterEventId` in eventId order. Never returns an event while an event with a
   * smaller eventId may still commit: a reader that follows the last eventId skips nothing.
   */
  listAfter(spaceId: string, afterEventId: string, limit: number): Promise<JournalEvent[]>;
}

export interface IdempotencyRecord {
  spaceId: string;
  key: string;
  /** Method, path and canonical body, hashed (decisions §4). */
  fingerprint: string;
  statusCode: number;
  body: unknown;
  createdAt: number;
}

export interface IdempotencyRepository {
  /**
   * Takes the key for this transaction. False while another transaction holds it: the first
   * request is still in flight (IDEMPOTENCY_KEY_IN_FLIGHT).
   */
  tryLock(spaceId: string, key: string): Promise<boolean>;
  get(spaceId: string, key: string): Promise<IdempotencyRecord | undefined>;
  /** Inserts, or replaces a record older than the replay window. */
  put(record: IdempotencyRecord): Promise<void>;
}

/**
 * Pools and work limits: named counts of units in use under a fixed limit. A claim and a
 * release are each one atomic step (one statement in SQL), so concurrent admissions can never
 * push inUse past the limit or below 0, and no lock is held between statements. Who holds how
 * many units (grant rows, for renew and lease expiry) arrives with admission.
 */
export interface CapacityRepository<T> {
  /** False, writing nothing, when the space already has one of that name (a concurrent create won). */
  insert(row: T): Promise<boolean>;
  get(spaceId: string, id: string): Promise<T | undefined>;
  /** Requirements name pools and work limits; submit and admission resolve them here. */
  getByName(spaceId: string, name: string): Promise<T | undefined>;
  /** Ordered by name; `afterName` is exclusive. */
  list(spaceId: string, afterName: string | null, limit: number): Promise<T[]>;
  /** Adds `units` to inUse when they fit under the limit: the updated row, else undefined (also for an unknown id). */
  claim(spaceId: string, id: string, units: number, nowMs: number): Promise<T | undefined>;
  /** Takes `units` off inUse: the updated row. More than is in use, or an unknown id, is a bug (InvariantViolation). */
  release(spaceId: string, id: string, units: number, nowMs: number): Promise<T>;
}

export type PoolRepository = CapacityRepository<Pool>;
export type WorkLimitRepository = CapacityRepository<WorkLimit>;

/** Barriers and their arrivals (core/src/barriers). */
export interface BarrierRepository {
  insert(barrier: Barrier): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Barrier | undefined>;
  /** Barriers in (createdAt, id) order after `after` (exclusive), in any of `states` (any state when null). */
  list(spaceId: string, states: readonly BarrierState[] | null, after: BarrierListPosition | null, limit: number): Promise<Barrier[]>;
  update(barrier: Barrier): Promise<void>;
  /** (spaceId, barrierId, epoch, arrivalKey) is unique: a second insert of one arrival throws. */
  insertArrival(arrival: BarrierArrival): Promise<void>;
  getArrival(spaceId: string, barrierId: string, epoch: number, arrivalKey: string): Promise<BarrierArrival | undefined>;
  countArrivals(spaceId: string, barrierId: string, epoch: number): Promise<number>;
}

/**
 * A savepoint inside the transaction. `attempt` runs `work` after it and keeps what work wrote
 * when work answers true; when work answers false or throws, everything work wrote is undone and
 * every row lock it took is released (ROLLBACK TO SAVEPOINT), so a passed-over admission
 * candidate leaves no claim and no lock behind. Only inside Store.transaction.
 */
export interface SavepointRunner {
  attempt(work: () => Promise<boolean>): Promise<boolean>;
}

export interface Repositories {
  savepoints: SavepointRunner;
  allowances: AllowanceRepository;
  allowanceWaiters: AllowanceWaiterRepository;
  consumptions: ConsumptionRepository;
  orgs: OrgRepository;
  spaces: SpaceRepository;
  apiKeys: ApiKeyRepository;
  budgets: BudgetRepository;
  reservations: ReservationRepository;
  budgetEntries: BudgetEntryRepository;
  barriers: BarrierRepository;
  events: EventRepository;
  idempotency: IdempotencyRepository;
  pools: PoolRepository;
  workLimits: WorkLimitRepository;
  mailboxes: MailboxRepository;
  messages: MessageRepository;
  tasks: TaskRepository;
  taskGroups: TaskGroupRepository;
}

export type { AllowanceRepository, AllowanceWaiterRepository, ConsumptionRepository } from './allowance-repositories';
export type { MailboxRepository, MessageRepository } from './message-repositories';
export type { TaskRepository } from './task-repositories';
export type { TaskGroupRepository } from './group-repositories';
