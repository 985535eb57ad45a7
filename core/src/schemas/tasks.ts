import { z } from 'zod';
import { maxPoolRequirements, maxQuotaRequirements, taskStates } from '../tasks/model';
import { stateFilter } from './barriers';
import { listQuery, longPollQueryWaitMs, minorAmount, name, pageOf, text, timestamp, uuid, uuidInput } from './common';
import { claimedResourcesView, messageView } from './messages';

const units = z.number().int().min(1).max(1_000_000);
/** A task's input: any JSON without U+0000 (PostgreSQL cannot store it). */
export const jsonInput = z
  .unknown()
  .refine((v) => !JSON.stringify(v ?? null).includes('\\u0000'), { message: 'must not contain U+0000' })
  .describe('Any JSON value, at most 65,536 bytes as JSON');

/** One entry per name: admission claims each resource once, in name order. */
const uniqueNames = <T extends { name: string }>(entries: T[]): boolean => new Set(entries.map((e) => e.name)).size === entries.length;
const distinct = { message: 'names each resource at most once' };

export const taskRequirements = z.object({
  pools: z.array(z.object({ name, units })).max(maxPoolRequirements).refine(uniqueNames, distinct).default([]),
  quotas: z.array(z.object({ name, units })).max(maxQuotaRequirements).refine(uniqueNames, distinct).default([]),
  budgets: z.array(z.object({ name, reserveMinor: minorAmount.refine((v) => /[1-9]/.test(v), { message: 'must be above 0' }) })).max(16).refine(uniqueNames, distinct).default([]),
});

export const taskSubmitBody = z.object({
  scopeId: uuidInput,
  mailboxId: uuidInput,
  taskKey: text(1, 512),
  input: jsonInput.optional(),
  deadline: timestamp.optional(),
  subscriberId: text(1, 512).optional(),
  requirements: taskRequirements.optional(),
  workLimit: name.optional(),
});
export type TaskSubmitBody = z.infer<typeof taskSubmitBody>;

export const taskCancelBody = z.object({ reason: z.string().max(512).optional() });
export type TaskCancelBody = z.infer<typeof taskCancelBody>;
export const taskJoinBody = z.object({ subscriberId: text(1, 512), scopeId: uuidInput });
export type TaskJoinBody = z.infer<typeof taskJoinBody>;
export const taskDetachBody = z.object({ subscriberId: text(1, 512) });
export type TaskDetachBody = z.infer<typeof taskDetachBody>;

export const taskListQuery = listQuery.extend({ scopeId: uuidInput.optional(), state: stateFilter(taskStates) });

/** The longest GET /tasks/{id} holds its reply, like the other long polls (barriers, groups). */
export const maxTaskWaitMs = 30_000;
export const taskGetQuery = z.object({ waitMs: longPollQueryWaitMs('the task is SUCCEEDED, FAILED, CANCELLED or EXPIRED', maxTaskWaitMs) });
export type TaskGetQuery = z.infer<typeof taskGetQuery>;
export type TaskListQuery = z.infer<typeof taskListQuery>;
export const taskIdParams = z.object({ spaceId: uuidInput, taskId: uuidInput });

export const taskSubmitReply = z.object({ taskId: uuid, state: z.enum(taskStates), created: z.boolean() }).meta({ id: 'TaskSubmitted' });
export type TaskSubmitReply = z.infer<typeof taskSubmitReply>;
export const taskStateReply = z.object({ taskId: uuid, state: z.enum(taskStates) }).meta({ id: 'TaskState' });
export type TaskStateReply = z.infer<typeof taskStateReply>;
export const taskDetachReply = z.object({ taskId: uuid, state: z.enum(taskStates), detached: z.boolean() }).meta({ id: 'TaskDetached' });
export type TaskDetachReply = z.infer<typeof taskDetachReply>;

const subscriberView = z.object({ subscriberId: z.string(), scopeId: uuid, joinedAt: timestamp });

export const taskView = z
  .object({
    id: uuid,
    taskKey: z.string(),
    fingerprint: z.string(),
    mailboxId: uuid,
    scopeId: uuid,
    state: z.enum(taskStates),
    input: z.unknown(),
    requirements: z.object({
      pools: z.array(z.object({ name: z.string(), units: z.number().int() })),
      quotas: z.array(z.object({ name: z.string(), units: z.number().int() })),
      budgets: z.array(z.object({ name: z.string(), reserveMinor: z.string() })),
    }),
    workLimit: z.string().nullable(),
    deadline: timestamp.nullable(),
    attempts: z.number().int(),
    outcome: z.unknown(),
    failureReason: z.string().nullable(),
    tombstoned: z.boolean().describe('True once the task is past its retention window after finishing: input and outcome are cleared (null), state and failureReason stay'),
    subscribers: z.array(subscriberView),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Task' });
export type TaskView = z.infer<typeof taskView>;
export const taskPage = pageOf(taskView);

const journalEventView = z.object({ eventId: z.string(), type: z.string(), aggregate: z.object({ type: z.string(), id: z.string() }), scopeId: z.string().nullable(), occurredAt: timestamp, data: z.record(z.string(), z.unknown()) });

export const taskDebugView = z
  .object({
    task: taskView,
    messages: z.array(messageView),
    attempts: z.array(
      z.object({
        messageId: uuid,
        attempt: z.number().int(),
        holder: z.string().nullable(),
        holderSession: z.string().nullable(),
        leaseExpiresAt: timestamp.nullable(),
        claimedAt: timestamp,
        claimed: claimedResourcesView.nullable().describe('What an admit claimed with this attempt; null for a raw recv'),
      }),
    ),
    events: z.array(journalEventView),
  })
  .meta({ id: 'TaskDebug' });
export type TaskDebugView = z.infer<typeof taskDebugView>;
