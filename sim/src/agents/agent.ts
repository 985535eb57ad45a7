import { ApiClient, never, type CallOptions } from '../client';
import type { SimContext } from '../context';
import { SimRandom } from '../rng';
import type { HttpReply } from '../http';

/** True while the session that asked is the agent's current one (it has not crashed since). */
export type Current = () => boolean;

/**
 * An agent is a coroutine driven by the scheduler. A crash abandons the coroutine where it is
 * waiting (its promises never settle) and starts a fresh session with no memory, as a worker
 * process that died and was restarted would. Agents talk to the server only through their
 * client, so the runtime's worker loop can later take their place unchanged.
 */
export abstract class Agent {
  protected session = 0;
  private readonly client: ApiClient;
  readonly rng: SimRandom;

  /**
   * How far this agent's clock is from the server's (the run's skewMs fault, either way), drawn
   * from a stream of its own so that the agent's other choices stay what they were.
   */
  protected readonly clockSkewMs: number;

  constructor(
    readonly name: string,
    protected readonly sim: SimContext,
  ) {
    this.rng = sim.rng.fork(name);
    const skewMs = sim.faults().skewMs;
    this.clockSkewMs = skewMs === 0 ? 0 : new SimRandom(`${this.rng.seed}/clock`).int(-skewMs, skewMs);
    this.client = new ApiClient(name, sim.network, sim.scheduler, sim.auth, (reply, what) =>
      sim.ledger.violation(`${name}: ${what} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`),
    );
  }

  get sessionName(): string {
    return `${this.name}:${this.session}`;
  }

  start(): void {
    const session = this.session;
    this.sim.scheduler.after(this.rng.int(0, 100), `${this.name} start`, () => {
      void this.run(() => session === this.session);
    });
  }

  /** The agent's life; `current()` turns false once this session has crashed. */
  protected abstract run(current: Current): Promise<void>;

  protected async call(current: Current, method: 'GET' | 'POST', path: string, options: CallOptions = {}): Promise<HttpReply> {
    const reply = await this.client.call(method, path, { ...options, alive: current });
    if (!current()) await never();
    return reply;
  }

  /**
   * Maybe crash here: a fault point between the steps of an operation. `draws` is where the
   * crash and restart are drawn from: an agent whose crash points came later passes a stream of
   * its own, so that its crash-free runs draw exactly what they drew before.
   */
  protected async crashPoint(current: Current, draws: SimRandom = this.rng): Promise<void> {
    if (!current()) await never();
    if (this.sim.phase !== 'safety' || !draws.chance(this.sim.faults().crash)) return;
    this.sim.ledger.crashedSessions.add(this.sessionName);
    this.sim.trace.add(this.sim.scheduler.now(), `${this.name} crashed`);
    this.session++;
    this.sim.scheduler.after(draws.int(100, 5_000), `${this.name} restart`, () => this.start());
    await never();
  }

  /** What the agent's own clock reads: what it puts in absolute times it sends, and judges by. */
  protected clockNow(): number {
    return this.sim.scheduler.now() + this.clockSkewMs;
  }

  protected async sleep(current: Current, ms: number): Promise<void> {
    await this.sim.scheduler.sleep(ms, this.name);
    if (!current()) await never();
  }
}
