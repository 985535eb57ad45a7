import { BatonApiError, createWorker, PermanentError, silentLogger, type BatchItemReply, type BatonClient, type CallOptions, type RuntimeClock, type WorkerApi, type WorkerEvent } from '@baton-coordination/runtime';
import type { ClaimedView } from '../checks/tasks';
import type { SimContext } from '../context';
import { requestTimeoutMs } from '../network';
import { createSimClient, simClock, simRandom } from '../runtime-adapter';
import { Agent, type Current } from './agent';
import type { TaskFixture } from './task-fixture';

/** Long-poll waits stay under the network's 2 s timeout, so a wait that runs out is an answer, not a retry. */
const maxWaitMs = 1_500;
/** How long the runtime worker may drain at the end of the safety phase (well inside the liveness phase). */
const drainDeadlineMs = 30_000;

/**
 * Test-only runtime bugs, planted in the worker's client seam (the runtime itself stays as
 * shipped): they show what the simulator makes of a faulty runtime.
 * - renewTooLate: the runtime believes its lease is four times what the server granted (the
 *   admit and renew ask the server for the real lease, the replies' leaseExpiresAt is read as
 *   the longer one), so it renews after the lease ran out. The service must answer LEASE_LOST
 *   and redeliver; the runtime reports lease_lost. Nothing of the service's invariants breaks.
 * - completeAfterLeaseLost: after the worker reports a lease lost, the stale token is still
 *   used for a complete. The runtime check must catch it.
 * - completeLate: a complete-batch goes out only once the lease of its first item ran out, as
 *   from a runtime whose flusher sends what waited past its lease (the shipped one withdraws
 *   it). The runtime check must catch it: a complete sent after the runtime's own deadline.
 */
export interface RuntimeBugs {
  renewTooLate?: boolean;
  completeAfterLeaseLost?: boolean;
  completeLate?: boolean;
}

export interface TaskWorkerOptions {
  /** How often a job overruns its lease. */
  slowness: number;
  /** Handlers the runtime worker runs at once. */
  concurrency: number;
  bugs?: RuntimeBugs;
}

/** The per-session state of the runtime seam: tokens by message, what the worker lost. */
interface Session {
  current: Current;
  client: BatonClient;
  clock: RuntimeClock;
  /** The lease the server grants (5 to 10 s) and the one the runtime worker asks for (the same, unless renewTooLate). */
  leaseSeconds: number;
  workerLeaseSeconds: number;
  /**
   * Per message, the tokens this session holds that the runtime has not yet given up, oldest
   * first (with two handlers one message can come back to the same worker while a stubborn
   * handler still holds the old claim), and the token whose renew, complete or nack last heard
   * LEASE_LOST: the worker's lease_lost event names the message only.
   */
  liveTokens: Map<string, string[]>;
  lostAnswer: Map<string, string>;
  /** What each token's admission claimed (for the settle after its complete). */
  claimed: Map<string, ClaimedView | null>;
  /** The token of each message's last accepted complete. */
  completedToken: Map<string, string>;
  /** Messages whose renews a simulated partition blocks: the lease runs out under the worker. */
  renewBlocked: Set<string>;
  /**
   * Per token, the lease deadline the runtime computes from what the seam handed it (the
   * earlier of leaseExpiresAt and "heard + leaseSeconds"; never earlier than the runtime's own,
   * which counts a renewal from its send): it must send no complete or nack with that token at
   * or after it.
   */
  believedDeadline: Map<string, number>;
}

/**
 * A task worker is a @baton-coordination/runtime worker (`createWorker`, docs/runtime.md) with the runtime's
 * client, on the simulated network, clock and random stream (sim/src/runtime-adapter.ts): it
 * admits with long polls (holder = its name, holderSession = its session, a lease of 5 to 10
 * s), renews, and completes or nacks as the runtime does. The workload's variety lives in the
 * handler: normal work; slow work that outlives the lease (the runtime's renewals keep most of
 * it alive; some handlers ignore their signal, some have their renews blocked by a partition
 * so the lease is lost anyway); failures (throw: nack with retry) and permanent failures
 * (PermanentError: nack without retry); crashes (the session and its runtime instance freeze
 * without a drain, so its leases expire). After a complete it settles or voids the admission's
 * reservations through the same client. Now and then it takes a delivery by raw recv (the
 * bypass: no resources) and finishes it by hand with the runtime client.
 *
 * What clients were told goes to the TaskLedger from the client seam (tokens, sent and heard
 * times, replies) and from the worker's events (lease_lost for the runtime check, completed
 * for the settle).
 */
