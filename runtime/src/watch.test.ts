import { describe, expect, it } from 'vitest';
import { createClient } from './client';
import { BatonApiError } from './errors';
import { SteppingClock } from './testing/stepping-clock';
import type { TransportRequest } from './transport';
import { createWatch, eventIdAfter, type WatchEvent, type WatchPageReply, type WatchQuery } from './watch';

const event = (eventId: string, type = 'task.succeeded'): WatchEvent => ({
  eventId, type, aggregate: { type: 'task', id: 't' }, scopeId: null, occurredAt: '2026-01-01T00:00:00.000Z', data: {},
});
const apiError = (status: number, code: string): BatonApiError => new BatonApiError({ code: code as never, status, message: code, requestId: null });

/** A fake GET /watch: answers its script in order, recording every query; the script's end aborts the watch. */
function fakeWatch(script: (WatchPageReply | Error)[], stop: AbortController) {
  const queries: WatchQuery[] = [];
  const clock = new SteppingClock();
  const page = async (query: WatchQuery): Promise<WatchPageReply> => {
    queries.push(query);
    const next = script.shift();
    if (next === undefined) {
      stop.abort();
      throw new Error('aborted');
    }
    if (next instanceof Error) throw next;
    return next;
  };
  return { queries, clock, deps: { page, clock, random: { next: () => 0.5 }, policy: { baseDelayMs: 100, maxDelayMs: 1_000 } } };
}

async function collect(watch: AsyncIterable<WatchEvent>): Promise<string[]> {
  const ids: string[] = [];
  for await (const e of watch) ids.push(e.eventId);
  return ids;
}

describe('client.watch', () => {
  it('follows nextCursor, also past pages without a match, and reports each move', async () => {
    const stop = new AbortController();
    const { queries, deps } = fakeWatch([
      { items: [event('5'), event('7')], nextCursor: '7' },
      { items: [], nextCursor: '40' },
      { items: [event('41')], nextCursor: '90' },
    ], stop);
    const cursors: string[] = [];
    const watch = createWatch(deps, { types: ['task.*', 'message.acked'], scopeId: 's', signal: stop.signal, onCursor: (c) => cursors.push(c) });
    expect(await collect(watch)).toEqual(['5', '7', '41']);
    expect(queries.map((q) => q.cursor)).toEqual([undefined, '7', '40', '90']);
    expect(queries[0]).toMatchObject({ types: ['task.*', 'message.acked'], scopeId: 's', waitSeconds: 30 });
    expect(cursors).toEqual(['5', '7', '40', '41', '90']);
    expect(watch.cursor).toBe('90');
  });

  it('resumes from a saved cursor and drops events it already handed out', async () => {
    const stop = new AbortController();
    const { queries, deps } = fakeWatch([
      // A server may send again what came before the cursor (at least once): dropped by eventId.
      { items: [event('9'), event('10'), event('12')], nextCursor: '12' },
      { items: [event('12'), event('100')], nextCursor: '100' },
    ], stop);
    expect(await collect(createWatch(deps, { cursor: '10', signal: stop.signal }))).toEqual(['12', '100']);
    expect(queries[0]!.cursor).toBe('10');
  });

  it('retries transient failures with backoff from the same cursor, and throws a refusal', async () => {
    const stop = new AbortController();
    const { queries, clock, deps } = fakeWatch([
      { items: [event('3')], nextCursor: '3' },
      apiError(503, 'UNAVAILABLE'),
      apiError(0, 'NETWORK'),
      { items: [event('4')], nextCursor: '4' },
      apiError(400, 'VALIDATION_FAILED'),
    ], stop);
    const seen: string[] = [];
    await expect(async () => {
      for await (const e of createWatch(deps, { signal: stop.signal })) seen.push(e.eventId);
    }).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(seen).toEqual(['3', '4']);
    expect(queries.map((q) => q.cursor)).toEqual([undefined, '3', '3', '3', '4']);
    expect(clock.slept).toEqual([50, 100]);
  });

  it('stops when its signal aborts, during a backoff too', async () => {
    const stop = new AbortController();
    const { deps, clock } = fakeWatch([apiError(503, 'UNAVAILABLE')], new AbortController());
    clock.onSleep = () => stop.abort();
    expect(await collect(createWatch(deps, { signal: stop.signal }))).toEqual([]);
  });

  it('compares eventIds as numbers', () => {
    expect(eventIdAfter('10', '9')).toBe(true);
    expect(eventIdAfter('9', '10')).toBe(false);
    expect(eventIdAfter('12', '12')).toBe(false);
  });

  it('sends the filter as GET /watch query parameters through the client', async () => {
    const requests: TransportRequest[] = [];
    const stop = new AbortController();
    const client = createClient({
      baseUrl: 'http://baton.test', apiKey: 'bk_test', spaceId: '11111111-1111-4111-8111-111111111111', clock: new SteppingClock(), random: { next: () => 0 },
      transport: async (request) => {
        requests.push(request);
        if (requests.length > 1) stop.abort();
        return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ items: [event('8')], nextCursor: '8' }) };
      },
    });
    const ids: string[] = [];
    for await (const e of client.watch({ types: ['task.*', 'group.decided'], aggregate: 'group:g1', limit: 10, waitSeconds: 5, signal: stop.signal })) ids.push(e.eventId);
    expect(ids).toEqual(['8']);
    const url = new URL(requests[0]!.url);
    expect(url.pathname).toBe('/v1/spaces/11111111-1111-4111-8111-111111111111/watch');
    expect(Object.fromEntries(url.searchParams)).toEqual({ types: 'task.*,group.decided', aggregate: 'group:g1', limit: '10', waitSeconds: '5' });
    expect(new URL(requests[1]!.url).searchParams.get('cursor')).toBe('8');
  });
});
