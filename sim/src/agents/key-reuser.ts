import { isDeepStrictEqual } from 'node:util';
import type { HttpReply } from '../http';
import { Agent, type Current } from './agent';

/**
 * Error codes whose replies the idempotency layer does not store (docs/api.md "Idempotency":
 * those raised before the operation runs, rate and plan limits, and 5xx): a key that got one
 * may be used afresh, so a second request under it proves nothing.
 */
const notStored = new Set([
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'VALIDATION_FAILED',
  'IDEMPOTENCY_KEY_REQUIRED',
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENCY_KEY_IN_FLIGHT',
  'RATE_LIMITED',
  'SERVICE_RATE_LIMITED',
  'CONCURRENCY_LIMITED',
  'OPERATIONS_EXHAUSTED',
  'PLAN_LIMIT_REACHED',
  'UNAVAILABLE',
  'INTERNAL',
]);

const stored = (reply: HttpReply): boolean => reply.statusCode < 300 || !notStored.has(reply.body?.error?.code);

/**
 * A client that sends a request again under the Idempotency-Key it used before, as a buggy or
 * careless one would (docs/api.md "Idempotency"): half the time with the very same body, which
 * must replay the first reply (status and body byte for byte, Idempotent-Replayed), half the
 * time with the body altered, which must be 422 IDEMPOTENCY_KEY_REUSED and change nothing. The
 * requests are small consumes of the run's quotas (the allowance checks hold them like any).
 */
export class KeyReuser extends Agent {
  private counter = 0;

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety') {
      await this.reuse(current, this.rng.pick(this.sim.allowanceIds));
      await this.sleep(current, this.rng.int(200, 2_000));
    }
  }

  private async reuse(current: Current, allowanceId: string): Promise<void> {
    const key = `${this.name}.${this.session}.r${this.counter++}`;
    const path = `/allowances/${allowanceId}/consume`;
    const body = { scopeId: this.rng.uuid(), units: this.rng.int(1, 2), holder: this.name };
    const first = await this.call(current, 'POST', path, { body, idempotencyKey: key });
    if (!stored(first)) return;
    await this.crashPoint(current);
    await this.sleep(current, this.rng.int(0, 3_000));
    if (this.rng.chance(0.5)) {
      const again = await this.call(current, 'POST', path, { body, idempotencyKey: key });
      if (again.statusCode !== first.statusCode || !isDeepStrictEqual(again.body, first.body) || again.headers['idempotent-replayed'] !== 'true') {
        this.violation(`the same request again under Idempotency-Key ${key} answered ${again.statusCode} ${JSON.stringify(again.body)} (replayed: ${String(again.headers['idempotent-replayed'])}), not the first reply ${first.statusCode} ${JSON.stringify(first.body)}`);
      }
      return;
    }
    const altered = this.alter(body);
    const reused = await this.call(current, 'POST', path, { body: altered, idempotencyKey: key });
    if (reused.statusCode !== 422 || reused.body?.error?.code !== 'IDEMPOTENCY_KEY_REUSED') {
      this.violation(`Idempotency-Key ${key} reused with another body (${JSON.stringify(altered)} after ${JSON.stringify(body)}) answered ${reused.statusCode} ${JSON.stringify(reused.body)}, not 422 IDEMPOTENCY_KEY_REUSED`);
    }
  }

  /** The body with one field changed: the units, the holder or the scope. */
  private alter(body: { scopeId: string; units: number; holder: string }): typeof body {
    const field = this.rng.pick(['units', 'holder', 'scopeId'] as const);
    if (field === 'units') return { ...body, units: body.units + 1 };
    if (field === 'holder') return { ...body, holder: `${body.holder}-other` };
    return { ...body, scopeId: this.rng.uuid() };
  }

  private violation(what: string): void {
    this.sim.ledger.violation(`${this.name}: ${what}`);
  }
}
