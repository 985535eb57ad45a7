import { BatonError } from '@baton/core';

/** One schema problem: where it sits below its part of the request, and what is wrong. */
export interface SchemaProblem {
  path: readonly PropertyKey[];
  message: string;
}

/**
 * The 400 VALIDATION_FAILED of a request part (`where`: body, query, params, headers) that failed
 * its schema, each problem named by its dotted path (`body.tasks.0.taskKey`). A route's own
 * validation and a batch item's (batch-items.ts) read the same.
 */
export function validationFailed(where: string, problems: readonly SchemaProblem[]): BatonError {
  const details = problems.map((p) => ({ path: [where, ...p.path.map(String)].join('.'), message: p.message }));
  return new BatonError('VALIDATION_FAILED', details.map((d) => `${d.path}: ${d.message}`).join('; '), details);
}