export class TaskWorker extends Agent {
  private counter = 0;

  constructor(
    name: string,
    sim: SimContext,
    private readonly tasks: TaskFixture,
    private readonly options: TaskWorkerOptions,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    const leaseSeconds = this.rng.int(5, 10);
    const workerLeaseSeconds = this.options.bugs?.renewTooLate ? leaseSeconds * 4 : leaseSeconds;
    const s: Session = {
      current,
      client: createSimClient({
        name: this.name,
        network: this.sim.network,
        scheduler: this.sim.scheduler,
        rng: this.rng.fork(`runtime-${this.session}`),
        auth: this.sim.auth,
        alive: current,
        onServerError: (reply, what) => this.sim.ledger.violation(`${this.name}: ${what} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`),
      }),
      // The agent's skewed clock: the runtime reads leaseExpiresAt on it (runtime/src/lease-timing.ts).
      clock: simClock(this.sim.scheduler, this.name, current, this.clockSkewMs),
      leaseSeconds,
      workerLeaseSeconds,
      liveTokens: new Map(),
      lostAnswer: new Map(),
      claimed: new Map(),
      completedToken: new Map(),
      renewBlocked: new Set(),
      believedDeadline: new Map(),
    };
    const worker = createWorker({
      client: this.seam(s),
      mailboxId: this.rng.pick(this.tasks.world.mailboxIds),
      scopeId: this.tasks.scopeId,
      holder: this.name,
      concurrency: this.options.concurrency,
      leaseSeconds: workerLeaseSeconds,
      waitMs: this.rng.int(200, maxWaitMs),
      handler: ({ delivery, signal }) => this.handle(s, delivery.messageId, signal),
      clock: s.clock,
      random: simRandom(this.rng),
      onEvent: (event) => this.onEvent(s, event),
      // The checkers read onEvent; a thousand runs' console lines would bury the failures.
      logger: silentLogger,
      admitBackoff: { baseMs: 200, maxMs: 4_000 },
    });
    worker.start();
    void this.rawLoop(s);
    while (this.sim.phase === 'safety') await this.sleep(current, 1_000);
    // Faults are off: let the handlers finish, hand back what does not in time.
    await worker.stop({ deadlineMs: drainDeadlineMs });
  }

  private key(kind: string): string {
    return `${this.name}.${this.session}.${kind}${this.counter++}`;
  }

  // --- the handler ---------------------------------------------------------------------------

  private async handle(s: Session, messageId: string, signal: AbortSignal): Promise<unknown> {
    await this.crashPoint(s.current);
    const leaseMs = s.leaseSeconds * 1_000;
    if (this.rng.float() < this.options.slowness) {
      // Outlives the lease: the runtime renews it. A partition may block the renews, and a
      // stubborn handler ignores its signal and returns anyway (the worker must send nothing).
      if (this.rng.chance(0.3)) s.renewBlocked.add(messageId);
      const stubborn = this.rng.chance(0.3);
      await this.work(s, leaseMs + this.rng.int(100, 3_000), stubborn ? undefined : signal);
    } else {
      await this.work(s, this.rng.int(20, 2_000), signal);
    }
    await this.crashPoint(s.current);
    const outcome = this.rng.float();
    if (outcome < 0.7) return { by: this.name };
    if (outcome < 0.9) throw new Error(`${this.name}: the job failed, worth a retry`);
    throw new PermanentError(`${this.name}: the job cannot succeed`);
  }

