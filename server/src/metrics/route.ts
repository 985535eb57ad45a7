import type { FastifyRequest } from 'fastify';

/** The label of a request no route matched (a 404): one value, whatever URL was asked for. */
export const unmatchedRoute = 'unmatched';

const knownMethods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * A request's route as a label: the pattern it matched (`/v1/spaces/:spaceId/tasks`), never the
 * URL, which carries ids and would make a new series per space, task and message.
 */
export function routeLabel(request: FastifyRequest): string {
  return request.routeOptions.url ?? unmatchedRoute;
}

/** A request's method as a label, from a fixed set: a client cannot mint series with made-up methods. */
export function methodLabel(method: string): string {
  return knownMethods.has(method) ? method : 'OTHER';
}
