import type { MessageLedger } from '../checks/messages';
import type { SimContext } from '../context';
import type { HttpReply } from '../http';
import { SimRandom } from '../rng';
import { Agent, type Current } from './agent';

/**
 * Sends messages to the run's mailboxes: each logical send has its own workKey and
 * Idempotency-Key (so the client's retries replay), and now and then a committed send is made
 * again as a new request (a fresh Idempotency-Key: send requires one), which must answer 200 with the same
 * message: the workKey dedups it. With clock skew, some sends carry a deadline on the agent's
 * own clock, an absolute time the server keeps (docs/api.md: recorded, nothing acts on it yet):
 * the message, and a repeat's answer, must hold the very instant sent.
 */
export class MessageSender extends Agent {
  private counter = 0;
  /** Its own stream, so that skew-free runs draw exactly what they drew before. */
  private readonly skewRng = new SimRandom(`${this.rng.seed}/skewed-deadlines`);

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
    const body = { scopeId: this.sim.messageScopeId, payload: { from: this.name, n: this.counter, work: this.rng.int(1, 1_000) }, workKey, ...this.deadline() };
    this.ledger.requestSend(workKey, this.sessionName, mailboxId);
    const path = `/mailboxes/${mailboxId}/messages`;
    const reply = await this.call(current, 'POST', path, { body, idempotencyKey: `k.${workKey}` });
    if (reply.statusCode === 429 && reply.body.error.code === 'BACKLOG_FULL') return this.ledger.refuseSend(workKey);
    if (!this.expect(reply, 201, 'send')) return;
    this.ledger.ackSend(workKey, reply.body.id, false, reply.statusCode);
    this.expectDeadline(body.deadline, reply);
    await this.crashPoint(current);
    if (this.rng.chance(0.15)) {
      // A repeat of a committed send, as a new request: the workKey must answer with the same message.
      const again = await this.call(current, 'POST', path, { body, idempotencyKey: `k2.${workKey}` });
      if (!this.expect(again, 200, 'repeated send')) return;
      this.ledger.ackSend(workKey, again.body.id, true, again.statusCode);
      this.expectDeadline(body.deadline, again);
    }
  }

  /** With skew, three sends in ten carry a deadline 5 to 60 s ahead on the agent's clock. */
  private deadline(): { deadline?: string } {
    if (this.clockSkewMs === 0 || !this.skewRng.chance(0.3)) return {};
    return { deadline: new Date(this.clockNow() + this.skewRng.int(5_000, 60_000)).toISOString() };
  }

  private expectDeadline(sent: string | undefined, reply: HttpReply): void {
    const held = reply.body.deadline === null ? undefined : Date.parse(reply.body.deadline);
    if (held !== (sent === undefined ? undefined : Date.parse(sent))) this.sim.ledger.violation(`${this.name}: message ${reply.body.id} sent with deadline ${sent ?? 'none'} holds ${reply.body.deadline}`);
  }

  private expect(reply: HttpReply, status: number, what: string): boolean {
    if (reply.statusCode === status) return true;
    this.sim.ledger.violation(`${this.name}: ${what} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    return false;
  }
}
