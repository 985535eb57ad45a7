import type { ClaimedView } from '../checks/tasks';
import type { SimContext } from '../context';
import type { HttpReply } from '../server-host';
import { Agent, type Current } from './agent';
import type { TaskWorkload } from './task-workload';

/** Long-poll waits stay under the client's 2 s timeout, so a wait that runs out is an answer, not a retry. */
const maxWaitMs = 1_500;
/** Renewals of one claim at most: bounds how long a claim holds its resources (the reaper's grace counts on it). */
const maxRenewals = 2;

interface Claim {
  messageId: string;
  token: string;
  leaseSeconds: number;
  /** Null for a raw recv: it claims nothing but the delivery. */
  claimed: ClaimedView | null;
}

/**
 * A task worker: admits the oldest admissible delivery with its resources (holder = its name,
 * holderSession = its session, a lease of 5 to 10 s, often a long poll), now and then takes one
 * by raw recv instead (the bypass: no resources). Then works, renewing now and then; some jobs
 * overrun the lease (their complete must answer LEASE_LOST); a crash abandons the claim for the
 * lease sweep. Ends with complete (then settles or voids the admission's reservations), or nack
 * with or without retry.
 */
export class TaskWorker extends Agent {
  private counter = 0;

  constructor(
    name: string,
    sim: SimContext,
    private readonly tasks: TaskWorkload,
    /** How often a job overruns its lease. */
    private readonly slowness: number,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety') {
      const claim = await this.take(current);
      if (claim) await this.work(current, claim);
      await this.sleep(current, this.rng.int(10, claim ? 300 : 800));
    }
  }

  private key(kind: string): string {
    return `${this.name}.${this.session}.${kind}${this.counter++}`;
  }

  private async take(current: Current): Promise<Claim | undefined> {
    const mailboxId = this.rng.pick(this.tasks.world.mailboxIds);
    const leaseSeconds = this.rng.int(5, 10);
    const raw = this.rng.chance(0.1);
    const body: Record<string, unknown> = { scopeId: this.tasks.scopeId, holder: this.name, holderSession: this.sessionName, leaseSeconds };
    if (this.rng.chance(0.5)) body.waitMs = this.rng.int(200, maxWaitMs);
    const reply = raw
      ? await this.call(current, 'POST', `/mailboxes/${mailboxId}/recv`, { body, idempotencyKey: this.key('r') })
      : await this.call(current, 'POST', '/tasks/admit', { body: { ...body, mailboxId }, idempotencyKey: this.key('a') });
    if (reply.statusCode === 204) return undefined;
    if (!this.expect(reply, 200, raw ? 'recv' : 'admit')) return undefined;
    const { messageId, token, attempt } = reply.body as { messageId: string; token: string; attempt: number };
    const leaseExpiresAtMs = Date.parse(reply.body.leaseExpiresAt);
    const claimed = raw ? null : (reply.body.claimed as ClaimedView);
    this.tasks.ledger.delivered({ messageId, token, session: this.sessionName, attempt, leaseExpiresAtMs, claimed }, leaseExpiresAtMs - leaseSeconds * 1_000);
    return { messageId, token, leaseSeconds, claimed };
  }

  private async work(current: Current, claim: Claim): Promise<void> {
    await this.crashPoint(current);
    const leaseMs = claim.leaseSeconds * 1_000;
    const roll = this.rng.float();
    if (roll < this.slowness) {
      await this.sleep(current, leaseMs + this.rng.int(100, 3_000));
    } else if (roll < this.slowness + 0.2) {
      for (let i = 0, n = this.rng.int(1, maxRenewals); i < n; i++) {
        await this.sleep(current, this.rng.int(leaseMs / 4, leaseMs / 2));
        if (!(await this.finish(current, claim, 'renew', { token: claim.token, leaseSeconds: claim.leaseSeconds }))) return;
      }
    } else {
      await this.sleep(current, this.rng.int(20, 2_000));
    }
    await this.crashPoint(current);
    const outcome = this.rng.float();
    if (outcome < 0.7) {
      if (await this.finish(current, claim, 'complete', { token: claim.token, result: { payload: { by: this.name } } })) await this.settle(current, claim);
    } else {
      await this.finish(current, claim, 'nack', { token: claim.token, retry: outcome < 0.9 });
    }
  }

  /** A renew, complete or nack: true when it answered 200. */
  private async finish(current: Current, claim: Claim, what: 'renew' | 'complete' | 'nack', body: unknown): Promise<boolean> {
    const sentAtMs = this.sim.scheduler.now();
    const reply = await this.call(current, 'POST', `/messages/${claim.messageId}/${what}`, { body, idempotencyKey: this.key(what[0]!) });
    const heardAtMs = this.sim.scheduler.now();
    if (reply.statusCode === 409 && reply.body.error.code === 'LEASE_LOST') {
      this.tasks.ledger.leaseLost(claim.token, heardAtMs);
      return false;
    }
    if (!this.expect(reply, 200, what)) return false;
    if (what === 'renew') this.tasks.ledger.renewed(claim.token, Date.parse(reply.body.leaseExpiresAt));
    this.tasks.ledger.accepted(claim.token, what, sentAtMs, heardAtMs);
    return true;
  }

  /** After a complete: each admission reservation settled in full, in part then voided, or voided. */
  private async settle(current: Current, claim: Claim): Promise<void> {
    for (const b of claim.claimed?.budgets ?? []) {
      await this.crashPoint(current);
      const budgetId = this.tasks.budgetIdOf(b.name);
      const amountMinor = BigInt(b.amountMinor);
      const roll = this.rng.float();
      if (roll < 0.8) {
        const spentMinor = roll < 0.5 ? amountMinor : BigInt(this.rng.int(1, Number(amountMinor)));
        const settled = await this.call(current, 'POST', `/budgets/${budgetId}/settle`, { body: { reservationId: b.reservationId, amountMinor: String(spentMinor), workKey: this.key('st') } });
        if (!this.closing(settled, 'settle') || settled.body.reservation?.state !== 'ACTIVE') continue;
      }
      const voided = await this.call(current, 'POST', `/budgets/${budgetId}/void`, { body: { reservationId: b.reservationId, workKey: this.key('vd') } });
      this.closing(voided, 'void');
    }
  }

  /** 200, or 409 when the reaper closed the reservation first: a live worker may be that slow under faults. */
  private closing(reply: HttpReply, what: string): boolean {
    if (reply.statusCode === 409) return false;
    return this.expect(reply, 200, what);
  }

  private expect(reply: HttpReply, status: number, what: string): boolean {
    if (reply.statusCode === status) return true;
    this.sim.ledger.violation(`${this.name}: ${what} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    return false;
  }
}
