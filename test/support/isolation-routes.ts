import type { Permission } from '@baton/core';
import type { FastifyInstance } from 'fastify';

/**
 * The route side of the tenant isolation matrix (test/http/isolation-matrix.test.ts): which
 * /v1/spaces routes the app has, read from Fastify's own route tree so a route added tomorrow is
 * in the matrix tomorrow, and what docs/api.md says each one needs.
 */

export const spacePrefix = '/v1/spaces/:spaceId';

export const allPermissions: readonly Permission[] = ['coordination_read', 'coordination_write', 'resource_config', 'usage_read'];

export interface SpaceRoute {
  method: string;
  /** Below the space prefix, as Fastify names it: `/budgets/:id/reserve`. */
  path: string;
  /** `POST /budgets/:id/reserve`: the key of the tables below. */
  key: string;
}

/**
 * Every registered route below /v1/spaces/:spaceId, from `printRoutes` (hidden routes included,
 * unlike the OpenAPI document). HEAD is Fastify's twin of each GET and is left out.
 */
export function spaceRoutes(app: FastifyInstance): SpaceRoute[] {
  return parseRouteTree(app.printRoutes({ commonPrefix: false }))
    .filter((r) => r.url.startsWith(`${spacePrefix}/`) && r.method !== 'HEAD')
    .map((r) => ({ method: r.method, path: r.url.slice(spacePrefix.length), key: `${r.method} ${r.url.slice(spacePrefix.length)}` }));
}

/**
 * printRoutes draws a tree, four columns per level (`│   ├── /:id (GET, HEAD)`); a node's url is
 * its ancestors' segments joined. Lines without methods are inner nodes with no handler.
 */
export function parseRouteTree(tree: string): Array<{ method: string; url: string }> {
  const stack: string[] = [];
  const routes: Array<{ method: string; url: string }> = [];
  for (const line of tree.split('\n')) {
    const match = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/u.exec(line);
    if (!match) continue;
    stack.length = match[1]!.length / 4;
    stack.push(match[2]!);
    for (const method of match[3]?.split(', ') ?? []) routes.push({ method, url: stack.join('') });
  }
  return routes;
}

/** Every kind of resource a /v1 path names by id. */
export const kinds = ['budget', 'reservation', 'barrier', 'claim', 'timer', 'task', 'group', 'pool', 'workLimit', 'allowance', 'waiter', 'mailbox', 'message', 'destination', 'run'] as const;
export type Kind = (typeof kinds)[number];

/** The collection segment in front of a path parameter says what the parameter names. */
const collections: Record<string, Kind> = {
  budgets: 'budget',
  reservations: 'reservation',
  barriers: 'barrier',
  claims: 'claim',
  timers: 'timer',
  tasks: 'task',
  'task-groups': 'group',
  pools: 'pool',
  'work-limits': 'workLimit',
  allowances: 'allowance',
  'allowance-waiters': 'waiter',
  mailboxes: 'mailbox',
  messages: 'message',
  destinations: 'destination',
  runs: 'run',
};

export interface PathSlot {
  param: string;
  /** Undefined when the matrix does not know the collection: the test reports the route uncovered. */
  kind: Kind | undefined;
  collection: string;
}

/** The id parameters of a route path, each with the kind of resource it names. */
export function pathSlots(path: string): PathSlot[] {
  const segments = path.split('/');
  return segments.flatMap((segment, i) => {
    if (!segment.startsWith(':')) return [];
    const collection = segments[i - 1] ?? '';
    return [{ param: segment.slice(1), kind: collections[collection], collection }];
  });
}

/** What a route needs from its key, as the route tables of docs/api.md and its "Authentication and permissions" say. */
export interface ExpectedAccess {
  /** Any one admits the call; a refusal names the first (auth.ts, docs/api.md "Authentication and permissions"). */
  anyOf: Permission[];
  /** Repeat creates (docs/api.md "Authentication and permissions"): a key without resource_config may repeat an identical create. */
  repeatCreate: boolean;
}

/** Creates of named resources, where a repeat of an identical create is let through (docs/api.md "Authentication and permissions") (barriers have no name). */
const namedCreates = new Set(['POST /budgets', 'POST /mailboxes', 'POST /pools', 'POST /work-limits', 'POST /allowances']);
/** Setting up (resource_config in docs/api.md) beyond the named creates. */
const configuration = new Set(['POST /barriers', 'POST /destinations', 'DELETE /destinations/:id', 'POST /destinations/:id/resume', 'PUT /limits']);
/** resource_config is also accepted for allowance consume, wait and cooldown and budget reserve, settle and void (docs/api.md "Authentication and permissions"). */
const spendOrConfigure = new Set(['POST /budgets/:id/reserve', 'POST /budgets/:id/settle', 'POST /budgets/:id/void', 'POST /allowances/:id/consume', 'POST /allowances/:id/wait', 'POST /allowances/:id/cooldown']);
/** usage_read: usage, space limits, diagnostics (census, backlog, waits, run and task views), webhook delivery history. */
const usageReads = /^GET \/(usage|limits|deliveries|diagnostics\/.*|ops\/.*)$/;

export function expectedAccess(route: SpaceRoute): ExpectedAccess {
  const { key, method } = route;
  if (namedCreates.has(key)) return { anyOf: ['resource_config'], repeatCreate: true };
  if (configuration.has(key)) return { anyOf: ['resource_config'], repeatCreate: false };
  if (spendOrConfigure.has(key)) return { anyOf: ['coordination_write', 'resource_config'], repeatCreate: false };
  if (usageReads.test(key)) return { anyOf: ['usage_read'], repeatCreate: false };
  // Destinations are read by the workers that use them and by whoever set them up (docs/api.md, "Webhooks").
  if (method === 'GET' && key.startsWith('GET /destinations')) return { anyOf: ['coordination_read', 'resource_config'], repeatCreate: false };
  if (method === 'GET') return { anyOf: ['coordination_read'], repeatCreate: false };
  return { anyOf: ['coordination_write'], repeatCreate: false };
}
