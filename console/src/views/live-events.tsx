import { useEffect, useState } from 'preact/hooks';
import { unwrap, type Api } from '../api/client';
import type { BatonEvent } from '../api/types';
import { useSignedIn } from '../console-context';
import { useSpaceId } from '../components/layout';
import { Needs, PageTitle, when } from '../components/ui';

/** How many events the page keeps; older ones scroll out (GET /events pages through the rest). */
const kept = 200;
const catchUpPage = 500;
const holdSeconds = 20;

interface WatchFilter {
  types: string;
  aggregate: string;
  scopeId: string;
}

/** What just happened: GET /watch as a long poll, newest first, with the API's own filters. */
export function LiveEvents() {
  return (
    <section>
      <PageTitle>Live events</PageTitle>
      <Needs permission="coordination_read">
        <Stream />
      </Needs>
    </section>
  );
}

function Stream() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  const [draft, setDraft] = useState<WatchFilter>({ types: '', aggregate: '', scopeId: '' });
  const [filter, setFilter] = useState<WatchFilter>(draft);
  const [events, setEvents] = useState<BatonEvent[]>([]);
  const [status, setStatus] = useState<{ live: boolean; at: Date | undefined; error: Error | undefined }>({ live: false, at: undefined, error: undefined });

  useEffect(() => {
    const stop = new AbortController();
    setEvents([]);
    void follow(api, spaceId, filter, stop.signal, {
      onEvents: (page) => setEvents((shown) => [...page.slice().reverse(), ...shown].slice(0, kept)),
      onStatus: (live, error) => setStatus({ live, at: new Date(), error }),
    });
    return () => stop.abort();
  }, [api, spaceId, filter.types, filter.aggregate, filter.scopeId]);

  const apply = (event: Event): void => {
    event.preventDefault();
    setFilter({ types: draft.types.trim(), aggregate: draft.aggregate.trim(), scopeId: draft.scopeId.trim() });
  };
  return (
    <>
      <form class="filters" onSubmit={apply} aria-label="Event filters">
        <label>
          Types
          <input value={draft.types} placeholder="task.*,message.acked" onInput={(e) => setDraft({ ...draft, types: e.currentTarget.value })} />
        </label>
        <label>
          Aggregate
          <input value={draft.aggregate} placeholder="mailbox or mailbox:<id>" onInput={(e) => setDraft({ ...draft, aggregate: e.currentTarget.value })} />
        </label>
        <label>
          Scope id
          <input value={draft.scopeId} placeholder="UUID" onInput={(e) => setDraft({ ...draft, scopeId: e.currentTarget.value })} />
        </label>
        <button type="submit">Watch</button>
      </form>
      {status.error ? (
        <p class="live live-error" role="status">
          Not live: {status.error.message} (retrying)
        </p>
      ) : (
        <p class="live" role="status" data-live={status.live ? 'yes' : 'no'}>
          <span class="live-dot" aria-hidden="true" /> {status.live ? 'Live: listening on GET /watch' : 'Catching up…'}
          {status.at ? `; last answer ${status.at.toLocaleTimeString()}` : ''}
        </p>
      )}
      <table aria-live="polite">
        <caption>The newest {kept} events matching, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">Type</th>
            <th scope="col">Aggregate</th>
            <th scope="col">At</th>
          </tr>
        </thead>
        <tbody>
          {events.map((e) => (
            <tr key={e.eventId} data-event-type={e.type}>
              <th scope="row">{e.eventId}</th>
              <td>{e.type}</td>
              <td>
                {e.aggregate.type} <code class="id">{e.aggregate.id}</code>
              </td>
              <td>{when(e.occurredAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

interface Listener {
  onEvents(events: BatonEvent[]): void;
  onStatus(live: boolean, error: Error | undefined): void;
}

/**
 * Reads the journal to its end at once (waitSeconds 0), then holds long polls, each from the
 * last nextCursor: no committed event is skipped. A failed call is retried after a pause.
 */
async function follow(api: Api, spaceId: string, filter: WatchFilter, signal: AbortSignal, listener: Listener): Promise<void> {
  let cursor: string | undefined;
  let caughtUp = false;
  while (!signal.aborted) {
    try {
      const query = {
        limit: caughtUp ? 100 : catchUpPage,
        waitSeconds: caughtUp ? holdSeconds : 0,
        ...(cursor ? { cursor } : {}),
        ...(filter.types ? { types: filter.types } : {}),
        ...(filter.aggregate ? { aggregate: filter.aggregate } : {}),
        ...(filter.scopeId ? { scopeId: filter.scopeId } : {}),
      };
      const page = await api.GET('/v1/spaces/{spaceId}/watch', { params: { path: { spaceId }, query }, signal }).then(unwrap);
      if (signal.aborted) return;
      cursor = page.nextCursor;
      if (page.items.length > 0) listener.onEvents(page.items);
      // An empty page at waitSeconds 0 reached the journal's end (a filtered page may be short
      // with more to come): from now on, wait for news.
      if (!caughtUp && page.items.length === 0) caughtUp = true;
      listener.onStatus(caughtUp, undefined);
    } catch (caught) {
      if (signal.aborted) return;
      listener.onStatus(false, caught instanceof Error ? caught : new Error(String(caught)));
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }
}
