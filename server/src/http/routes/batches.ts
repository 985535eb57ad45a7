import { admission, deliveryBatches, effectiveLimits, messageBatches, readyTopicsOf, schemas, taskBatches, type BatonError, type ItemOutcome, type OpContext } from '@baton/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { AppDeps } from '../deps';
import { errorTable } from '../error-status';
import { errorBody } from '../error-handler';
import { pollClaim } from '../claim-poll';
import { attemptOperation, sendOutcome, type KeyRule, type Outcome } from '../operation';
import { applyJudged, itemsJudgedAlone, judgeItems, type UnjudgedItem } from '../batch-items';
import { errorReplies } from './schema-helpers';
import { activeTasksReached } from '../../limits/limits';

const write = { access: { anyOf: ['coordination_write' as const] } };

/**
 * The batch twins of the hot routes (docs/design/0015-batches.md; core/src/deliveries/batch.ts,
 * core/src/admission/service.ts admitMany). One transaction and one Idempotency-Key for the whole
 * batch, which a replay answers whole; each item all or nothing by itself and answered with the
 * status and body of its single route. Item batches take any 1 to 100 objects and hold each to
 * its single route's schema by itself (batch-items.ts): one malformed item answers its own 400.
 */
export function batchRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();

    app.post('/tasks/admit-batch', {
      config: write,
      schema: {
        tags: ['tasks', 'batches'],
        description:
          "POST /tasks/admit's rule applied up to maxTasks times in one transaction: the oldest admissible deliveries, each with the resources its task requires. 200 with 1 to maxTasks admitted deliveries in FIFO order; 204 when none is admissible after waitMs (a long poll answers as soon as one is). At most 48 of one call's admissions claim resources (each keeps a PostgreSQL subtransaction); the rest wait for the next call.",
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.admitBatchBody,
        response: { 200: schemas.admitBatchReply, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => {
      const first = readyTopicsOf(request.body.mailboxId, [request.body.scopeId], ['task']);
      const outcome = await pollClaim(deps, request, 'key-required', request.body.waitMs, first, request.body.maxTasks, async (ctx, hold) => {
        const { deliveries, wakeTopics, retryAtMs, blockedBy, leasesShort } = await admission.admitMany(ctx, request.body, hold.deliveries, hold);
        return { claimed: deliveries.length > 0 ? { items: deliveries } : undefined, wakeTopics, retryAtMs, blockedBy, leasesShort };
      });
      return sendOutcome(reply, outcome);
    });

    app.post('/mailboxes/:id/recv-batch', {
      config: write,
      schema: {
        tags: ['mailboxes', 'batches'],
        description:
          "POST /mailboxes/{id}/recv's rule applied up to maxMessages times in one transaction: 200 with 1 to maxMessages claimed messages in FIFO order, each with its own token; 204 when none is READY after waitMs (a long poll answers as soon as one is).",
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.recvBatchBody,
        response: { 200: schemas.recvBatchReply, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => {
      const first = readyTopicsOf(request.params.id, [request.body.scopeId], ['plain', 'task']);
      const outcome = await pollClaim(deps, request, 'key-optional', request.body.waitMs, first, request.body.maxMessages, async (ctx, hold) => {
        const { deliveries, wakeTopics } = await deliveryBatches.recvMany(ctx, request.params.id, request.body, hold.deliveries);
        return { claimed: deliveries.length > 0 ? { items: deliveries } : undefined, wakeTopics };
      });
      return sendOutcome(reply, outcome);
    });

    /** An item batch: one operation whose reply is 200 with each item's status and body. `keyRule`: the single route's Idempotency-Key rule. */
    const runBatch = async (request: FastifyRequest, reply: FastifyReply, keyRule: KeyRule, apply: (ctx: OpContext, requestId: string) => Promise<ItemReply[]>) =>
      sendItems(reply, await attemptOperation(deps, request, keyRule, async (ctx) => ({ statusCode: 200, body: { items: await apply(ctx, request.id) } })));

    app.post('/tasks/submit-batch', {
      config: write,
      schema: {
        tags: ['tasks', 'batches'],
        description:
          'POST /tasks for each task, in order, in one transaction: each item create-or-join by its taskKey (a key an earlier item created is joined), all or nothing by itself, answered with the status (201, 200 or the error\'s) and body POST /tasks would have given. 200 whenever the batch itself is valid.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: itemsJudgedAlone('tasks', schemas.submitBatchBody),
        response: { 200: schemas.submitBatchReply, ...errorReplies(409, 413, 422) },
      },
    }, async (request, reply) =>
      runBatch(request, reply, 'key-required', async (ctx, requestId) => {
        const outcomes = await applyJudged(judgeItems(request.body.tasks, schemas.taskSubmitBody), (tasks) => taskBatches.submitMany(ctx, tasks, createRoomOf(deps, request)));
        return createdReplies(outcomes, (submitted) => submitted.reply, requestId);
      }));

    app.post('/mailboxes/:id/messages/send-batch', {
      config: write,
      schema: {
        tags: ['mailboxes', 'batches'],
        description:
          'POST /mailboxes/{id}/messages for each message, in order, in one transaction: each send all or nothing by itself (its workKey, the backlog limits counting the sends before it), answered with the status (201, 200 or the error\'s) and body the single route would have given. 404 for an unknown mailbox.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: itemsJudgedAlone('messages', schemas.sendBatchBody),
        response: { 200: schemas.sendBatchReply, ...errorReplies(409, 413, 422) },
      },
    }, async (request, reply) =>
      runBatch(request, reply, 'key-required', async (ctx, requestId) => {
        // Run even when no item passed: an unknown mailbox is the whole batch's 404.
        const outcomes = await applyJudged(judgeItems(request.body.messages, schemas.sendBody), (messages) => messageBatches.sendMany(ctx, request.params.id, messages));
        return createdReplies(outcomes, (sent) => sent.view, requestId);
      }));

    const deliveryBatch = (single: string) => ({
      tags: ['mailboxes', 'batches'],
      description: `POST /messages/{id}/${single} for each item, in order, in one transaction: each item all or nothing by itself, answered with the status and body its single route would have given (one LEASE_LOST does not fail its neighbours). 200 whenever the batch itself is valid.`,
      params: schemas.spaceParams,
      headers: schemas.idempotencyHeaders,
    });

    app.post('/messages/complete-batch', {
      config: write,
      schema: { ...deliveryBatch('complete'), body: itemsJudgedAlone('items', schemas.completeBatchBody), response: { 200: schemas.completeBatchReply, ...errorReplies(409, 413, 422) } },
    }, async (request, reply) => runBatch(request, reply, 'key-optional', async (ctx, requestId) => deliveryReplies(request.body.items, schemas.completeBatchItem, (items) => deliveryBatches.completeMany(ctx, items), requestId)));

    app.post('/messages/nack-batch', {
      config: write,
      schema: { ...deliveryBatch('nack'), body: itemsJudgedAlone('items', schemas.nackBatchBody), response: { 200: schemas.nackBatchReply, ...errorReplies(409, 422) } },
    }, async (request, reply) => runBatch(request, reply, 'key-optional', async (ctx, requestId) => deliveryReplies(request.body.items, schemas.nackBatchItem, (items) => deliveryBatches.nackMany(ctx, items), requestId)));

    app.post('/messages/renew-batch', {
      config: write,
      schema: { ...deliveryBatch('renew'), body: itemsJudgedAlone('items', schemas.renewBatchBody), response: { 200: schemas.renewBatchReply, ...errorReplies(409, 422) } },
    }, async (request, reply) => runBatch(request, reply, 'key-optional', async (ctx, requestId) => deliveryReplies(request.body.items, schemas.renewBatchItem, (items) => deliveryBatches.renewMany(ctx, items), requestId)));
  };
}

/**
 * What a submit-batch may still create under the plan's active tasks, as the limits count them
 * (docs/design/0015-batches.md: each item checked against its single route's limits). Read when the batch runs,
 * so a transaction run again reads it again.
 */
function createRoomOf(deps: AppDeps, request: FastifyRequest): taskBatches.CreateRoom | undefined {
  const org = request.principal!.org;
  const room = deps.limits.taskRoom(org);
  if (room === undefined) return undefined;
  const cap = effectiveLimits(org).activeTasks!;
  return { room, refusal: () => activeTasksReached(cap - room, cap) };
}

/** One item of a batch's reply (delivery batches name their message). An error body names the request that ran the batch, as its single route's would (docs/design/0004-error-codes.md). */
interface ItemReply {
  messageId?: string | null;
  status: number;
  body: unknown;
}

/** A delivery batch's items, each held to `schema` and the valid ones run: each answered with the messageId it named (null when it named no UUID). */
async function deliveryReplies<I, T>(items: readonly UnjudgedItem[], schema: z.ZodType<I>, run: (valid: I[]) => Promise<ItemOutcome<T>[]>, requestId: string): Promise<ItemReply[]> {
  const outcomes = await applyJudged(judgeItems(items, schema), run);
  return outcomes.map((outcome, i) => ({ messageId: messageIdOf(items[i]!), ...(outcome.ok ? { status: 200, body: outcome.value } : itemError(outcome.error, requestId)) }));
}

function messageIdOf(item: UnjudgedItem): string | null {
  const parsed = schemas.uuidInput.safeParse(item.messageId);
  return parsed.success ? parsed.data : null;
}

/** A submit- or send-batch's items: 201 created or 200 (joined, or the workKey's message), with `bodyOf` the single route's reply. */
function createdReplies<T extends { created: boolean }>(outcomes: readonly ItemOutcome<T>[], bodyOf: (value: T) => unknown, requestId: string): ItemReply[] {
  return outcomes.map((outcome) => (outcome.ok ? { status: outcome.value.created ? 201 : 200, body: bodyOf(outcome.value) } : itemError(outcome.error, requestId)));
}

function itemError(error: BatonError, requestId: string): { status: number; body: unknown } {
  return { status: errorTable[error.code].status, body: errorBody(error, requestId) };
}

/**
 * sendOutcome; a batch stored before its items' errors kept their requestId (it is kept now, so a
 * replay is the first reply byte for byte) has the replaying request's filled in.
 */
function sendItems(reply: FastifyReply, outcome: Outcome): FastifyReply {
  const body = outcome.body as { items?: ItemReply[] } | undefined;
  if (outcome.statusCode !== 200 || !body?.items) return sendOutcome(reply, outcome);
  const requestId = reply.request.id;
  const items = body.items.map((item) => {
    const failed = item.body as { error?: { requestId?: string } };
    return failed?.error && !failed.error.requestId ? { ...item, body: { error: { ...failed.error, requestId } } } : item;
  });
  return sendOutcome(reply, { ...outcome, body: { items } });
}
