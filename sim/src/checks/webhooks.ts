import type { JournalEvent } from '@baton/core';
import type { ServerHost } from '../server-host';
import type { SimRandom } from '../rng';
import type { WebhookReceiver } from '../webhook-receiver';
import { firstSightings } from './watch';

/** What a run's destination subscribes to: each seed picks one, so runs cover several. */
const eventTypeChoices: readonly string[][] = [[], ['task.*'], ['budget.*', 'message.acked'], ['allowance.*', 'barrier.*', 'group.*']];

export interface SimDestination {
  id: string;
  eventTypes: readonly string[];
  /** The journal's last event when the destination was created: it is owed what comes after. */
  createdAfterEventId: string;
  /** True once the receiver holds every event the destination is owed. */
  caughtUp(journal: readonly JournalEvent[]): boolean;
}

/** The operator's set-up: one destination pointing at the simulated receiver. */
export async function setUpDestination(server: ServerHost, tenant: { spaceId: string; key: string }, receiver: WebhookReceiver, rng: SimRandom): Promise<SimDestination> {
  const eventTypes = eventTypeChoices[rng.int(0, eventTypeChoices.length - 1)]!;
  const createdAfterEventId = await journalEnd(server, tenant);
  const reply = await server.handle({
    method: 'POST',
    path: `/v1/spaces/${tenant.spaceId}/destinations`,
    headers: { authorization: `Bearer ${tenant.key}`, 'idempotency-key': 'setup-destination' },
    body: { url: 'https://receiver.sim/hooks', eventTypes },
  });
  if (!reply || reply.statusCode !== 201) throw new Error(`simulation set-up failed: ${JSON.stringify(reply)}`);
  receiver.secret = reply.body.signingSecret as string;
  const destination: SimDestination = {
    id: reply.body.id as string,
    eventTypes,
    createdAfterEventId,
    caughtUp: (journal) => owed(journal, destination).every((e) => receiver.received.includes(e.eventId)),
  };
  return destination;
}

/** The set-up's last journal event (nothing else writes during set-up), read through GET /events. */
async function journalEnd(server: ServerHost, tenant: { spaceId: string; key: string }): Promise<string> {
  let cursor = '0';
  for (;;) {
    const page = await server.handle({ method: 'GET', path: `/v1/spaces/${tenant.spaceId}/events?limit=500&cursor=${cursor}`, headers: { authorization: `Bearer ${tenant.key}` } });
    if (!page || page.statusCode !== 200) throw new Error(`simulation set-up failed: ${JSON.stringify(page)}`);
    if (page.body.items.length === 0) return cursor;
    cursor = page.body.nextCursor as string;
  }
}

/** The oracle of a destination's filter, apart from the server's: docs/design/0014-webhooks.md's rules, for what commits after it. */
function owed(journal: readonly JournalEvent[], d: Pick<SimDestination, 'eventTypes' | 'createdAfterEventId'>): JournalEvent[] {
  const matches = (type: string): boolean => d.eventTypes.length === 0 || d.eventTypes.some((p) => (p.endsWith('.*') ? type.startsWith(p.slice(0, -1)) : p === type));
  const after = journal.findIndex((e) => e.eventId === d.createdAfterEventId);
  return journal.slice(after + 1).filter((e) => matches(e.type));
}

/**
 * After the liveness phase: the receiver got every event its destination is owed, first
 * arrivals in journal order, nothing it is not owed (repeats are at-least-once, allowed).
 */
export function checkWebhookDeliveries(journal: readonly JournalEvent[], d: Pick<SimDestination, 'eventTypes' | 'createdAfterEventId'>, received: readonly string[]): string[] {
  const problems: string[] = [];
  const expected = owed(journal, d).map((e) => e.eventId);
  const expectedSet = new Set(expected);
  const first = firstSightings(received);
  const seen = new Set(first);
  const missing = expected.filter((id) => !seen.has(id));
  const label = `webhook destination (${JSON.stringify(d.eventTypes)})`;
  if (missing.length > 0) problems.push(`${label}: ${missing.length} owed events never delivered (first ${missing[0]})`);
  const extra = first.filter((id) => !expectedSet.has(id));
  if (extra.length > 0) problems.push(`${label}: delivered ${extra.length} events it does not subscribe to (first ${extra[0]})`);
  if (first.filter((id) => expectedSet.has(id)).join() !== expected.filter((id) => seen.has(id)).join()) problems.push(`${label}: events delivered out of journal order`);
  return problems;
}
