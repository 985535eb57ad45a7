import { isUtf8 } from 'node:buffer';
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
 * poisoning), with two checks around it, each a 400 VALIDATION_FAILED (path `body`):
 *
 * - Before: the bytes must be UTF-8. Decoding replaces a bad byte with U+FFFD, so `"u-\xff"`
 *   and `"u-\xfe"` became the same taskKey and the second submit found the first's task
 *   (issue 27). So the body comes as bytes and `isUtf8` (simdutf) checks them before they are
 *   decoded. Measured on a 100-item complete-batch of 17.6 kB: the check takes 1 to 3 us, and the
 *   copy Fastify makes of a body it hands over as bytes about 10 us, against 300 us for the parse
 *   itself (a loaded 2-core machine).
 * - After: a walk of the parsed value refuses a body nested deeper than maxJsonDepth before
 *   anything recursive sees it. V8's JSON.parse does not recurse (a million levels parse), so
 *   checking after it is safe, and the walk visits values, not characters: 12 us for that
 *   complete-batch, where a scan of the text took 75 us, as long as the parse itself.
 */
export function installJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    if (!isUtf8(bytes)) return done(bodyRefused('is not valid UTF-8'), undefined);
    parse(request, bytes.toString('utf8'), (error, value) => {
      if (error) return done(error, undefined);
      if (!nestingExceeds(value, maxJsonDepth)) return done(null, value);
      done(bodyRefused(`nested deeper than ${maxJsonDepth} levels`), undefined);
    });
  });
}

const bodyRefused = (problem: string): BatonError => new BatonError('VALIDATION_FAILED', `body: ${problem}`, [{ path: 'body', message: problem }]);

/** Whether `value` holds arrays or objects more than `max` deep; stops at the first too deep, so it never recurses past `max`. */
export function nestingExceeds(value: unknown, max: number, depth = 0): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (depth >= max) return true;
  if (Array.isArray(value)) return value.some((item) => nestingExceeds(item, max, depth + 1));
  for (const key in value) if (nestingExceeds((value as Record<string, unknown>)[key], max, depth + 1)) return true;
  return false;
}
