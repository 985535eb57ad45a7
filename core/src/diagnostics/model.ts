import type { ResourceKind } from '../admission/model';
import { waiterStates } from '../allowances/model';
import { barrierStates } from '../barriers/model';
import { reservationStates } from '../budgets/model';
import { groupStates } from '../groups/model';
import { messageStates } from '../messages/model';
import { taskStates } from '../tasks/model';
import { timerStates } from '../timers/model';
import { claimStates } from '../claims/model';

/**
 * Diagnostics (docs/design/0018-diagnostics.md): read-only views for an operator of a space. Nothing here is read
 * by an operation, and every read is bounded: counts stop at a cap and say so, lists are capped
 * or paged (docs/api.md, "Diagnostics").
 */

/**
 * Rows counted per resource type (and per mailbox or wait line) before a count stops: a count
 * that reaches it means "this many or more" (`capped: true`). It bounds what one diagnostics
 * request reads, however much history a space keeps.
 */
export const diagnosticsCountCap = 100_000;

/** Every resource the census counts, with its states; a type without states has none. */
export const censusResourceStates = {
  budgets: [],
  reservations: reservationStates,
  barriers: barrierStates,
  pools: [],
  workLimits: [],
  allowances: [],
  allowanceWaiters: waiterStates,
  mailboxes: [],
  messages: messageStates,
  tasks: taskStates,
  taskGroups: groupStates,
  destinations: ['ACTIVE', 'PAUSED'],
} as const satisfies Record<string, readonly string[]>;
export type CensusResourceType = keyof typeof censusResourceStates;

/**
 * What a run's view counts under its scopeId (docs/design/0019-runs.md). Each kind adds its entry here and
 * its count to DiagnosticsRepository.runCounts, and the views show it with no other change.
 */
export const runResourceStates = {
  tasks: taskStates,
  taskGroups: groupStates,
  reservations: reservationStates,
  timers: timerStates,
  claims: claimStates,
} as const satisfies Record<string, readonly string[]>;
export type RunResourceType = keyof typeof runResourceStates;

/** Rows of one type in one state (null for a type without states), as a store counted them. */
export interface StateCount<T extends string = string> {
  type: T;
  state: string | null;
  count: number;
}

/** A WAITING barrier and who has arrived in its current epoch (arrivalKeys in key order, at most the asked limit). */
export interface BarrierWait {
  id: string;
  scopeId: string;
  epoch: number;
  target: number;
  arrivals: number;
  arrivalKeys: string[];
  createdAt: number;
}

/** Why a resource keeps a task's delivery from admission; the same tests an admit makes (core/src/admission/claims.ts). */
export const blockReasons = [
  /** Pool: fewer units free than the task needs. */
  'UNITS_IN_USE',
  /** Allowance: others wait in its FIFO line, and an admit never jumps it. */
  'WAIT_LINE',
  /** Allowance: a provider-reported cooldown runs. */
  'COOLDOWN',
  /** Allowance: the window has too few units left; retryAt is the window's end. */
  'WINDOW_SPENT',
  /** Budget: less available than the task reserves. */
  'FUNDS_SHORT',
  /** Work limit: every slot is taken. */
  'SLOTS_TAKEN',
] as const;
export type BlockReason = (typeof blockReasons)[number];

export interface Blocker {
  resource: ResourceKind;
  id: string;
  name: string;
  reason: BlockReason;
  /** What the task needs and what is free now: units, or minor units for a budget. */
  needed: bigint;
  available: bigint;
  /** When the clock alone frees it (cooldown end, window end); null when only another caller can. */
  retryAtMs: number | null;
}

/**
 * What a live task waits for: ADMISSION (its delivery is READY and nothing it needs is short:
 * an admit or recv on its mailbox takes it), RESOURCES (READY, and `blockedBy` names what is
 * short), WORKER (its delivery is claimed: the holder works on it until the lease ends), or
 * NOTHING (no live delivery: the task is about to end).
 */
export const taskWaits = ['ADMISSION', 'RESOURCES', 'WORKER', 'NOTHING'] as const;
export type TaskWait = (typeof taskWaits)[number];
