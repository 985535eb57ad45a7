import type { MessageLedger } from '../checks/messages';
import type { SimContext } from '../context';
import type { HttpReply } from '../http';
import { Agent, type Current } from './agent';

/**
 * Sends messages to the run's mailboxes: each logical send has its own workKey and
 * Idempotency-Key (so the client's retries replay), and now and then a committed send is made
 * again as a new request (a fresh Idempotency-Key: send requires one), which must answer 200 with the same
 * message: the workKey dedups it.
 */
export class MessageSender extends Agent {
  private counter = 0;

  constructor(
    name: string,
    sim: SimContext,
    private readonly ledger: MessageLedger,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety') {
      await this.send(current);
      await this.sleep(current, this.rng.int(50, 1_200));
    }
  }

  private async send(current: Current): Promise<void> {
    const mailboxId = this.rng.pick(this.sim.mailboxIds);
    const workKey = `${this.name}.${this.session}.m${this.counter++}`;
    const body = { scopeId: this.sim.messageScopeId, payload: { from: this.name, n: this.counter, work: this.rng.int(1, 1_000) }, workKey };
    this.ledger.requestSend(workKey, this.sessionName, mailboxId);
    const path = `/mailboxes/${mailboxId}/messages`;
    const reply = await this.call(current, 'POST', path, { body, idempotencyKey: `k.${workKey}` });
    if (reply.statusCode === 429 && reply.body.error.code === 'BACKLOG_FULL') return this.ledger.refuseSend(workKey);
    if (!this.expect(reply, 201, 'send')) return;
    this.ledger.ackSend(workKey, reply.body.id, false, reply.statusCode);
    await this.crashPoint(current);
    if (this.rng.chance(0.15)) {
      // A repeat of a committed send, as a new request: the workKey must answer with the same message.
      const again = await this.call(current, 'POST', path, { body, idempotencyKey: `k2.${workKey}` });
      if (!this.expect(again, 200, 'repeated send')) return;
      this.ledger.ackSend(workKey, again.body.id, true, again.statusCode);
    }
  }

  private expect(reply: HttpReply, status: number, what: string): boolean {
    if (reply.statusCode === status) return true;
    this.sim.ledger.violation(`${this.name}: ${what} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    return false;
  }
}
