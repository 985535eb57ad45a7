import type { AllowanceRepository, AllowanceWaiterRepository, ConsumptionRepository } from '../allowances/repository';
import type { BarrierRepository } from '../barriers/repository';
import type { ClaimRepository } from '../claims/repository';
import type { TimerRepository } from '../timers/repository';
import type { BudgetEntryRepository, BudgetRepository, ReservationRepository } from '../budgets/repository';
import type { DeliveryAttemptRepository, DestinationRepository } from '../destinations/repository';
import type { DiagnosticsRepository } from '../diagnostics/repository';
import type { EventRepository } from '../events/repository';
import type { TaskGroupRepository } from '../groups/repository';
import type { MailboxRepository, MessageRepository } from '../messages/repository';
import type { PoolRepository, WorkLimitRepository } from '../pools/repository';
import type { TaskRepository } from '../tasks/repository';
import type { ApiKeyRepository, OrgRepository, SpaceRepository } from '../tenancy/repository';
import type { IdempotencyRepository } from './idempotency-repository';
import type { RetentionRepository } from './retention-repository';
import type { UsageRepository } from '../usage/repository';
import type { RunRepository } from '../runs/repository';
import type { SavepointRunner } from './savepoints';

/**
 * The typed repositories every store implements (memory in core, SQL in server), one per
 * domain, each declared beside its domain (budgets/repository.ts, ...). One conformance suite
 * (test/store-conformance*.test.ts) holds every implementation to them. Every tenant query takes
 * spaceId first: tenant isolation in depth.
 */
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
  claims: ClaimRepository;
  timers: TimerRepository;
  events: EventRepository;
  idempotency: IdempotencyRepository;
  retention: RetentionRepository;
  pools: PoolRepository;
  workLimits: WorkLimitRepository;
  mailboxes: MailboxRepository;
  messages: MessageRepository;
  tasks: TaskRepository;
  taskGroups: TaskGroupRepository;
  destinations: DestinationRepository;
  deliveryAttempts: DeliveryAttemptRepository;
  diagnostics: DiagnosticsRepository;
  usage: UsageRepository;
  runs: RunRepository;
}

export type { AllowanceRepository, AllowanceWaiterRepository, ConsumptionRepository } from '../allowances/repository';
export type { BarrierRepository } from '../barriers/repository';
export type { ClaimRepository } from '../claims/repository';
export type { TimerRepository } from '../timers/repository';
export type { BudgetEntryRepository, BudgetRepository, ReservationRepository } from '../budgets/repository';
export type { DeliveryAttemptRepository, DestinationRepository } from '../destinations/repository';
export type { DeliverySummary, DiagnosticsRepository, TaskSummary } from '../diagnostics/repository';
export type { EventRepository } from '../events/repository';
export type { TaskGroupRepository } from '../groups/repository';
export type { MailboxRepository, MessageRepository } from '../messages/repository';
export type { CapacityRepository, PoolRepository, WorkLimitRepository } from '../pools/repository';
export type { TaskRepository } from '../tasks/repository';
export type { ApiKeyRepository, KeyWithTenant, OrgRepository, SpaceRepository } from '../tenancy/repository';
export type { IdempotencyRecord, IdempotencyRepository } from './idempotency-repository';
export type { RetentionRepository, RetentionSpace, SpaceCutoff } from './retention-repository';
export type { OrgLoad, UsageRepository } from '../usage/repository';
export type { RunRepository } from '../runs/repository';
export type { LockOptions } from './lock-options';
export type { Page } from './page';
export type { SavepointRunner } from './savepoints';
