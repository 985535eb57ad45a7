import { Agent, type Current } from './agent';

export interface SeenEvent {
  eventId: string;
  type: string;
}

/**
 * Follows the journal by cursor, as a consumer of GET /events does, through the same faulty
 * network. It never crashes: the journal invariant is about what a faithful follower sees.
 */
export class Watcher extends Agent {
  readonly seen: SeenEvent[] = [];
  cursor: string | undefined;

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase !== 'done') {
      await this.readPage(current);
      await this.sleep(current, this.rng.int(50, 1_000));
    }
  }

  /** Reads one page; returns how many events it held. */
  async readPage(current: Current = () => true): Promise<number> {
    const limit = this.rng.int(1, 50);
    const reply = await this.call(current, 'GET', `/events?limit=${limit}${this.cursor ? `&cursor=${this.cursor}` : ''}`);
    if (reply.statusCode !== 200) return 0;
    for (const e of reply.body.items as SeenEvent[]) this.seen.push({ eventId: e.eventId, type: e.type });
    this.cursor = reply.body.nextCursor;
    return reply.body.items.length;
  }
}
