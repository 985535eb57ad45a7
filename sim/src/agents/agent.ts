import { ApiClient, never, type CallOptions } from '../client';
import type { SimContext } from '../context';
import type { SimRandom } from '../rng';
import type { HttpReply } from '../server-host';

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

  constructor(
    readonly name: string,
    protected readonly sim: SimContext,
  ) {
    this.rng = sim.rng.fork(name);
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

  /** Maybe crash here: a fault point between the steps of an operation. */
  protected async crashPoint(current: Current): Promise<void> {
    if (!current()) await never();
    if (this.sim.phase !== 'safety' || !this.rng.chance(this.sim.faults().crash)) return;
    this.sim.ledger.crashedSessions.add(this.sessionName);
    this.sim.trace.add(this.sim.scheduler.now(), `${this.name} crashed`);
    this.session++;
    this.sim.scheduler.after(this.rng.int(100, 5_000), `${this.name} restart`, () => this.start());
    await never();
  }

  protected async sleep(current: Current, ms: number): Promise<void> {
    await this.sim.scheduler.sleep(ms, this.name);
    if (!current()) await never();
  }
}
