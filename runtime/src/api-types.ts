import type { schemas } from '@baton/core';
import type { In, Out } from './schema-types';

/**
 * The API's request and reply bodies by name, for code written against the client: what a
 * caller passes (`In`, defaults not yet applied) and what the server answers (`Out`), from the
 * server's own zod schemas. Task and message bodies carry type parameters for what travels in
 * them (a task's input and outcome, a message's payload): the server stores any JSON there, so
 * the parameters are the caller's word, as pg-boss's `work<T>` or Hatchet's `task<I, O>` take
 * it, and default to `unknown`.
 */

type S = typeof schemas;

// ---------------------------------------------------------------------------------------------
// Tasks: input `I`, outcome `O`

/** POST /tasks (and each item of submit-batch): `input` typed. */
export type TaskSubmitBody<I = unknown> = Omit<In<S['taskSubmitBody']>, 'input'> & { input?: I };
export type SubmitBatchBody<I = unknown> = { tasks: TaskSubmitBody<I>[] };
/** POST /task-groups/{id}/tasks: a member task, `input` typed. */
export type MemberTaskBody<I = unknown> = Omit<In<S['memberTaskBody']>, 'input'> & { input?: I };

/**
 * GET /tasks/{id}: `input` what was submitted and `outcome` what the worker completed it with.
 * Both are null once the task is tombstoned (past its retention), `input` when none was given,
 * and `outcome` until the task SUCCEEDED or when the handler returned nothing.
 */
export type TaskView<I = unknown, O = unknown> = Omit<Out<S['taskView']>, 'input' | 'outcome'> & { input: I | null; outcome: O | null };

/** What a task's delivery carries: the server sends `{ taskId, input }` to the task's mailbox. */
export interface TaskPayload<I = unknown> {
  taskId: string;
  input: I;
}

// ---------------------------------------------------------------------------------------------
// Messages: payload `P`

/** POST /mailboxes/{id}/messages: `payload` typed. */
export type SendBody<P = unknown> = Omit<In<S['sendBody']>, 'payload'> & { payload: P };
export type SendBatchBody<P = unknown> = { messages: SendBody<P>[] };
export type MessageView<P = unknown> = Omit<Out<S['messageView']>, 'payload'> & { payload: P };
/** What recv answers: the message's payload with the claim's token and lease. */
export type DeliveryView<P = unknown> = Omit<Out<S['deliveryView']>, 'payload'> & { payload: P };
/** What admit answers: a task's delivery, its payload `{ taskId, input }`. */
export type AdmittedDeliveryView<I = unknown> = Omit<Out<S['admittedDeliveryView']>, 'payload'> & { payload: TaskPayload<I> };

// ---------------------------------------------------------------------------------------------
// Everything else, named after its schema.

// Request bodies, as a caller writes them (defaults not yet applied).
export type AdmitBatchBody = In<S['admitBatchBody']>;
export type AdmitBody = In<S['admitBody']>;
export type AllowanceCreateBody = In<S['allowanceCreateBody']>;
export type ArriveBody = In<S['arriveBody']>;
export type BarrierCreateBody = In<S['barrierCreateBody']>;
export type BudgetCreateBody = In<S['budgetCreateBody']>;
export type ClaimCreateBody = In<S['claimCreateBody']>;
export type ClaimReleaseBody = In<S['claimReleaseBody']>;
export type ClaimRenewBody = In<S['claimRenewBody']>;
export type CompleteBatchBody = In<S['completeBatchBody']>;
export type CompleteBody = In<S['completeBody']>;
export type ConsumeBody = In<S['consumeBody']>;
export type CooldownBody = In<S['cooldownBody']>;
export type GroupCreateBody = In<S['groupCreateBody']>;
export type JoinTaskBody = In<S['joinTaskBody']>;
export type MailboxCreateBody = In<S['mailboxCreateBody']>;
export type NackBatchBody = In<S['nackBatchBody']>;
export type NackBody = In<S['nackBody']>;
export type NextEpochBody = In<S['nextEpochBody']>;
export type PoolCreateBody = In<S['poolCreateBody']>;
export type RecvBatchBody = In<S['recvBatchBody']>;
export type RecvBody = In<S['recvBody']>;
export type RenewBatchBody = In<S['renewBatchBody']>;
export type RenewBody = In<S['renewBody']>;
export type ReserveBody = In<S['reserveBody']>;
export type RunCreateBody = In<S['runCreateBody']>;
export type SettleBody = In<S['settleBody']>;
export type SpaceLimitsBody = In<S['spaceLimitsBody']>;
export type TaskCancelBody = In<S['taskCancelBody']>;
export type TaskDetachBody = In<S['taskDetachBody']>;
export type TaskJoinBody = In<S['taskJoinBody']>;
export type TimerArmBody = In<S['timerArmBody']>;
export type VoidBody = In<S['voidBody']>;
export type WaitBody = In<S['waitBody']>;
export type WorkLimitCreateBody = In<S['workLimitCreateBody']>;

// Replies, as the server sends them.
export type AllowancePage = Out<S['allowancePage']>;
export type AllowanceView = Out<S['allowanceView']>;
export type ArriveReply = Out<S['arriveReply']>;
export type BarrierPage = Out<S['barrierPage']>;
export type BarrierView = Out<S['barrierView']>;
export type BudgetPage = Out<S['budgetPage']>;
export type BudgetView = Out<S['budgetView']>;
export type ClaimPage = Out<S['claimPage']>;
export type CompleteReply = Out<S['completeReply']>;
export type ConsumptionView = Out<S['consumptionView']>;
export type EntryReply = Out<S['entryReply']>;
export type EventPage = Out<S['eventPage']>;
export type GroupCreatedReply = Out<S['groupCreatedReply']>;
export type GroupPage = Out<S['groupPage']>;
export type MailboxPage = Out<S['mailboxPage']>;
export type MailboxView = Out<S['mailboxView']>;
export type MemberTaskReply = Out<S['memberTaskReply']>;
export type MessagePage = Out<S['messagePage']>;
export type NackReply = Out<S['nackReply']>;
export type PoolPage = Out<S['poolPage']>;
export type PoolView = Out<S['poolView']>;
export type RenewReply = Out<S['renewReply']>;
export type ReservationView = Out<S['reservationView']>;
export type RunDetailView = Out<S['runDetailView']>;
export type SpaceLimitsView = Out<S['spaceLimitsView']>;
export type TaskDebugView = Out<S['taskDebugView']>;
export type TaskDetachReply = Out<S['taskDetachReply']>;
export type TaskPage = Out<S['taskPage']>;
export type TaskStateReply = Out<S['taskStateReply']>;
export type TaskSubmitReply = Out<S['taskSubmitReply']>;
export type TimerPage = Out<S['timerPage']>;
export type UsageView = Out<S['usageView']>;
export type VerdictReply = Out<S['verdictReply']>;
export type WaiterView = Out<S['waiterView']>;
export type WorkLimitPage = Out<S['workLimitPage']>;
export type WorkLimitView = Out<S['workLimitView']>;
