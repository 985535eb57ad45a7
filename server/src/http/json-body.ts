import { BatonError } from '@baton/core';
import type { FastifyInstance } from 'fastify';

/**
 * The deepest nesting a JSON body may have. Payloads, task input and results are any JSON, and
 * the code that handles them (schema checks, canonical JSON for fingerprints, the stores) walks
 * them recursively: a body of 3,000 nested arrays overflowed the stack there and answered 500.
 * 512 levels is far beyond any real document and far within the stack.
 */
export const maxJsonDepth = 512;

/**
 * Fastify's own JSON parser (same limits, same refusal of `__proto__` and `constructor`
 * poisoning), then a walk of the parsed value that refuses a body nested deeper than
 * maxJsonDepth with 400 VALIDATION_FAILED before anything recursive sees it. V8's JSON.parse
 * does not recurse (a million levels parse), so checking after it is safe, and the walk visits
 * values, not characters: 12 us for a 100-item complete-batch of 17 kB, where a scan of the text
 * took 75 us, as long as the parse itself.
 */
export function installJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    parse(request, body as string, (error, value) => {
      if (error) return done(error, undefined);
      if (!nestingExceeds(value, maxJsonDepth)) return done(null, value);
      const message = `nested deeper than ${maxJsonDepth} levels`;
      done(new BatonError('VALIDATION_FAILED', `body: ${message}`, [{ path: 'body', message }]), undefined);
    });
  });
}

/** Whether `value` holds arrays or objects more than `max` deep; stops at the first too deep, so it never recurses past `max`. */
export function nestingExceeds(value: unknown, max: number, depth = 0): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (depth >= max) return true;
  if (Array.isArray(value)) return value.some((item) => nestingExceeds(item, max, depth + 1));
  for (const key in value) if (nestingExceeds((value as Record<string, unknown>)[key], max, depth + 1)) return true;
  return false;
}
