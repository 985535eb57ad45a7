/**
 * Assertions are the executable specification: a failed one is a bug in Baton, never a
 * client's mistake, so it surfaces as INTERNAL (500) and is logged loudly.
 */
export class InvariantViolation extends Error {
  override name = 'InvariantViolation';
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new InvariantViolation(message);
}

export function unreachable(value: never, message = 'unreachable'): never {
  throw new InvariantViolation(`${message}: ${JSON.stringify(value)}`);
}
