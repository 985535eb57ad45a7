import { rearm } from './timer-rearm';
import { checkHeldLive } from './claim-held-live';
import type { ClaimLedger } from '../checks/claims';
import type { SimContext } from '../context';
import { SimRandom } from '../rng';
import { Agent, type Current } from './agent';

/** How long before the lease's end, on its own clock, a skewed claimer renews. */
const renewMarginMs = 500;

/** The coordination tenant's space (sim/src/coordination.ts): its mailbox for timers and tasks, the scope claims race under. */
export interface CoordinationSpace {
  spaceId: string;
  key: string;
  mailboxId: string;
  claimScopeId: string;
  claimKeys: readonly string[];
  timerScopeId: string;
  /** A budget run agents reserve from under runs they ended (which must refuse). */
  budgetId: string;
}

/**
 * Races the other claim agents for a few claimKeys: acquire (leaseSeconds 5 to 10), "work" in
 * rounds that renew now and then, some of them sleeping past the lease, then release or
 * abandon. Every reply goes to the ClaimLedger with the lease its holder knew when it sent.
 * Bounded cycles, so it leaves the run's scheduler steps to the others.
 */
export class ClaimAgent extends Agent {
  private counter = 0;
  /** Its own stream, so that skew-free runs draw exactly what they drew before. */
  private readonly skewRng = new SimRandom(`${this.rng.seed}/skewed-renews`);

  constructor(
    name: string,
    sim: SimContext,
    private readonly space: CoordinationSpace,
    private readonly ledger: ClaimLedger,
    private readonly cycles: number,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety' && this.counter < this.cycles) {
      await this.cycle(current);
      await this.sleep(current, this.rng.int(50, 600));
    }
  }

  private renewsByItsClock(): boolean {
    return this.clockSkewMs !== 0 && this.skewRng.chance(0.3);
  }

  private async cycle(current: Current): Promise<void> {
    const n = this.counter++;
    const claimKey = this.rng.pick(this.space.claimKeys);
    const holderSession = `${this.sessionName}.${n}`;
    const sentAtMs = this.sim.scheduler.now();
    const body = { claimKey, scopeId: this.space.claimScopeId, holder: this.name, holderSession, leaseSeconds: this.rng.int(5, 10) };
    const reply = await this.call(current, 'POST', '/claims', { body, idempotencyKey: `${holderSession}.acquire` });
    const ok = reply.statusCode === 201 || reply.statusCode === 200;
    this.ledger.acquired({ agent: this.sessionName, claimKey, sentAtMs, statusCode: reply.statusCode, claimId: reply.body?.id, fencingToken: reply.body?.fencingToken });
    if (!ok) {
      if (reply.body?.error?.code !== 'CLAIM_HELD') this.sim.ledger.violation(`${this.name}: acquire of ${claimKey} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
      else checkHeldLive(this.name, claimKey, sentAtMs, reply, (message) => this.sim.ledger.violation(message));
      return;
    }
    const id = reply.body.id as string;
    const token = reply.body.token as string;
    let knownExpiryMs = Date.parse(reply.body.leaseExpiresAt);
    const leaseMs = body.leaseSeconds * 1_000;
    for (let round = 0, rounds = this.rng.int(1, 4); round < rounds; round++) {
      // Most work fits in the lease; a fifth of it sleeps past it (lease loss).
      const drawnMs = this.rng.chance(0.2) ? leaseMs + this.rng.int(0, 3_000) : this.rng.int(200, leaseMs / 2);
      // With clock skew, some rounds renew when the agent's own clock says the lease is nearly
      // out: an agent whose clock runs behind renews after the lease ended on the server, and
      // must be told LEASE_LOST (its fencing token is then behind the next holder's).
      await this.sleep(current, this.renewsByItsClock() ? Math.max(0, knownExpiryMs - renewMarginMs - this.clockNow()) : drawnMs);
      await this.crashPoint(current);
      if (!this.rng.chance(0.5)) continue;
      const renewedAt = this.sim.scheduler.now();
      const renewed = await this.call(current, 'POST', `/claims/${id}/renew`, { body: { token, leaseSeconds: body.leaseSeconds }, idempotencyKey: `${holderSession}.renew${round}` });
      this.ledger.answered(this.sessionName, 'renew', id, renewedAt, knownExpiryMs, renewed.statusCode);
      if (renewed.statusCode === 200) knownExpiryMs = Date.parse(renewed.body.leaseExpiresAt);
      else if (renewed.body?.error?.code === 'LEASE_LOST') return;
      else return this.sim.ledger.violation(`${this.name}: renew of claim ${id} answered ${renewed.statusCode} ${JSON.stringify(renewed.body)}`);
    }
    if (this.rng.chance(0.2)) return; // abandoned: the lease runs out
    const releasedAt = this.sim.scheduler.now();
    const released = await this.call(current, 'POST', `/claims/${id}/release`, { body: { token }, idempotencyKey: `${holderSession}.release` });
    this.ledger.answered(this.sessionName, 'release', id, releasedAt, knownExpiryMs, released.statusCode);
    if (released.statusCode !== 200 && released.body?.error?.code !== 'LEASE_LOST') this.sim.ledger.violation(`${this.name}: release of claim ${id} answered ${released.statusCode} ${JSON.stringify(released.body)}`);
  }
}

/**
 * Arms timers into the coordination mailbox (delaySeconds 0 to 5, or a fireAt from 1 s past to 5 s
 * ahead on its own clock, which the run's skew puts off the server's by up to skewMs), arms some
 * timerKeys again as a new request (timer-rearm.ts) and cancels some.
 */
export class TimerAgent extends Agent {
  private counter = 0;
  private readonly armed: string[] = [];

  constructor(
    name: string,
    sim: SimContext,
    private readonly space: CoordinationSpace,
    private readonly arms: number,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety' && this.counter < this.arms) {
      const n = this.counter++;
      const when = this.rng.chance(0.6) ? { delaySeconds: this.rng.int(0, 5) } : { fireAt: new Date(this.clockNow() + this.rng.int(-1_000, 5_000)).toISOString() };
      const body = { timerKey: `${this.sessionName}.t${n}`, scopeId: this.space.timerScopeId, mailboxId: this.space.mailboxId, payload: { n }, ...when };
      const reply = await this.call(current, 'POST', '/timers', { body, idempotencyKey: `${this.sessionName}.arm${n}` });
      if (reply.statusCode === 201 || reply.statusCode === 200) this.armed.push(reply.body.id);
      else this.sim.ledger.violation(`${this.name}: arm answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
      await this.crashPoint(current);
      if (reply.statusCode < 300 && this.rng.chance(0.25)) {
        const send = (again: Record<string, unknown>, key: string) => this.call(current, 'POST', '/timers', { body: again, idempotencyKey: key });
        await rearm(send, this.rng, body, reply.body.id, `${this.sessionName}.rearm${n}`, (what) => this.sim.ledger.violation(`${this.name}: ${what}`));
      }
      if (this.armed.length > 0 && this.rng.chance(0.35)) {
        await this.sleep(current, this.rng.int(0, 3_000));
        const id = this.rng.pick(this.armed);
        const cancelled = await this.call(current, 'POST', `/timers/${id}/cancel`, { idempotencyKey: `${this.sessionName}.cancel${n}` });
        if (cancelled.statusCode !== 200 && cancelled.body?.error?.code !== 'CONFLICT') this.sim.ledger.violation(`${this.name}: cancel of timer ${id} answered ${cancelled.statusCode} ${JSON.stringify(cancelled.body)}`);
      }
      await this.sleep(current, this.rng.int(100, 800));
    }
  }
}

