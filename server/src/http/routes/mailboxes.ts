import { deliveries, messages, readyTopicsOf, schemas } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { hasPermission } from '../auth';
import type { AppDeps } from '../deps';
import { pollClaim } from '../claim-poll';
import { attemptOperation, runOperation, sendOutcome } from '../operation';
import { errorReplies } from './schema-helpers';

const read = { access: { anyOf: ['coordination_read' as const] } };
const write = { access: { anyOf: ['coordination_write' as const] } };
const tags = ['mailboxes'];

/** Mailboxes and messages with leases (docs/design/0008-tasks-and-deliveries.md; core/src/messages, docs/api.md). */
export function mailboxRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();
    const space = (request: { principal?: { space: { id: string } } }): string => request.principal!.space.id;

    app.get('/mailboxes', { config: read, schema: { tags, params: schemas.spaceParams, querystring: schemas.listQuery, response: { 200: schemas.mailboxPage, ...errorReplies() } } }, async (request) =>
      deps.store.read((tx) => messages.listMailboxes(tx, space(request), request.query.cursor, request.query.limit)),
    );

    app.post('/mailboxes', {
      config: { access: { anyOf: ['resource_config'], repeatCreate: true } },
      schema: {
        tags,
        description: 'Creates a mailbox (201), or returns the existing one of that name when its settings are identical (200); other settings answer 409 CONFLICT.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.mailboxCreateBody,
        response: { 200: schemas.mailboxView, 201: schemas.mailboxView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => {
      const canCreate = hasPermission(request.principal!, 'resource_config');
      return runOperation(deps, request, reply, 'key-required', async (ctx) => {
        const result = await messages.createMailbox(ctx, request.body, canCreate);
        return { statusCode: result.created ? 201 : 200, body: result.view };
      });
    });

    app.get('/mailboxes/:id/messages', {
      config: read,
      schema: {
        tags,
        description: 'Messages of the mailbox in send order; `state=READY` or `state=READY,CLAIMED` filters.',
        params: schemas.idParams,
        querystring: schemas.messageListQuery,
        response: { 200: schemas.messagePage, ...errorReplies() },
      },
    }, async (request) => {
      const { state, cursor, limit } = request.query;
      return deps.store.read((tx) => messages.listMessages(tx, space(request), request.params.id, { states: state, cursor, limit }));
    });

    app.post('/mailboxes/:id/messages', {
      config: write,
      schema: {
        tags,
        description: 'Sends a message (201, READY). A workKey already sent to this mailbox answers 200 with the committed message; 429 BACKLOG_FULL when READY plus CLAIMED reach backlogLimit; 413 PAYLOAD_TOO_LARGE above 65,536 bytes of JSON.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.sendBody,
        response: { 200: schemas.messageView, 201: schemas.messageView, ...errorReplies(409, 413, 422, 429) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-required', async (ctx) => {
        const result = await messages.clientSend(ctx, request.params.id, request.body);
        return { statusCode: result.created ? 201 : 200, body: result.view };
      }),
    );

    app.post('/mailboxes/:id/recv', {
      config: write,
      schema: {
        tags,
        description:
          'Claims the oldest READY message whose scopeId is the request scopeId (exact match for now; scope subtrees come with task groups) under a lease. 204 when none is READY after waitMs (capped at 30000); an empty recv stores nothing under its Idempotency-Key.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.recvBody,
        response: { 200: schemas.deliveryView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => {
      // Each try is its own transaction; a message that becomes READY in a scope it claims from wakes the next.
      const first = readyTopicsOf(request.params.id, [request.body.scopeId], ['plain', 'task']);
      const outcome = await pollClaim(deps, request, 'key-optional', request.body.waitMs, first, 1, async (ctx) => {
        const { delivery, wakeTopics } = await deliveries.recv(ctx, request.params.id, request.body);
        return { claimed: delivery, wakeTopics };
      });
      return sendOutcome(reply, outcome);
    });

    const leaseSchema = (description: string) => ({ tags, description, params: schemas.idParams, headers: schemas.idempotencyHeaders });

    app.post('/messages/:id/renew', {
      config: write,
      schema: {
        ...leaseSchema('Extends the lease of a live claim to now + leaseSeconds; any other token is 409 LEASE_LOST.'),
        body: schemas.renewBody,
        response: { 200: schemas.renewReply, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await messages.renew(ctx, request.params.id, request.body) })),
    );

    app.post('/messages/:id/complete', {
      config: write,
      schema: {
        ...leaseSchema('ACKED: the claim ends and its token dies. An optional result is recorded; with mailboxId and scopeId it is also sent to that mailbox in the same transaction.'),
        body: schemas.completeBody,
        response: { 200: schemas.completeReply, ...errorReplies(409, 413, 422, 429) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await deliveries.complete(ctx, request.params.id, request.body) })),
    );

    app.post('/messages/:id/nack', {
      config: write,
      schema: {
        ...leaseSchema('Gives the message back: READY with retry (DEAD after the 5th attempt), DEAD without. Answers the new state.'),
        body: schemas.nackBody,
        response: { 200: schemas.nackReply, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await deliveries.nack(ctx, request.params.id, request.body) })),
    );
  };
}
