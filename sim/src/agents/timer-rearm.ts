import type { SimRandom } from '../rng';
import type { HttpReply } from '../http';

/**
 * Arms a timerKey again as a new request (a fresh Idempotency-Key): half the time with the same
 * body, as a client unsure whether its arm went through, which must answer the timer already
 * armed (200, the same id); half the time with an altered payload, which must be 409 CONFLICT.
 * Retries with the first Idempotency-Key are answered by the idempotency layer before the timer
 * service runs, so without this no agent reaches the service's comparison of bodies: a mutant
 * inverting it survived the simulator (docs/testing.md).
 */
export async function rearm(
  send: (body: Record<string, unknown>, idempotencyKey: string) => Promise<HttpReply>,
  rng: SimRandom,
  body: { timerKey: string; payload: Record<string, unknown> } & Record<string, unknown>,
  firstId: string,
  idempotencyKey: string,
  violation: (what: string) => void,
): Promise<void> {
  const altered = rng.chance(0.5);
  const reply = await send(altered ? { ...body, payload: { ...body.payload, altered: true } } : body, idempotencyKey);
  const what = `a new arm of timerKey ${body.timerKey} with ${altered ? 'another' : 'the same'} body answered ${reply.statusCode} ${JSON.stringify(reply.body)}`;
  if (altered && reply.statusCode < 300) violation(`${what}; expected 409 CONFLICT`);
  if (!altered && reply.statusCode === 409) violation(`${what}; expected the timer already armed`);
  if (!altered && reply.statusCode < 300 && reply.body?.id !== firstId) violation(`${what}; expected timer ${firstId}`);
}
