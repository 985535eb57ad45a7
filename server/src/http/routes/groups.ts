import { endedMembers, groups, groupWaitOver, liveMembers, schemas, topicOf } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { longPollOn, type Wake } from '../long-poll';
import { runOperation } from '../operation';
import { errorReplies } from './schema-helpers';

const read = { access: { anyOf: ['coordination_read' as const] } };
const write = { access: { anyOf: ['coordination_write' as const] } };
const tags = ['task groups'];

/** Task groups (docs/design/0010-task-groups.md; core/src/groups, docs/api.md). */
export function groupRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();
    const space = (request: { principal?: { space: { id: string } } }): string => request.principal!.space.id;

    app.get('/task-groups', {
      config: read,
      schema: { tags, description: 'Task groups oldest first, each with its members; `state` (one or comma-separated) filters.', params: schemas.spaceParams, querystring: schemas.groupListQuery, response: { 200: schemas.groupPage, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => groups.listGroups(tx, space(request), request.query)));

    app.post('/task-groups', {
      config: write,
      schema: {
        tags,
        description: 'Creates an OPEN group and its gate scope (a child of parentScopeId when given): member tasks run in the gate scope, so a recv or admit on the parent scope claims them too.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.groupCreateBody,
        response: { 201: schemas.groupCreatedReply, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => runOperation(deps, request, reply, 'key-required', async (ctx) => ({ statusCode: 201, body: await groups.createGroup(ctx, request.body) })));

    app.get('/task-groups/:id', {
      config: read,
      schema: {
        tags,
        description:
          'The group: state, outcome, outcomeReason and members with their task states and verdicts. With waitMs, holds the reply until the group is DECIDED or a member ends that had not when the wait began (what a coordinator gives verdicts on), the wait ends, or the server drains.',
        params: schemas.idParams,
        querystring: schemas.groupGetQuery,
        response: { 200: schemas.groupView, ...errorReplies() },
      },
    }, async (request) => {
      const { id } = request.params;
      const groupTopic = topicOf('group', id);
      const readView = () => deps.store.read((tx) => groups.getGroup(tx, space(request), id));
      // The first read sets what "a member ended" is measured from; a member's end is a commit
      // on its task's topic, so every live member's topic is armed besides the group's.
      let endedAtStart: Set<string> | undefined;
      const over = (view: schemas.GroupView): boolean => {
        if (endedAtStart === undefined) endedAtStart = endedMembers(view);
        return groupWaitOver(endedAtStart, view);
      };
      const wakeOf = (view: schemas.GroupView): Wake => ({ topics: [groupTopic, ...liveMembers(view).map((taskId) => topicOf('task', taskId))], atMs: null });
      return longPollOn(deps, request.query.waitMs ?? 0, readView, over, wakeOf, [groupTopic]);
    });

    app.post('/task-groups/:id/tasks', {
      config: write,
      schema: {
        tags,
        description:
          "Creates a member task in the group's mailbox and gate scope (201). A taskKey whose task is already a member answers 200 with created: false; one naming another task is 409 (TASK_KEY_CONFLICT for another input). 409 CONFLICT once membership is closed.",
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.memberTaskBody,
        response: { 200: schemas.memberTaskReply, 201: schemas.memberTaskReply, ...errorReplies(409, 413, 422, 429) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-required', async (ctx) => {
        const result = await groups.createMemberTask(ctx, request.params.id, request.body);
        return { statusCode: result.created ? 201 : 200, body: result.reply };
      }),
    );

    app.post('/task-groups/:id/join-task', {
      config: write,
      schema: {
        tags,
        description: 'Joins a task of this space that is a member of no group to an OPEN group; a task already a member of this group answers 200 as it is. 409 once membership is closed or when the task is in another group.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.joinTaskBody,
        response: { 200: schemas.groupView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await groups.joinTask(ctx, request.params.id, request.body) })));

    app.post('/task-groups/:id/close', {
      config: write,
      schema: {
        tags,
        description: 'Closes membership (SEALED) and decides at once if the condition can. Idempotent: on a SEALED or DECIDED group it answers the committed state and outcome.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        response: { 200: schemas.groupView, ...errorReplies(422) },
      },
    }, async (request, reply) => runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await groups.close(ctx, request.params.id, 'CLOSE') })));

    app.post('/task-groups/:id/seal', {
      config: write,
      schema: {
        tags,
        description: 'close under its former name (see Versioning in docs/api.md): the same effect on an OPEN group, but 409 CONFLICT on one already SEALED or DECIDED.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        response: { 200: schemas.groupView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await groups.close(ctx, request.params.id, 'SEAL') })));

    for (const [path, verdict] of [['accept', 'ACCEPTED'], ['reject', 'REJECTED']] as const) {
      app.post(`/task-groups/:id/tasks/:taskId/${path}`, {
        config: write,
        schema: {
          tags,
          description:
            verdict === 'ACCEPTED'
              ? 'Accepts a SUCCEEDED member (409 otherwise). Idempotent; a verdict is final (the other one is 409). Answers the verdict and the group, decided when this made its condition met.'
              : 'Rejects a terminal member (409 while it runs). Idempotent; a verdict is final (the other one is 409). Answers the verdict and the group, decided when this made its threshold unreachable.',
          params: schemas.groupMemberParams,
          headers: schemas.idempotencyHeaders,
          response: { 200: schemas.verdictReply, ...errorReplies(409, 422) },
        },
      }, async (request, reply) =>
        runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await groups.giveVerdict(ctx, request.params.id, request.params.taskId, verdict) })));
    }
  };
}