  /** Simulated work; with a signal it stops when the lease is lost (and throws its reason). */
  private async work(s: Session, ms: number, signal: AbortSignal | undefined): Promise<void> {
    await s.clock.sleep(ms, signal);
    if (!s.current()) await new Promise<never>(() => undefined);
  }

  private onEvent(s: Session, event: WorkerEvent): void {
    const now = this.sim.scheduler.now();
    if (event.type === 'lease_lost') {
      this.sim.trace.add(now, `${this.name} runtime lease_lost ${event.messageId.slice(0, 8)} ${event.cause}`);
      // LEASE_LOST: the token whose call just heard it; EXPIRED: the oldest claim still held (it runs out first).
      const token = event.cause === 'LEASE_LOST' ? s.lostAnswer.get(event.messageId) : s.liveTokens.get(event.messageId)?.[0];
      s.lostAnswer.delete(event.messageId);
      if (token === undefined) return;
      this.release(s, event.messageId, token);
      this.tasks.ledger.runtimeLeaseLost(token, event.cause, now);
      // The planted runtime bug: the stale token is used all the same.
      if (this.options.bugs?.completeAfterLeaseLost) void this.seamComplete(s, event.messageId, { token }).catch(() => undefined);
    } else if (event.type === 'completed') {
      const token = s.completedToken.get(event.messageId);
      const claimed = token === undefined ? undefined : s.claimed.get(token);
      s.completedToken.delete(event.messageId);
      if (token !== undefined) s.claimed.delete(token);
      if (claimed) void this.settle(s, claimed);
    } else if (event.type === 'failed') {
      if (event.retry) this.tasks.ledger.stats.nackedRetry++;
      else this.tasks.ledger.stats.nackedNoRetry++;
    }
  }

  // --- the client seam: what the runtime sends, recorded in the ledger ----------------------

  /** The WorkerApi the runtime worker is given: the runtime client, with the ledger's bookkeeping around admit, renew, complete and nack. */
  private seam(s: Session): WorkerApi {
    const { client } = s;
    const tooLate = this.options.bugs?.renewTooLate === true;
    return {
      ...client,
      admit: async (body, o) => {
        const admitted = await client.admit({ ...body, holderSession: this.sessionName, leaseSeconds: s.leaseSeconds }, this.claimOptions(o));
        if (!admitted) return null;
        this.delivered(s, admitted, admitted.claimed as ClaimedView);
        return this.handedOver(s, admitted.token, tooLate ? { ...admitted, leaseExpiresAt: this.believedExpiry(s) } : admitted);
      },
      admitBatch: async (body, o) => {
        const admitted = await client.admitBatch({ ...body, holderSession: this.sessionName, leaseSeconds: s.leaseSeconds }, this.claimOptions(o));
        for (const delivery of admitted) this.delivered(s, delivery, delivery.claimed as ClaimedView);
        return admitted.map((delivery) => this.handedOver(s, delivery.token, tooLate ? { ...delivery, leaseExpiresAt: this.believedExpiry(s) } : delivery));
      },
      completeBatch: async ({ items }, o) => {
        // The planted late flush: the request leaves once its first item's lease ran out.
        if (this.options.bugs?.completeLate) await s.clock.sleep(Math.max(0, (s.believedDeadline.get(items[0]!.token) ?? 0) - this.sim.scheduler.now()), o?.signal);
        for (const item of items) this.runtimeSends(s, item.token, 'complete');
        return this.trackedBatch(s, 'complete', items, () => client.completeBatch({ items }, o));
      },
      nackBatch: ({ items }, o) => {
        for (const item of items) this.runtimeSends(s, item.token, 'nack');
        return this.trackedBatch(s, 'nack', items, () => client.nackBatch({ items }, o));
      },
      renewBatch: async ({ items }, o) => {
        // A partition for one delivery cannot hold up the others of a batch: its renewal is kept
        // out and answered as a renew that timed out; the rest go.
        const blocked = items.filter((item) => s.renewBlocked.has(item.messageId));
        const sent = items.filter((item) => !s.renewBlocked.has(item.messageId)).map((item) => ({ ...item, leaseSeconds: s.leaseSeconds }));
        const replies = sent.length === 0 ? [] : await this.trackedBatch(s, 'renew', sent, () => client.renewBatch({ items: sent }, o));
        if (blocked.length > 0) await s.clock.sleep(requestTimeoutMs, o?.signal);
        const timedOut = { error: { code: 'NETWORK', message: 'no reply: renew blocked by a simulated partition', requestId: '' } };
        const byId = new Map(replies.map((reply, i) => [sent[i]!.messageId + sent[i]!.token, reply]));
        return items.map((item) => {
          const reply = byId.get(item.messageId + item.token);
          if (!reply) return { messageId: item.messageId, status: 0, body: timedOut };
          if (reply.status !== 200) return reply;
          const body = tooLate ? { ...(reply.body as { leaseExpiresAt: string }), leaseExpiresAt: this.believedExpiry(s) } : (reply.body as { leaseExpiresAt: string });
          return { ...reply, body: this.handedOver(s, item.token, body) };
        });
      },
      renew: async (messageId, body, o) => {
        if (s.renewBlocked.has(messageId)) {
          // A partition between this worker and the server for this delivery: the renew times out.
          await s.clock.sleep(requestTimeoutMs, o?.signal);
          throw new BatonApiError({ code: 'NETWORK', status: 0, message: 'no reply: renew blocked by a simulated partition', requestId: null });
        }
        const reply = await this.tracked(s, 'renew', messageId, body.token, () => client.renew(messageId, { ...body, leaseSeconds: s.leaseSeconds }, o));
        return this.handedOver(s, body.token, tooLate ? { ...reply, leaseExpiresAt: this.believedExpiry(s) } : reply);
      },
      complete: (messageId, body, o) => this.seamComplete(s, messageId, body, o),
      nack: (messageId, body, o) => {
        this.runtimeSends(s, body.token, 'nack');
        return this.tracked(s, 'nack', messageId, body.token, () => client.nack(messageId, body, o));
      },
    };
  }