/**
 * Creates runs (half with one or two child runs), puts work under each scopeId (a task or two, a
 * timer 2 to 30 s ahead, a claim with a 10 to 30 s lease), then cancels most roots (some only a
 * child), completes some, and now and then submits more work under a run it cancelled. With
 * clock skew, some of its timers name a fireAt on its own clock rather than a delay (the timers
 * check: never fired before fireAt, none left ARMED past it; a cancelled run cancels it).
 */
export class RunAgent extends Agent {
  private counter = 0;
  /** Its own stream, so that skew-free runs draw exactly what they drew before. */
  private readonly skewRng = new SimRandom(`${this.rng.seed}/skewed-timers`);

  constructor(
    name: string,
    sim: SimContext,
    private readonly space: CoordinationSpace,
    private readonly runs: number,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety' && this.counter < this.runs) {
      await this.oneRun(current, this.counter++);
      await this.sleep(current, this.rng.int(200, 1_000));
    }
  }

  private async oneRun(current: Current, n: number): Promise<void> {
    const tag = `${this.sessionName}.r${n}`;
    const root = await this.create(current, `${tag}`, { scopeId: this.rng.uuid(), name: tag });
    if (!root) return;
    const scopes = [root];
    for (let i = 0, children = this.rng.chance(0.5) ? this.rng.int(1, 2) : 0; i < children; i++) {
      const child = await this.create(current, `${tag}.c${i}`, { scopeId: this.rng.uuid(), parentScopeId: root, name: `${tag}.c${i}` });
      if (child) scopes.push(child);
    }
    for (const [i, scopeId] of scopes.entries()) await this.work(current, `${tag}.w${i}`, scopeId);
    await this.crashPoint(current);
    await this.sleep(current, this.rng.int(0, 1_500));
    const roll = this.rng.float();
    let ended: string | undefined;
    if (roll < 0.6) ended = await this.end(current, `${tag}.cancel`, root, 'cancel');
    else if (roll < 0.8 && scopes.length > 1) ended = await this.end(current, `${tag}.cancel1`, scopes[1]!, 'cancel');
    else ended = await this.end(current, `${tag}.complete`, root, 'complete');
    if (ended !== undefined && this.rng.chance(0.4)) await this.lateWork(current, `${tag}.late`, ended);
  }

  /**
   * Work under a run this agent ended: a task, a timer, a claim, a reservation and a child run,
   * each of which the run must refuse (409). The agent takes any answer but a server error; the
   * journal check (checks/runs.ts checkNoWorkAfterEnd) says whether anything was created.
   */
  private async lateWork(current: Current, key: string, scopeId: string): Promise<void> {
    const attempts: [string, string, Record<string, unknown>][] = [
      ['submit', '/tasks', { scopeId, mailboxId: this.space.mailboxId, taskKey: `${key}.task` }],
      ['arm', '/timers', { timerKey: `${key}.timer`, scopeId, mailboxId: this.space.mailboxId, payload: null, delaySeconds: this.rng.int(2, 30) }],
      ['acquire', '/claims', { claimKey: `${key}.claim`, scopeId, holder: this.name, holderSession: key, leaseSeconds: this.rng.int(10, 30) }],
      ['reserve', `/budgets/${this.space.budgetId}/reserve`, { scopeId, holder: this.name, amountMinor: '1' }],
      ['child run', '/runs', { scopeId: this.rng.uuid(), parentScopeId: scopeId, name: `${key}.child` }],
    ];
    for (const [what, path, body] of attempts) {
      const reply = await this.call(current, 'POST', path, { body, idempotencyKey: `${key}.${what}` });
      this.expect(reply.statusCode, [200, 201, 409], `late ${what}`, reply.body);
    }
  }

  private async create(current: Current, key: string, body: Record<string, unknown>): Promise<string | undefined> {
    const reply = await this.call(current, 'POST', '/runs', { body, idempotencyKey: key });
    if (reply.statusCode === 201 || reply.statusCode === 200) return reply.body.scopeId as string;
    this.sim.ledger.violation(`${this.name}: POST /runs answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    return undefined;
  }

  /** A task or two, a timer and a claim under scopeId. */
  private async work(current: Current, key: string, scopeId: string): Promise<void> {
    for (let i = 0, n = this.rng.int(1, 2); i < n; i++) {
      const reply = await this.call(current, 'POST', '/tasks', { body: { scopeId, mailboxId: this.space.mailboxId, taskKey: `${key}.task${i}` }, idempotencyKey: `${key}.task${i}` });
      this.expect(reply.statusCode, [200, 201], 'submit', reply.body);
    }
    const delaySeconds = this.rng.int(2, 30);
    const when = this.clockSkewMs !== 0 && this.skewRng.chance(0.5) ? { fireAt: new Date(this.clockNow() + delaySeconds * 1_000).toISOString() } : { delaySeconds };
    const timer = await this.call(current, 'POST', '/timers', {
      body: { timerKey: `${key}.timer`, scopeId, mailboxId: this.space.mailboxId, payload: null, ...when },
      idempotencyKey: `${key}.timer`,
    });
    this.expect(timer.statusCode, [200, 201], 'arm', timer.body);
    const claim = await this.call(current, 'POST', '/claims', {
      body: { claimKey: `${key}.claim`, scopeId, holder: this.name, holderSession: key, leaseSeconds: this.rng.int(10, 30) },
      idempotencyKey: `${key}.claim`,
    });
    this.expect(claim.statusCode, [200, 201], 'acquire', claim.body);
  }

  /** Ends the run; answers its scopeId once it has ended (200), undefined otherwise. */
  private async end(current: Current, key: string, scopeId: string, how: 'cancel' | 'complete'): Promise<string | undefined> {
    const reply = await this.call(current, 'POST', `/runs/${scopeId}/${how}`, { idempotencyKey: key });
    // A complete of a run whose parent's cancel reached it first is a CONFLICT; nothing else is.
    if (reply.statusCode !== 200 && reply.body?.error?.code !== 'CONFLICT') this.sim.ledger.violation(`${this.name}: ${how} of run ${scopeId} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    return reply.statusCode === 200 ? scopeId : undefined;
  }

  private expect(status: number, ok: number[], what: string, body: unknown): void {
    if (!ok.includes(status)) this.sim.ledger.violation(`${this.name}: ${what} answered ${status} ${JSON.stringify(body)}`);
  }
}
