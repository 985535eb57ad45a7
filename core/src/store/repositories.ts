import type { Budget, BudgetEntry, Reservation } from '../budgets/model';
import type { JournalEvent, NewEvent } from '../events/model';
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
  countByOrg(orgId: string): Promise<number>;
}

export interface ApiKeyRepository {
  insert(key: ApiKey): Promise<void>;
  get(id: string): Promise<ApiKey | undefined>;
  update(key: ApiKey): Promise<void>;
  countActiveByOrg(orgId: string): Promise<number>;
}

export interface LockOptions {
  /** Hold a row lock until the transaction ends (SELECT ... FOR UPDATE). */
  forUpdate?: boolean;
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

export interface Repositories {
  orgs: OrgRepository;
  spaces: SpaceRepository;
  apiKeys: ApiKeyRepository;
  budgets: BudgetRepository;
  reservations: ReservationRepository;
  budgetEntries: BudgetEntryRepository;
  events: EventRepository;
  idempotency: IdempotencyRepository;
}
