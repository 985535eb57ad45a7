import { z } from 'zod';
import { groupConditions, groupOutcomes, groupStates, maxGroupMembers, maxGroupThreshold, outcomeReasons, verdicts } from '../groups/model';
import { taskStates } from '../tasks/model';
import { stateFilter } from './barriers';
import { listQuery, longPollQueryWaitMs, pageOf, text, timestamp, uuid, uuidInput } from './common';
import { jsonInput } from './tasks';

/** The longest a GET /task-groups/{id} holds: the schema takes up to 120,000 ms, longer waits are shortened. */
export const maxGroupWaitMs = 30_000;

export const groupCreateBody = z
  .object({
    parentScopeId: uuidInput.optional().describe('The gate scope becomes a child of this scope: a recv or admit on it also claims the members'),
    mailboxId: uuidInput.describe('Where member tasks created through the group are delivered'),
    condition: z.enum(groupConditions),
    threshold: z.number().int().min(1).max(maxGroupThreshold).optional().describe('Accepted members that decide SUCCEEDED: required for N_ACCEPTED, 1 (or absent) for FIRST_ACCEPTED, absent for ALL_TERMINAL'),
    expectedMembers: z.number().int().min(1).max(maxGroupMembers).optional().describe(`Membership closes by itself once this many members have joined (else at ${maxGroupMembers})`),
    deadline: timestamp.optional().describe('An undecided group decides FAILED DEADLINE_EXCEEDED when it passes'),
  })
  .superRefine((body, issues) => {
    if (body.condition === 'N_ACCEPTED' && body.threshold === undefined) issues.addIssue({ code: 'custom', path: ['threshold'], message: 'is required for N_ACCEPTED' });
    if (body.condition === 'FIRST_ACCEPTED' && body.threshold !== undefined && body.threshold !== 1) issues.addIssue({ code: 'custom', path: ['threshold'], message: 'FIRST_ACCEPTED means threshold 1' });
    if (body.condition === 'ALL_TERMINAL' && body.threshold !== undefined) issues.addIssue({ code: 'custom', path: ['threshold'], message: 'ALL_TERMINAL takes no threshold' });
  });
export type GroupCreateBody = z.infer<typeof groupCreateBody>;

export const memberTaskBody = z.object({
  taskKey: text(1, 512).describe('Create-or-join key of the member task, unique in the space'),
  input: jsonInput.optional(),
  deadline: timestamp.optional().describe("The member task's own deadline"),
});
export type MemberTaskBody = z.infer<typeof memberTaskBody>;

export const joinTaskBody = z.object({ taskId: uuidInput.describe('A task of this space that is a member of no group') });
export type JoinTaskBody = z.infer<typeof joinTaskBody>;

export const groupListQuery = listQuery.extend({ state: stateFilter(groupStates) });
export type GroupListQuery = z.infer<typeof groupListQuery>;

export const groupGetQuery = z.object({ waitMs: longPollQueryWaitMs('the group is DECIDED or a member ends', maxGroupWaitMs) });
export type GroupGetQuery = z.infer<typeof groupGetQuery>;

export const groupMemberParams = z.object({ spaceId: uuidInput, id: uuidInput, taskId: uuidInput });

const memberView = z.object({
  taskId: uuid,
  taskState: z.enum(taskStates),
  verdict: z.enum(verdicts),
  joinedAt: timestamp,
});

export const groupView = z
  .object({
    id: uuid,
    scopeId: uuid.describe('The gate scope: member tasks run in it'),
    parentScopeId: uuid.nullable(),
    mailboxId: uuid,
    state: z.enum(groupStates),
    condition: z.enum(groupConditions),
    threshold: z.number().int().nullable(),
    expectedMembers: z.number().int().nullable(),
    deadline: timestamp.nullable(),
    outcome: z.enum(groupOutcomes).nullable(),
    outcomeReason: z.enum(outcomeReasons).nullable(),
    decidedAt: timestamp.nullable(),
    members: z.array(memberView).describe('In join order'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'TaskGroup' });
export type GroupView = z.infer<typeof groupView>;
export const groupPage = pageOf(groupView);

export const groupCreatedReply = z.object({ groupId: uuid, scopeId: uuid.describe('The gate scope') }).meta({ id: 'TaskGroupCreated' });
export type GroupCreatedReply = z.infer<typeof groupCreatedReply>;

export const memberTaskReply = z
  .object({ taskId: uuid, state: z.enum(taskStates), created: z.boolean().describe('False when the taskKey named a task already a member of this group') })
  .meta({ id: 'TaskGroupMemberCreated' });
export type MemberTaskReply = z.infer<typeof memberTaskReply>;

export const verdictReply = z.object({ taskId: uuid, verdict: z.enum(verdicts), group: groupView }).meta({ id: 'TaskGroupVerdict' });
export type VerdictReply = z.infer<typeof verdictReply>;
