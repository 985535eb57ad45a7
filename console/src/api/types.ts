import type { components } from './schema';

/** Names for the document's schemas the views use (generated: src/api/schema.d.ts). */
type Schemas = components['schemas'];
export type Census = Schemas['DiagnosticsCensus'];
export type ResourceCount = Schemas['DiagnosticsResourceCount'];
export type Usage = Schemas['Usage'];
export type SpaceLimits = Schemas['SpaceLimits'];
export type MailboxBacklog = Schemas['MailboxBacklog'];
export type Task = Schemas['Task'];
export type TaskDebug = Schemas['TaskDebug'];
export type BatonEvent = Schemas['Event'];
export type Budget = Schemas['Budget'];
export type Allowance = Schemas['Allowance'];
export type Pool = Schemas['Pool'];
export type Claim = Schemas['Claim'];
export type Destination = Schemas['Destination'];
export type Waits = Schemas['DiagnosticsWaits'];
export type TaskGroup = Schemas['TaskGroup'];
export type Barrier = Schemas['Barrier'];
export type Timer = Schemas['Timer'];
export type WorkLimit = Schemas['WorkLimit'];
export type DeliveryAttempt = Schemas['DeliveryAttempt'];
export type RunDetail = Schemas['RunDetail'];
export type Reservation = Schemas['Reservation'];
export type AllowanceWaiter = Schemas['AllowanceWaiter'];
