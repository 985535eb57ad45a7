import { schemas } from '@baton/core';

/**
 * Error replies a /v1 route gives, as response schemas its replies are serialized with. What the
 * OpenAPI document declares for each status (every status a route of its kind can answer, the
 * codes, the examples) is built by contract/document.ts, whatever is listed here.
 */
export function errorReplies(...statuses: number[]): Record<number, typeof schemas.errorEnvelope> {
  const all = [400, 401, 403, 404, ...statuses, 503];
  return Object.fromEntries(all.map((s) => [s, schemas.errorEnvelope]));
}

