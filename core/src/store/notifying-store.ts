import type { NewEvent } from '../events/model';
import { eventWatchTopics } from '../events/watch-topics';
import { topicOf, type Notifier } from '../notifier';
import type { Store, Tx } from './store';

/**
 * Sees the events of every committed transaction, after its commit (server metrics count lease
 * expiries and events by type from them): what already is journaled is counted without a
 * statement of its own. Called synchronously; it must be cheap and must not throw.
 */
export type CommitObserver = (events: readonly NewEvent[]) => void;

/**
 * A store that, once a transaction commits, notifies the topic of every aggregate it appended
 * an event for. Every state change appends an event, so every commit that changes something a
 * long poll waits on wakes it, without each operation having to remember to. An event that made
 * a delivery READY also wakes one poll on its ready topic (NewEvent.wakesOne): recv and admit
 * wait there, so a fleet of parked polls is woken one per delivery, not all per commit. Each
 * event also publishes the topics GET /watch parks on (events/watch-topics.ts).
 */
export class NotifyingStore implements Store {
  constructor(
    private readonly inner: Store,
    private readonly notifier: Notifier,
    private readonly observeCommit?: CommitObserver,
  ) {}

  get kind(): Store['kind'] {
    return this.inner.kind;
  }

  async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    const topics = new Set<string>();
    /** Topics to wake one poll on per event that names them (NewEvent.wakesOne), with their counts. */
    const counted = new Map<string, number>();
    /** The events appended, kept only for an observer. */
    const appended: NewEvent[] = [];
    const result = await this.inner.transaction((tx) => {
      // The inner store may run `work` again (a retried transaction): only the last run committed.
      topics.clear();
      counted.clear();
      appended.length = 0;
      return work({
        ...tx,
        events: {
          ...tx.events,
          append: async (spaceId, occurredAt, events) => {
            await tx.events.append(spaceId, occurredAt, events.map(({ wakesOne: _, ...stored }) => stored));
            if (this.observeCommit) appended.push(...events);
            for (const e of events) {
              topics.add(topicOf(e.aggregateType, e.aggregateId));
              // GET /watch parks on these: computed from the events in memory, no statement of their own.
              for (const topic of eventWatchTopics(spaceId, e)) topics.add(topic);
              if (e.wakesOne !== undefined) counted.set(e.wakesOne, (counted.get(e.wakesOne) ?? 0) + 1);
            }
          },
          listAfter: (spaceId, after, limit) => tx.events.listAfter(spaceId, after, limit),
        },
      });
    });
    for (const topic of topics) this.notifier.notify(topic);
    for (const [topic, count] of counted) this.notifier.notify(topic, count);
    if (this.observeCommit && appended.length > 0) this.observeCommit(appended);
    return result;
  }

  read<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.inner.read(work);
  }

  maintain(): Promise<void> {
    return this.inner.maintain();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
