import { Agent, type Current } from './agent';
import type { SeenEvent } from './watcher';

/** A watch filter as GET /watch takes it (docs/design/0013-events-and-watch.md): event types and prefixes, an aggregate. */
export interface WatchFilter {
  /** Comma-separated types; `prefix.*` matches every type under the prefix. */
  types?: string;
  /** `type` or `type:id`. */
  aggregate?: string;
}

/** What a follower's filter can be: each seed picks one, so runs cover several. */
const filters: readonly WatchFilter[] = [
  { types: 'task.*' },
  { types: 'message.claimed,message.acked,budget.*' },
  { types: 'allowance.*,barrier.*' },
  { aggregate: 'task' },
  { aggregate: 'budget', types: 'budget.settled,budget.voided' },
  { types: 'nothing.matches' },
];

/**
 * Follows the journal through GET /watch with a filter, long-polling, as a worker or a console
 * does, through the same faulty network. Like the cursor watcher it never crashes: the
 * invariant is about what a faithful follower sees (checks/watch.ts).
 */
export class WatchFollower extends Agent {
  readonly seen: SeenEvent[] = [];
  readonly filter: WatchFilter = filters[this.rng.int(0, filters.length - 1)]!;
  cursor: string | undefined;

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase !== 'done') {
      await this.readPage(current, this.rng.int(0, 2));
      await this.sleep(current, this.rng.int(10, 500));
    }
  }

  /** One watch; returns how many events it held. */
  async readPage(current: Current = () => true, waitSeconds = 0): Promise<number> {
    const query = new URLSearchParams({ limit: String(this.rng.int(1, 50)), waitSeconds: String(waitSeconds) });
    if (this.filter.types) query.set('types', this.filter.types);
    if (this.filter.aggregate) query.set('aggregate', this.filter.aggregate);
    if (this.cursor) query.set('cursor', this.cursor);
    const reply = await this.call(current, 'GET', `/watch?${query}`);
    if (reply.statusCode !== 200) return 0;
    for (const e of reply.body.items as SeenEvent[]) this.seen.push({ eventId: e.eventId, type: e.type });
    const advanced = reply.body.nextCursor !== this.cursor;
    this.cursor = reply.body.nextCursor;
    // A page of non-matching events advances the cursor without items: keep reading.
    return reply.body.items.length > 0 || advanced ? Math.max(1, reply.body.items.length) : 0;
  }
}
