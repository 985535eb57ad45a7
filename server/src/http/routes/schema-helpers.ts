import { schemas } from '@baton/core';

/** Error replies every /v1 route can give, for the OpenAPI document: 503 UNAVAILABLE too (the store out of reach, or a drain). */
export function errorReplies(...statuses: number[]): Record<number, typeof schemas.errorEnvelope> {
  const all = [400, 401, 403, 404, ...statuses, 503];
  return Object.fromEntries(all.map((s) => [s, schemas.errorEnvelope]));
}