  /**
   * The runtime names its holderSession and claim keys by a random UUID: the simulator's session
   * name keeps them deterministic (the claim key's sequence part is kept).
   */
  private claimOptions(o: CallOptions | undefined): CallOptions {
    const claimKey = o?.idempotencyKey;
    const idempotencyKey = claimKey === undefined ? undefined : `${this.sessionName}${claimKey.slice(claimKey.indexOf(':claim-'))}`;
    return { ...o, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) };
  }

  /**
   * What the runtime is handed for `token` (an admission, a renewal): the lease deadline it will
   * compute from it is noted (a bound on what runtime/src/lease-timing.ts computes), for the
   * runtime check.
   */
  private handedOver<T extends { leaseExpiresAt: string }>(s: Session, token: string, reply: T): T {
    // On the server's clock: the runtime reads leaseExpiresAt on its own, skewed, clock.
    const deadlineMs = Math.min(Date.parse(reply.leaseExpiresAt) - this.clockSkewMs, this.sim.scheduler.now() + s.workerLeaseSeconds * 1_000);
    s.believedDeadline.set(token, deadlineMs);
    return reply;
  }

  /** The runtime is sending a complete or nack with `token` now: the ledger's runtime check. */
  private runtimeSends(s: Session, token: string, what: 'complete' | 'nack'): void {
    this.tasks.ledger.runtimeSends(token, what, this.sim.scheduler.now(), s.believedDeadline.get(token));
  }

  private seamComplete(s: Session, messageId: string, body: Parameters<WorkerApi['complete']>[1], o?: CallOptions): ReturnType<WorkerApi['complete']> {
    this.runtimeSends(s, body.token, 'complete');
    return this.tracked(s, 'complete', messageId, body.token, () => s.client.complete(messageId, body, o));
  }

  /** The lease the renewTooLate runtime thinks it has: four times the granted one, from now. */
  private believedExpiry(s: Session): string {
    return new Date(this.sim.scheduler.now() + s.workerLeaseSeconds * 1_000).toISOString();
  }

  /** `claimed` null: a raw recv, finished by hand (the runtime worker never holds it). */
  private delivered(s: Session, d: { messageId: string; token: string; attempt: number; leaseExpiresAt: string }, claimed: ClaimedView | null): void {
    const leaseExpiresAtMs = Date.parse(d.leaseExpiresAt);
    this.tasks.ledger.delivered({ messageId: d.messageId, token: d.token, session: this.sessionName, attempt: d.attempt, leaseExpiresAtMs, claimed }, leaseExpiresAtMs - s.leaseSeconds * 1_000);
    if (claimed === null) return;
    const live = s.liveTokens.get(d.messageId) ?? [];
    if (!live.includes(d.token)) live.push(d.token);
    s.liveTokens.set(d.messageId, live);
    s.claimed.set(d.token, claimed);
  }

  /** The runtime is done with `token`: it no longer counts as held. */
  private release(s: Session, messageId: string, token: string): void {
    const live = (s.liveTokens.get(messageId) ?? []).filter((t) => t !== token);
    if (live.length > 0) s.liveTokens.set(messageId, live);
    else s.liveTokens.delete(messageId);
    if (s.completedToken.get(messageId) !== token) s.claimed.delete(token);
  }

  /** A renew, complete or nack through the runtime client: 200 is recorded as accepted (renewed), LEASE_LOST as heard. */
  private async tracked<T>(s: Session, what: 'renew' | 'complete' | 'nack', messageId: string, token: string, send: () => Promise<T>): Promise<T> {
    const sentAtMs = this.sim.scheduler.now();
    let reply: T;
    try {
      reply = await send();
    } catch (error) {
      this.heardFailure(s, what, messageId, token, error);
      throw error;
    }
    if (!s.current()) await new Promise<never>(() => undefined);
    this.heardAccepted(s, what, messageId, token, sentAtMs, reply);
    return reply;
  }

  /** tracked for a batch: each item recorded as its own call would be; a request that fails whole fails each item. */
  private async trackedBatch<T>(s: Session, what: 'renew' | 'complete' | 'nack', items: { messageId: string; token: string }[], send: () => Promise<BatchItemReply<T>[]>): Promise<BatchItemReply<T>[]> {
    const sentAtMs = this.sim.scheduler.now();
    let replies: BatchItemReply<T>[];
    try {
      replies = await send();
    } catch (error) {
      for (const item of items) this.heardFailure(s, what, item.messageId, item.token, error);
      throw error;
    }
    if (!s.current()) await new Promise<never>(() => undefined);
    replies.forEach((reply, i) => {
      const { messageId, token } = items[i]!;
      if (reply.status === 200) return this.heardAccepted(s, what, messageId, token, sentAtMs, reply.body);
      const { error } = reply.body as { error: { code: string; message: string; requestId: string } };
      this.heardFailure(s, what, messageId, token, new BatonApiError({ ...error, status: reply.status }));
    });
    return replies;
  }

  private heardAccepted(s: Session, what: 'renew' | 'complete' | 'nack', messageId: string, token: string, sentAtMs: number, reply: unknown): void {
    const heardAtMs = this.sim.scheduler.now();
    if (what === 'renew') this.tasks.ledger.renewed(token, Date.parse((reply as { leaseExpiresAt: string }).leaseExpiresAt));
    this.tasks.ledger.accepted(token, what, sentAtMs, heardAtMs);
    if (what === 'complete') s.completedToken.set(messageId, token);
    if (what !== 'renew') this.release(s, messageId, token);
  }

  private heardFailure(s: Session, what: 'renew' | 'complete' | 'nack', messageId: string, token: string, error: unknown): void {
    if (error instanceof BatonApiError && error.code === 'LEASE_LOST') {
      this.tasks.ledger.leaseLost(token, this.sim.scheduler.now(), what);
      s.lostAnswer.set(messageId, token);
      return;
    }
    // A complete or nack that got no answer: the worker sends nothing more for it either way.
    if (what !== 'renew') this.release(s, messageId, token);
    if (error instanceof BatonApiError && !transient(error)) this.sim.ledger.violation(`${this.name}: ${what} answered ${error.status} ${error.code}: ${error.message}`);
  }

  // --- after a complete ----------------------------------------------------------------------

  /** Each admission reservation settled in full, in part then voided, or voided. */
  private async settle(s: Session, claimed: ClaimedView): Promise<void> {
    for (const b of claimed.budgets) {
      await this.crashPoint(s.current);
      const budgetId = this.tasks.budgetIdOf(b.name);
      const amountMinor = BigInt(b.amountMinor);
      const roll = this.rng.float();
      if (roll < 0.8) {
        const spentMinor = roll < 0.5 ? amountMinor : BigInt(this.rng.int(1, Number(amountMinor)));
        const settled = await this.closing(s, 'settle', () => s.client.settle(budgetId, { reservationId: b.reservationId, amountMinor: String(spentMinor), workKey: this.key('st') }));
        if (settled?.reservation.state !== 'ACTIVE') continue;
      }
      await this.closing(s, 'void', () => s.client.voidReservation(budgetId, { reservationId: b.reservationId, workKey: this.key('vd') }));
    }
  }

  /**
   * The reply, or null for 409 (the reaper closed the reservation first: a live worker may be
   * that slow under faults) and for a call the network defeated (the reaper voids it later).
   */
  private async closing<T>(s: Session, what: string, send: () => Promise<T>): Promise<T | null> {
    try {
      const reply = await send();
      if (!s.current()) await new Promise<never>(() => undefined);
      return reply;
    } catch (error) {
      if (!(error instanceof BatonApiError) || (error.status !== 409 && !transient(error))) this.sim.ledger.violation(`${this.name}: ${what} failed: ${String(error)}`);
      return null;
    }
  }

  // --- the raw recv bypass -------------------------------------------------------------------

  /** Now and then a raw recv on the task mailbox (no resources), finished by hand with the runtime client. */
  private async rawLoop(s: Session): Promise<void> {
    while (this.sim.phase === 'safety') {
      await this.sleep(s.current, this.rng.int(2_000, 10_000));
      if (this.sim.phase !== 'safety') return;
      const mailboxId = this.rng.pick(this.tasks.world.mailboxIds);
      const body = { scopeId: this.tasks.scopeId, holder: this.name, holderSession: this.sessionName, leaseSeconds: s.leaseSeconds, ...(this.rng.chance(0.5) ? { waitMs: this.rng.int(200, maxWaitMs) } : {}) };
      let d: Awaited<ReturnType<BatonClient['recv']>>;
      try {
        d = await s.client.recv(mailboxId, body, { idempotencyKey: this.key('r') });
      } catch (error) {
        if (!(error instanceof BatonApiError && transient(error))) this.sim.ledger.violation(`${this.name}: recv failed: ${String(error)}`);
        continue;
      }
      if (!s.current()) return;
      if (!d) continue;
      this.delivered(s, d, null);
      await this.crashPoint(s.current);
      const leaseMs = s.leaseSeconds * 1_000;
      // No renewals here: a slow job overruns the lease and its complete must answer LEASE_LOST.
      await this.sleep(s.current, this.rng.chance(this.options.slowness) ? leaseMs + this.rng.int(100, 3_000) : this.rng.int(20, 2_000));
      await this.crashPoint(s.current);
      const outcome = this.rng.float();
      try {
        if (outcome < 0.7) await this.tracked(s, 'complete', d.messageId, d.token, () => s.client.complete(d.messageId, { token: d.token, result: { payload: { by: this.name } } }));
        else await this.tracked(s, 'nack', d.messageId, d.token, () => s.client.nack(d.messageId, { token: d.token, retry: outcome < 0.9 }));
      } catch {
        // LEASE_LOST (recorded) or the network won: the lease runs out and the delivery comes back.
      }
    }
  }
}

/** What the client gives up on after its retries when faults persist: no answer from the service, not a wrong one. */
function transient(error: BatonApiError): boolean {
  return error.code === 'NETWORK' || error.code === 'IDEMPOTENCY_KEY_IN_FLIGHT';
}
