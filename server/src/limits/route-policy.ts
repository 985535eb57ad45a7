/**
 * How each /v1 route meets the limits of docs/design/0016-limits-and-retry-after.md and docs/api.md "Limits", in one table so
 * the rate policy reads in one place. Routes not named here are ordinary: a GET is a read, any
 * other method is work. route-policy.test.ts holds every registered route to this table.
 */
export interface RoutePolicy {
  /** Recovery calls may use the whole request rate (the others stop at 80 %) and keep working after Free's monthly stop. */
  recovery: boolean;
  /** Reads are never operations and pass the monthly stop. */
  read: boolean;
  /** Where a batch names its items, counted as that many requests (docs/design/0015-batches.md). */
  itemsField?: 'tasks' | 'messages' | 'items';
  /** A route that takes leases (recv, admit, their batches, claims): CONCURRENCY_LIMITED applies; an empty long poll is given back. */
  claims?: boolean;
  /** Creates tasks, so the plan's active tasks apply (PLAN_LIMIT_REACHED). */
  createsTasks?: boolean;
  /** Creates runs, so the plan's active runs apply (PLAN_LIMIT_REACHED). */
  createsRuns?: boolean;
  /** Lease renewals: not operations, and given back to the rate when they succeed (docs/api.md "Limits"). */
  renews?: boolean;
}

const read: RoutePolicy = { recovery: false, read: true };
const work: RoutePolicy = { recovery: false, read: false };
const recovery: RoutePolicy = { recovery: true, read: false };

/** Keyed by method and path below /v1/spaces/:spaceId, as Fastify names the route. */
const policies: Record<string, RoutePolicy> = {
  'POST /messages/:id/renew': { ...recovery, renews: true },
  'POST /messages/:id/complete': recovery,
  'POST /messages/:id/nack': recovery,
  'POST /messages/renew-batch': { ...recovery, renews: true, itemsField: 'items' },
  'POST /messages/complete-batch': { ...recovery, itemsField: 'items' },
  'POST /messages/nack-batch': { ...recovery, itemsField: 'items' },
  'POST /tasks/:id/cancel': recovery,
  'POST /tasks/:id/detach': recovery,
  'POST /budgets/:id/void': recovery,
  'POST /barriers/:id/cancel': recovery,
  'POST /allowance-waiters/:id/cancel': recovery,
  'POST /runs/:scopeId/cancel': recovery,
  'POST /timers/:id/cancel': recovery,
  'POST /claims/:id/renew': { ...recovery, renews: true },
  'POST /claims/:id/release': recovery,
  'POST /claims': { ...work, claims: true },
  'POST /runs': { ...work, createsRuns: true },
  'POST /mailboxes/:id/recv': { ...work, claims: true },
  'POST /tasks/admit': { ...work, claims: true },
  'POST /mailboxes/:id/recv-batch': { ...work, claims: true },
  'POST /tasks/admit-batch': { ...work, claims: true },
  'POST /tasks': { ...work, createsTasks: true },
  'POST /tasks/submit-batch': { ...work, createsTasks: true, itemsField: 'tasks' },
  'POST /task-groups/:id/tasks': { ...work, createsTasks: true },
  'POST /mailboxes/:id/messages/send-batch': { ...work, itemsField: 'messages' },
};

export const spacePrefix = '/v1/spaces/:spaceId';

/** The policy of a route, from its method and Fastify route url (with or without the space prefix). */
export function policyOf(method: string, url: string): RoutePolicy {
  const path = url.startsWith(spacePrefix) ? url.slice(spacePrefix.length) : url;
  return policies[`${method} ${path}`] ?? (method === 'GET' || method === 'HEAD' ? read : work);
}

/** The routes the table names: the policy test checks each is a real route. */
export const namedRoutes = (): string[] => Object.keys(policies);
