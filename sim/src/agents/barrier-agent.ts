import type { SimContext } from '../context';
import type { BarrierLedger, BarrierReply } from '../checks/barriers';
import type { HttpReply } from '../http';
import { Agent, type Current } from './agent';

/** Long-poll waits stay under the client's 2 s timeout, so a wait that runs out is an answer, not a retry. */
const maxWaitMs = 1_500;

/**
 * A worker meeting others at shared barriers: it arrives with an arrivalKey drawn from a small
 * pool shared by all barrier agents (so keys repeat, within an epoch and across agents), waits
 * for the release through the long poll, and starts the next epoch once one is over. Now and
 * then it cancels a WAITING epoch. Every call carries an Idempotency-Key, except some arrivals,
 * whose retries then rest on arrivalKey idempotency alone.
 */
export class BarrierAgent extends Agent {
  private counter = 0;

  constructor(
    name: string,
    sim: SimContext,
    private readonly barrierIds: readonly string[],
    private readonly ledger: BarrierLedger,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety') {
      const barrierId = this.rng.pick(this.barrierIds);
      const seen = await this.call(current, 'GET', `/barriers/${barrierId}`);
      if (this.expect(seen, 200, 'GET barrier')) {
        const barrier = this.ledger.viewed(barrierId, seen.body as BarrierReply);
        if (barrier.state !== 'WAITING') await this.nextEpoch(current, barrierId, barrier.epoch);
        else if (this.rng.chance(0.03)) await this.cancel(current, barrierId);
        else await this.arriveAndWait(current, barrierId, barrier.epoch);
      }
      await this.sleep(current, this.rng.int(10, 500));
    }
  }

  private key(kind: string): string {
    return `${this.name}.${this.session}.${kind}${this.counter++}`;
  }

  private async arriveAndWait(current: Current, barrierId: string, epoch: number): Promise<void> {
    const arrivalKey = `p${this.rng.int(0, 5)}`;
    const body: { arrivalKey: string; epoch?: number } = this.rng.chance(0.7) ? { arrivalKey, epoch } : { arrivalKey };
    const idempotencyKey = this.rng.chance(0.8) ? this.key('a') : undefined;
    const reply = await this.call(current, 'POST', `/barriers/${barrierId}/arrive`, { body, idempotencyKey });
    if (reply.statusCode === 409 && reply.body.error.code === 'CONFLICT') return; // released, cancelled or moved on meanwhile
    if (!this.expect(reply, 200, 'arrive')) return;
    const arrived = this.ledger.arrived(barrierId, arrivalKey, reply.body as BarrierReply, this.sessionName);
    // The reply shows the barrier now; a replay of a key counted in the epoch named may find it later.
    const countedIn = body.epoch ?? arrived.epoch;
    if (this.rng.chance(0.2)) await this.arriveAgain(current, barrierId, arrivalKey, countedIn);
    await this.crashPoint(current);
    let state = arrived.epoch === countedIn ? arrived.state : 'OVER';
    for (let polls = 0; state === 'WAITING' && polls < 4; polls++) {
      const waited = await this.call(current, 'GET', `/barriers/${barrierId}?waitMs=${this.rng.int(200, maxWaitMs)}&epoch=${countedIn}`);
      if (!this.expect(waited, 200, 'long poll')) return;
      const view = this.ledger.viewed(barrierId, waited.body as BarrierReply);
      state = view.epoch === countedIn ? view.state : 'OVER';
    }
  }

  /**
   * Repeats a counted arrival as a new request (a fresh Idempotency-Key), as a worker unsure
   * whether its arrival counted does. Naming the epoch, it must replay, whatever happened since.
   */
  private async arriveAgain(current: Current, barrierId: string, arrivalKey: string, epoch: number): Promise<void> {
    const reply = await this.call(current, 'POST', `/barriers/${barrierId}/arrive`, { body: { arrivalKey, epoch }, idempotencyKey: this.key('a') });
    if (!this.expect(reply, 200, 'repeated arrive')) return;
    const again = this.ledger.arrived(barrierId, arrivalKey, reply.body as BarrierReply, this.sessionName);
    if (!again.replay) this.sim.ledger.violation(`${this.name}: a repeat of ${arrivalKey} in epoch ${epoch} of barrier ${barrierId} counted again`);
  }

  /** Ends the epoch it saw over. Naming it makes every agent's call start exactly one epoch. */
  private async nextEpoch(current: Current, barrierId: string, epoch: number): Promise<void> {
    const named = this.rng.chance(0.8);
    const reply = await this.call(current, 'POST', `/barriers/${barrierId}/nextEpoch`, { body: named ? { epoch } : undefined, idempotencyKey: this.key('n') });
    // Unnamed, another agent may have started the next epoch first: the barrier is WAITING again.
    if (!named && reply.statusCode === 409 && reply.body.error.code === 'CONFLICT') return;
    if (!this.expect(reply, 200, 'nextEpoch')) return;
    const view = this.ledger.viewed(barrierId, reply.body as BarrierReply);
    if (view.epoch <= epoch) this.sim.ledger.violation(`${this.name}: nextEpoch of epoch ${epoch} of barrier ${barrierId} answered epoch ${view.epoch}`);
  }

  private async cancel(current: Current, barrierId: string): Promise<void> {
    const reply = await this.call(current, 'POST', `/barriers/${barrierId}/cancel`, { idempotencyKey: this.key('c') });
    if (reply.statusCode === 409 && reply.body.error.code === 'CONFLICT') return; // released meanwhile
    if (this.expect(reply, 200, 'cancel')) this.ledger.viewed(barrierId, reply.body as BarrierReply);
  }

  /** An answer no careful client expects is a violation; the agent then drops the operation. */
  private expect(reply: HttpReply, status: number, what: string): boolean {
    if (reply.statusCode === status) return true;
    this.sim.ledger.violation(`${this.name}: ${what} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    return false;
  }
}
