import { admission, readyTopicsOf, schemas } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { pollClaim } from '../claim-poll';
import { sendOutcome } from '../operation';
import { errorReplies } from './schema-helpers';

/** POST /tasks/admit (core/src/admission; docs/api.md "Admission"; docs/design/0009-pools-and-work-limits.md). */
export function admissionRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();

    app.post('/tasks/admit', {
      config: { access: { anyOf: ['coordination_write' as const] } },
      schema: {
        tags: ['tasks'],
        description:
          'Claims the oldest admissible READY task delivery of the mailbox for the scope together with every resource its task requires (pool units, quota units, budget reservations, a work-limit slot), all or nothing; a delivery whose resources are short is passed over for the next. 204 when nothing is admissible after waitMs (capped at 30000); an empty admit stores nothing under its Idempotency-Key.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.admitBody,
        response: { 200: schemas.admittedDeliveryView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => {
      const first = readyTopicsOf(request.body.mailboxId, [request.body.scopeId], ['task']);
      const outcome = await pollClaim(deps, request, 'key-required', request.body.waitMs, first, 1, async (ctx, hold) => {
        const { delivery, wakeTopics, retryAtMs, blockedBy, leasesShort } = await admission.admit(ctx, request.body, hold);
        return { claimed: delivery, wakeTopics, retryAtMs, blockedBy, leasesShort };
      });
      return sendOutcome(reply, outcome);
    });
  };
}
