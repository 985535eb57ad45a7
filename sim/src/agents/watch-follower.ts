import { SimRandom } from '../rng';
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

/** A follower persists its cursor every this many pages at most (each saves after 1 to this many). */
const maxPagesPerSave = 4;

/**
 * Follows the journal through GET /watch with a filter, long-polling, as a worker or a console
 * does, through the same faulty network. It persists its cursor every few pages; a crash (after
 * a page came back, before its events were handled) loses the rest, and the next session goes
 * on from the cursor it saved, seeing some events again. The invariant is about what it handled
 * across its sessions (checks/watch.ts): every matching event, in journal order once the
 * duplicates are removed by eventId, none missing.
 */
export class WatchFollower extends Agent {
  readonly seen: SeenEvent[] = [];
  readonly filter: WatchFilter = filters[this.rng.int(0, filters.length - 1)]!;
  cursor: string | undefined;
  /** Survives a crash: the cursor as last persisted. */
  private savedCursor: string | undefined;
  private pagesSinceSave = 0;
  /** Its own stream for crashes and saves, so that crash-free runs draw exactly what they drew before. */
  private readonly crashRng = new SimRandom(`${this.rng.seed}/crashes`);
  private pagesPerSave = this.crashRng.int(1, maxPagesPerSave);

  protected async run(current: Current): Promise<void> {
    this.cursor = this.savedCursor;
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
    await this.crashPoint(current, this.crashRng);
    for (const e of reply.body.items as SeenEvent[]) this.seen.push({ eventId: e.eventId, type: e.type });
    const advanced = reply.body.nextCursor !== this.cursor;
    this.cursor = reply.body.nextCursor;
    this.persistNowAndThen();
    // A page of non-matching events advances the cursor without items: keep reading.
    return reply.body.items.length > 0 || advanced ? Math.max(1, reply.body.items.length) : 0;
  }

  /** Saves the cursor once every few pages, after their events were handled: never ahead of what it handled. */
  private persistNowAndThen(): void {
    if (++this.pagesSinceSave < this.pagesPerSave) return;
    this.savedCursor = this.cursor;
    this.pagesSinceSave = 0;
    this.pagesPerSave = this.crashRng.int(1, maxPagesPerSave);
  }
}
