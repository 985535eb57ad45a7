import { deliveries, isTerminalTask, schemas, tasks, topicOf } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { longPoll } from '../long-poll';
import { runOperation } from '../operation';
import { errorReplies } from './schema-helpers';

const read = { access: { anyOf: ['coordination_read' as const] } };
const write = { access: { anyOf: ['coordination_write' as const] } };
const tags = ['tasks'];

/** Tasks without admission (docs/design/0008-tasks-and-deliveries.md; core/src/tasks, docs/api.md). */
export function taskRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();
    const space = (request: { principal?: { space: { id: string } } }): string => request.principal!.space.id;

    app.get('/tasks', {
      config: read,
      schema: { tags, description: 'Tasks in submit order; `scopeId` and `state` (one or comma-separated) filter.', params: schemas.spaceParams, querystring: schemas.taskListQuery, response: { 200: schemas.taskPage, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => tasks.listTasks(tx, space(request), request.query)));

    app.post('/tasks', {
      config: write,
      schema: {
        tags,
        description:
          'Create-or-join by taskKey and fingerprint: a new task (201) also sends its delivery to the mailbox; the same taskKey and fingerprint answers 200 (subscribing subscriberId when given); another fingerprint is 409 TASK_KEY_CONFLICT. Unknown requirement names are 404.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.taskSubmitBody,
        response: { 200: schemas.taskSubmitReply, 201: schemas.taskSubmitReply, ...errorReplies(409, 413, 422, 429) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-required', async (ctx) => {
        const result = await tasks.submit(ctx, request.body);
        return { statusCode: result.created ? 201 : 200, body: result.reply };
      }),
    );

    app.get('/tasks/:id', {
      config: read,
      schema: {
        tags,
        description: 'The task view with outcome and subscribers. With waitMs, holds the reply until the task is in a final state (SUCCEEDED, FAILED, CANCELLED, EXPIRED), the wait ends, or the server drains.',
        params: schemas.idParams,
        querystring: schemas.taskGetQuery,
        response: { 200: schemas.taskView, ...errorReplies() },
      },
    }, async (request) => {
      const { id } = request.params;
      const readView = () => deps.store.read((tx) => tasks.getTask(tx, space(request), id));
      // Every change of a task's state appends an event on its aggregate, whose commit notifies this topic.
      return longPoll(deps, topicOf('task', id), request.query.waitMs ?? 0, readView, (view) => isTerminalTask(view.state));
    });

    app.post('/tasks/:id/cancel', {
      config: write,
      schema: {
        tags,
        description: 'A nonterminal task becomes CANCELLED and its delivery too; a terminal task is 409 CONFLICT naming its state. Never gated.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.taskCancelBody,
        response: { 200: schemas.taskStateReply, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await deliveries.cancelTask(ctx, request.params.id, request.body ?? {}) })));

    app.post('/tasks/:id/join', {
      config: write,
      schema: { tags, description: 'Subscribes subscriberId (idempotent); answers the task state.', params: schemas.idParams, headers: schemas.idempotencyHeaders, body: schemas.taskJoinBody, response: { 200: schemas.taskStateReply, ...errorReplies(422) } },
    }, async (request, reply) => runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await tasks.join(ctx, request.params.id, request.body) })));

    app.post('/tasks/:id/detach', {
      config: write,
      schema: { tags, description: 'Unsubscribes subscriberId; zero subscribers does not cancel the task.', params: schemas.idParams, headers: schemas.idempotencyHeaders, body: schemas.taskDetachBody, response: { 200: schemas.taskDetachReply, ...errorReplies(422) } },
    }, async (request, reply) => runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await tasks.detach(ctx, request.params.id, request.body) })));

    app.get('/ops/tasks/:taskId', {
      config: { access: { anyOf: ['usage_read' as const] } },
      schema: { tags, description: 'Debugger view: the task, its delivery, every claim (holder, holderSession, lease) and its events.', params: schemas.taskIdParams, response: { 200: schemas.taskDebugView, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => tasks.debugView(tx, space(request), request.params.taskId)));
  };
}
