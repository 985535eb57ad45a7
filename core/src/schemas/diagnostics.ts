import { z } from 'zod';
import { resourceKinds } from '../admission/model';
import { blockReasons, censusResourceStates, diagnosticsCountCap, runResourceStates, taskWaits } from '../diagnostics/model';
import { messageStates } from '../messages/model';
import { taskStates } from '../tasks/model';
import { listQuery, pageOf, timestamp, uuid, uuidInput } from './common';

/** Diagnostics (docs/design/0018-diagnostics.md; docs/api.md, "Diagnostics"): usage_read, reads only. */

const capNote = `counted up to ${diagnosticsCountCap.toLocaleString('en-US')} rows`;

export const resourceCountView = z
  .object({
    total: z.number().int().describe(`Rows of this type, ${capNote}`),
    capped: z.boolean().describe('true when the count stopped at the cap: there are at least `total`, and byState counts only the rows read'),
    byState: z.record(z.string(), z.number().int()).describe('Every state of the type, 0 included; empty for a type without states'),
  })
  .meta({ id: 'DiagnosticsResourceCount' });
export type ResourceCountView = z.infer<typeof resourceCountView>;

const countsOf = <K extends string>(types: readonly K[]) => z.object(Object.fromEntries(types.map((t) => [t, resourceCountView])) as Record<K, typeof resourceCountView>);

export const censusView = z
  .object({
    countCap: z.number().int().describe('Rows counted per type before a count stops'),
    resources: countsOf(Object.keys(censusResourceStates) as (keyof typeof censusResourceStates)[]),
  })
  .meta({ id: 'DiagnosticsCensus' });
export type CensusView = z.infer<typeof censusView>;

export const mailboxBacklogView = z
  .object({
    mailboxId: uuid,
    name: z.string(),
    ready: z.number().int(),
    claimed: z.number().int(),
    dead: z.number().int(),
    capped: z.boolean().describe(`true when a count stopped at the cap (READY and CLAIMED together, and DEAD, each ${capNote}): there are at least that many`),
    oldestReadyAt: timestamp.nullable().describe('createdAt of the oldest READY message; null when none is READY'),
    oldestReadyAgeSeconds: z.number().nullable().describe("Its age on the service's clock, in seconds; null when none is READY"),
  })
  .meta({ id: 'MailboxBacklog' });
export type MailboxBacklogView = z.infer<typeof mailboxBacklogView>;
export const backlogPage = pageOf(mailboxBacklogView);
export const backlogQuery = listQuery;

export const blockerView = z
  .object({
    resource: z.enum(resourceKinds),
    id: uuid,
    name: z.string(),
    reason: z.enum(blockReasons),
    needed: z.string().describe('Units the task needs (minor units for a budget), as a string of digits'),
    available: z.string().describe('Units free now (minor units for a budget), as a string of digits'),
    retryAt: timestamp.nullable().describe('When the clock alone frees it (cooldown end, window end); null when only another caller can'),
  })
  .meta({ id: 'AdmissionBlocker' });

export const taskWaitView = z
  .object({
    taskId: uuid,
    taskKey: z.string(),
    state: z.enum(taskStates),
    mailboxId: uuid,
    scopeId: uuid,
    waitingOn: z.enum(taskWaits).describe('ADMISSION: READY, nothing short; RESOURCES: READY, blockedBy names what is short; WORKER: claimed, the holder works on it; NOTHING: no live delivery'),
    delivery: z
      .object({
        messageId: uuid,
        state: z.enum(messageStates),
        attempt: z.number().int(),
        holder: z.string().nullable(),
        holderSession: z.string().nullable(),
        leaseExpiresAt: timestamp.nullable(),
      })
      .nullable(),
    blockedBy: z.array(blockerView),
  })
  .meta({ id: 'TaskWait' });
export type TaskWaitView = z.infer<typeof taskWaitView>;

export const waitsView = z
  .object({
    waitLines: z.object({
      items: z.array(
        z.object({
          allowanceId: uuid,
          name: z.string(),
          waiting: z.number().int(),
          oldestWaiterAt: timestamp,
          oldestWaiterAgeSeconds: z.number(),
        }),
      ).describe('Allowances with WAITING waiters, the longest line first, at most 100'),
      truncated: z.boolean().describe(`true when lines are left out: more than 100 lines, or more WAITING waiters in the space than the ${capNote} read`),
    }),
    barriers: z.object({
      items: z.array(
        z.object({
          barrierId: uuid,
          scopeId: uuid,
          epoch: z.number().int(),
          target: z.number().int(),
          arrivals: z.number().int(),
          missing: z.number().int().describe('Arrivals still needed to release the epoch'),
          arrivalKeys: z.array(z.string()).describe('Who arrived in this epoch, in key order, at most 100'),
          arrivalKeysTruncated: z.boolean(),
          createdAt: timestamp,
        }),
      ),
      truncated: z.boolean().describe('true when more WAITING barriers exist than listed (oldest first, at most 100)'),
    }),
    blockedTasks: z.object({
      items: z.array(taskWaitView),
      examined: z.number().int().describe('READY deliveries with requirements examined, oldest first'),
      truncated: z.boolean().describe('true when more READY deliveries with requirements exist than were examined'),
    }),
  })
  .meta({ id: 'DiagnosticsWaits' });
export type WaitsView = z.infer<typeof waitsView>;

/** What lives under a scopeId by state: the ops run view's and GET /runs/{scopeId}'s counts. */
export const scopeCountsView = countsOf(Object.keys(runResourceStates) as (keyof typeof runResourceStates)[]);
export type ScopeCountsView = z.infer<typeof scopeCountsView>;

export const runScopeParams = z.object({ spaceId: uuidInput, scopeId: uuidInput });
export const runOpsQuery = listQuery;

export const runOpsView = z
  .object({
    scopeId: uuid,
    counts: scopeCountsView.describe('What lives under the scopeId by state; task groups are those created under it (parentScopeId)'),
    liveTasks: pageOf(taskWaitView).describe('PENDING and RUNNING tasks of the scope in submit order, each with what it waits for; a page may hold fewer than `limit` when many ended tasks lie between'),
  })
  .meta({ id: 'RunOps' });
export type RunOpsView = z.infer<typeof runOpsView>;
