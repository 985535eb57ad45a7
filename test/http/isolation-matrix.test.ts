import { randomUUID } from 'node:crypto';
import { MemoryStore, type Permission } from '@baton/core';
import { createLogger } from '@baton-coordination/server/host/logger';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodies, bodySlots, caller, createTenant, populate, SecretBook, type BodyContext, type Call, type Fixture, type Tenant } from '../support/isolation-fixture';
import { allPermissions, expectedAccess, kinds, pathSlots, spaceRoutes, type SpaceRoute } from '../support/isolation-routes';
import { adminToken, startTestServer, type Reply, type TestServer } from '../support/server';
import { WebhookReceiver } from '../support/webhook-receiver';

/**
 * The tenant isolation matrix (docs/reliability.md, "Tenant isolation"): every /v1 route the app
 * registers, called across two organizations A and B, each holding one of every resource kind.
 * A must never reach B: not by B's ids (404, exactly as for an id that never existed), not on B's
 * space (404), not with a key limited to another space (403), not without the permission docs/api.md
 * names (403 naming it). Afterwards B's journal and views are as they were, and the log, written
 * at trace level, holds none of the secrets the scenario used.
 *
 * The tests run in file order on one server: the matrix first, then the check that B is unchanged,
 * then the webhook check (which changes B), then the log scan over everything before it.
 */

const secretKey = Buffer.alloc(32, 7);
/** Webhooks go to a receiver on 127.0.0.1 (the server allows private addresses for it). */
const receiver = new WebhookReceiver();

/** Every line the server logs, at its most verbose. */
const logChunks: string[] = [];
const logger = createLogger({ level: 'trace', format: 'json', destination: { write: (chunk: string) => void logChunks.push(chunk) } });

/** A failed cell, said so a reader can replay it. */
type Failure = string;

interface World {
  server: TestServer;
  call: Call;
  routes: SpaceRoute[];
  /** Route keys whose OpenAPI operation has a request body. */
  withBody: Set<string>;
  /** The query parameters of each route, from the OpenAPI document. */
  queryParams: Map<string, string[]>;
  a: Tenant;
  b: Tenant;
  fa: Fixture;
  /** A's second space, with a fixture of its own: spaces of one organization are walls too. */
  fa2: Fixture;
  fb: Fixture;
  /** Ids, names and tokens that never existed anywhere: the answer B's must be indistinguishable from. */
  ghost: Fixture;
  book: SecretBook;
}

let world: World;
const cells: Record<string, number> = {};
let bBefore: Snapshot;
/** Every 5xx any call of the matrix got: none is the only right number. */
const serverErrors: Failure[] = [];

describe('tenant isolation matrix over every /v1 route', () => {
  beforeAll(async () => {
    const book = new SecretBook();
    book.add(adminToken, secretKey.toString('base64'));
    const server = await startTestServer(new MemoryStore(), { logger, webhooks: { secretKey, allowPrivate: true, timeoutMs: 2_000 } });
    book.add(server.key);
    const plain = caller(server);
    const call: Call = async (method, spaceId, path, options) => {
      const reply = await plain(method, spaceId, path, options);
      if (reply.statusCode >= 500) serverErrors.push(`${method} ${path}: ${brief(reply)}`);
      return reply;
    };
    const b = await createTenant(server, 'beta', 1, book);
    // A1 and A2 hold fixtures; A3 stays empty for the natural-key checks.
    const a = await createTenant(server, 'alpha', 3, book);
    // B first: A's fixture then reuses B's Idempotency-Keys, claim key and timer key.
    const fb = await populate(call, b.key, b.spaceIds[0]!, 'b', book);
    const fa = await populate(call, a.key, a.spaceIds[0]!, 'a', book);
    const fa2 = await populate(call, a.key, a.spaceIds[1]!, 'a2', book);
    const doc = (await server.inject('GET', '/v1/openapi.json', {})).body as OpenApi;
    world = { server, call, routes: spaceRoutes(server.baton.app), ...readDocument(doc), a, b, fa, fa2, fb, ghost: ghostFixture(), book };
    bBefore = await snapshotOfB();
  });

  afterAll(async () => {
    const total = Object.values(cells).reduce((sum, n) => sum + n, 0);
    console.info(`isolation matrix: ${world?.routes.length} routes, ${total} cells ${JSON.stringify(cells)}`);
    await world?.server.close();
    await receiver.stop();
  });

  it('covers every registered /v1 route: each id parameter names a kind the fixture makes, each body has a builder', () => {
    const { routes, withBody } = world;
    const problems: Failure[] = [];
    for (const route of routes) {
      for (const slot of pathSlots(route.path)) if (!slot.kind) problems.push(`${route.key}: :${slot.param} follows /${slot.collection}, a collection the matrix cannot make (add it to isolation-routes.ts and the fixture)`);
      if (withBody.has(route.key) && !bodies[route.key]) problems.push(`${route.key}: takes a body the matrix cannot build (add it to bodies in isolation-fixture.ts)`);
    }
    for (const key of Object.keys(bodies)) if (!routes.some((r) => r.key === key)) problems.push(`${key}: a body for a route the app does not have`);
    expect(problems).toEqual([]);
    // The tree parse found the routes at all (a change in printRoutes' drawing would find none).
    expect(routes.length).toBeGreaterThan(70);
    expect(new Set(kinds).size).toBe(Object.keys(world.fa.ids).length);
  });

  /** The two walls: another organization's space, and another space of the caller's own organization. */
  const walls = [
    { name: "B's resources (another organization) in A1", caller: () => world.fa, owner: () => world.fb },
    { name: "A1's resources (same organization, another space) in A2", caller: () => world.fa2, owner: () => world.fa },
  ];

  for (const wall of walls) {
    it(`answers a key naming ${wall.name} (path or body) with 404 NOT_FOUND, exactly as for ids that never existed`, async () => {
      const { routes, a, ghost } = world;
      const [own, other] = [wall.caller(), wall.owner()];
      const failures: Failure[] = [];
      for (const route of routes) {
        for (const foreign of variants(slotsOf(route))) {
          count('foreign ids');
          const asOther = await callWith(route, a.key, own.spaceId, foreign, other, own);
          const asGhost = await callWith(route, a.key, own.spaceId, foreign, ghost, own);
          const itemsOnly = bodies[route.key]?.itemReplies === true && [...foreign].every((s) => !pathSlots(route.path).some((p) => p.param === s));
          const wrong = itemsOnly ? notFoundItems(asOther) : notFound(asOther);
          const label = `${route.key} with foreign ${[...foreign].join('+')}`;
          if (wrong) failures.push(`${label}: ${wrong}`);
          else if (!sameReply(asOther, asGhost, other)) failures.push(`${label}: answers differently from unknown ids (${brief(asOther)} vs ${brief(asGhost)})`);
        }
      }
      expect(failures).toEqual([]);
    });

    it(`shows nothing of ${wall.name.split(' in ')[0]} in any read of the caller's space: lists, views, events, diagnostics, usage`, async () => {
      const { routes, a } = world;
      const [own, other] = [wall.caller(), wall.owner()];
      const failures: Failure[] = [];
      for (const route of routes.filter((r) => r.method === 'GET')) {
        count('reads');
        const reply = await callWith(route, a.key, own.spaceId, new Set(), own, own);
        const text = JSON.stringify(reply.body);
        if (reply.statusCode !== 200) failures.push(`${route.key}: ${brief(reply)}`);
        for (const value of valuesOf(other)) if (text.includes(value)) failures.push(`${route.key} shows ${value}`);
      }
      expect(failures).toEqual([]);
    });
  }

  it("answers A's key on B's space with 404 NOT_FOUND on every route, as for a space that never existed", async () => {
    const { routes, a, fb, ghost } = world;
    const failures: Failure[] = [];
    for (const route of routes) {
      count('foreign space');
      const all = new Set(slotsOf(route));
      const onB = await callWith(route, a.key, fb.spaceId, all, fb);
      const onNothing = await callWith(route, a.key, randomUUID(), all, ghost);
      const wrong = notFound(onB);
      if (wrong) failures.push(`${route.key} on B's space: ${wrong}`);
      else if (!sameReply(onB, onNothing)) failures.push(`${route.key} on B's space: answers differently from an unknown space (${brief(onB)} vs ${brief(onNothing)})`);
    }
    expect(failures).toEqual([]);
  });

  it('answers a key limited to space A1 with 403 FORBIDDEN on A2 on every route, and lets it read in A1', async () => {
    const { routes, a, fa } = world;
    const limited = await a.keyWith(allPermissions, [a.spaceIds[0]!]);
    const failures: Failure[] = [];
    for (const route of routes) {
      count('space-limited key');
      const reply = await callWith(route, limited, a.spaceIds[1]!, new Set(), fa);
      const wrong = forbidden(reply, 'credential is not allowed in this space');
      if (wrong) failures.push(`${route.key} on A2: ${wrong}`);
      if (route.method !== 'GET') continue;
      count('space-limited key');
      const home = await callWith(route, limited, fa.spaceId, new Set(), fa);
      if (home.statusCode !== 200) failures.push(`${route.key} on A1 (allowed): ${brief(home)}`);
    }
    expect(failures).toEqual([]);
  });

  it('answers a key without the permission a route needs with 403 FORBIDDEN naming it; one of several accepted permissions is enough', async () => {
    const { routes, a, fa, ghost } = world;
    const failures: Failure[] = [];
    const without = (missing: readonly Permission[]) => a.keyWith(allPermissions.filter((p) => !missing.includes(p)));
    for (const route of routes) {
      const { anyOf, repeatCreate } = expectedAccess(route);
      for (const permission of anyOf) {
        count('missing permission');
        const key = await without([permission]);
        if (anyOf.length > 1) {
          // Another accepted permission admits the call; unknown ids keep it from changing anything.
          const reply = await callWith(route, key, fa.spaceId, new Set(slotsOf(route)), ghost);
          if (reply.statusCode === 401 || reply.statusCode === 403) failures.push(`${route.key} without ${permission} (accepted: ${anyOf.join(' or ')}): ${brief(reply)}`);
          continue;
        }
        // The one permission missing: auth refuses (repeat creates: the handler does, for a new name).
        const reply = await callWith(route, key, fa.spaceId, new Set(), fa);
        const wrong = forbidden(reply, `credential lacks ${permission}`);
        if (wrong) failures.push(`${route.key} without ${permission}${repeatCreate ? ' (new resource)' : ''}: ${wrong}`);
      }
      if (anyOf.length > 1) {
        count('missing permission');
        const reply = await callWith(route, await without(anyOf), fa.spaceId, new Set(), fa);
        const wrong = forbidden(reply, `credential lacks ${anyOf[0]}`);
        if (wrong) failures.push(`${route.key} without ${anyOf.join(' and ')}: ${wrong}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers no key and a revoked key with 401 UNAUTHENTICATED on every route', async () => {
    const { routes, a, fa } = world;
    const revoked = await a.revokedKey();
    const failures: Failure[] = [];
    for (const route of routes) {
      for (const [label, key] of [['no key', null], ['revoked key', revoked]] as const) {
        count('unauthenticated');
        const reply = await callWith(route, key, fa.spaceId, new Set(), fa);
        if (reply.statusCode !== 401 || reply.body?.error?.code !== 'UNAUTHENTICATED') failures.push(`${route.key} with ${label}: ${brief(reply)}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it("answers A's reads filtered or paged by B's scopeIds, keys, ids and cursors with A's own rows only", async () => {
    const { routes, a, fa, queryParams, call } = world;
    const failures: Failure[] = [];
    for (const route of routes.filter((r) => r.method === 'GET')) {
      const params = queryParams.get(route.key) ?? [];
      for (const name of params.filter((p) => !inertQuery.has(p) && !bQueryValues[p])) failures.push(`${route.key}: query ${name} may name B's things; teach bQueryValues about it`);
      const query = new URLSearchParams();
      for (const name of params.filter((p) => bQueryValues[p])) {
        const value = await bQueryValues[name]!(route);
        if (value !== undefined) query.set(name, value);
      }
      if ([...query].length === 0) continue;
      count('filters and cursors');
      const reply = await call('GET', fa.spaceId, `${pathFor(route, () => fa)}?${query}`, { key: a.key });
      if (reply.statusCode !== 200) failures.push(`${route.key}?${query}: ${brief(reply)}`);
      const text = JSON.stringify(reply.body);
      for (const value of valuesOf(world.fb)) if (text.includes(value)) failures.push(`${route.key}?${query} shows B's ${value}`);
    }
    expect(failures).toEqual([]);
    expect(cells['filters and cursors']).toBeGreaterThan(5);
  });

  it('answers HEAD as its GET in every refusal: no key, B\'s space, B\'s ids, a space-limited key, a missing permission', async () => {
    const { routes, a, fa, fb } = world;
    const limited = await a.keyWith(allPermissions, [a.spaceIds[0]!]);
    const failures: Failure[] = [];
    for (const route of routes.filter((r) => r.method === 'GET')) {
      const head: SpaceRoute = { ...route, method: 'HEAD', key: `HEAD ${route.path}` };
      const lacking = await a.keyWith(allPermissions.filter((p) => !expectedAccess(route).anyOf.includes(p)));
      const all = new Set(slotsOf(route));
      const scenarios: Array<[string, string | null, string, Set<string>, Fixture]> = [
        ['no key', null, fa.spaceId, new Set(), fa],
        ["on B's space", a.key, fb.spaceId, all, fb],
        ["with B's ids", a.key, fa.spaceId, all, fb],
        ['with a key limited to A1, on A2', limited, a.spaceIds[1]!, new Set(), fa],
        ['without its permission', lacking, fa.spaceId, new Set(), fa],
      ];
      for (const [label, key, spaceId, foreign, other] of scenarios) {
        if (label === "with B's ids" && all.size === 0) continue;
        count('HEAD twins');
        const [got, headed] = [await callWith(route, key, spaceId, foreign, other), await callWith(head, key, spaceId, foreign, other)];
        if (headed.statusCode !== got.statusCode || ![401, 403, 404].includes(headed.statusCode)) failures.push(`${head.key} ${label}: HEAD ${headed.statusCode}, GET ${brief(got)}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it("keeps names, claim and timer keys, scopeIds and Idempotency-Keys per space: A repeating B's creates makes its own", async () => {
    const { call, a, fa, fb } = world;
    const a3 = a.spaceIds[2]!;
    // The fixtures already did it once: A's reused B's Idempotency-Keys, claim key and timer key and got 201s of its own.
    expect(Object.values(fa.ids).filter((id) => fb.allIds.includes(id))).toEqual([]);
    expect(Object.values(world.fa2.ids).filter((id) => fa.allIds.includes(id))).toEqual([]);
    const mailbox = (await call('POST', a3, '/mailboxes', { key: a.key, body: { name: 'a3-jobs' } })).body;
    const failures: Failure[] = [];
    for (const [routeKey, created] of Object.entries(fb.creates)) {
      count('natural keys');
      // B's exact body, its mailbox swapped for one of A3's (B's own would rightly be 404).
      const body = JSON.parse(JSON.stringify(created).replaceAll(fb.ids.mailbox, mailbox.id));
      const reply = await call('POST', a3, routeKey.slice('POST '.length), { key: a.key, body });
      const id = reply.body?.id ?? reply.body?.taskId ?? reply.body?.groupId;
      if (reply.statusCode !== 201 || reply.headers['idempotent-replayed']) failures.push(`${routeKey} with B's body in A3: ${brief(reply)}`);
      else if (id !== undefined && fb.allIds.includes(id)) failures.push(`${routeKey} with B's body in A3 answered B's ${id}`);
    }
    // Rule 7 across tenants: a key without resource_config may repeat A's own create, never B's.
    const noConfig = await a.keyWith(allPermissions.filter((p) => p !== 'resource_config'));
    for (const routeKey of ['POST /budgets', 'POST /mailboxes', 'POST /pools', 'POST /work-limits', 'POST /allowances']) {
      count('natural keys');
      const path = routeKey.slice('POST '.length);
      const repeatB = await call('POST', fa.spaceId, path, { key: noConfig, body: fb.creates[routeKey] });
      const wrong = forbidden(repeatB, 'credential lacks resource_config');
      if (wrong) failures.push(`${routeKey} repeating B's create without resource_config: ${wrong}`);
      const repeatA = await call('POST', fa.spaceId, path, { key: noConfig, body: fa.creates[routeKey] });
      if (repeatA.statusCode !== 200 || !Object.values(fa.ids).includes(repeatA.body?.id)) failures.push(`${routeKey} repeating A's own create without resource_config: ${brief(repeatA)}`);
    }
    expect(failures).toEqual([]);
  });

  it("leaves B's journal, every view of B and B's usage as they were before the matrix ran", async () => {
    const after = await snapshotOfB();
    expect(after.events.length).toBeGreaterThan(20);
    expect(after.events).toEqual(bBefore.events);
    expect(after.usage).toEqual(bBefore.usage);
    expect(Object.keys(after.views).length).toBeGreaterThan(25);
    expect(after.views).toEqual(bBefore.views);
  });

  it("delivers B's webhooks only B's events, signed with B's secret alone, and A's only A's", async () => {
    const { call, server, a, b, fa, fa2, fb, book } = world;
    // The fixtures' destinations name a host outside this machine: gone before anything dispatches.
    for (const [key, fixture] of [[a.key, fa], [a.key, fa2], [b.key, fb]] as const) {
      expect((await call('DELETE', fixture.spaceId, `/destinations/${fixture.ids.destination}`, { key })).statusCode).toBe(200);
    }
    await receiver.start();
    const hooks: Record<'a' | 'b', { path: string; secret: string; own: Fixture; other: Fixture }> = {} as never;
    for (const [name, key, own, other] of [['a', a.key, fa, fb], ['b', b.key, fb, fa]] as const) {
      const made = await call('POST', own.spaceId, '/destinations', { key, body: { url: receiver.url(`/${name}`) } });
      expect(made.statusCode).toBe(201);
      book.add(made.body.signingSecret);
      hooks[name] = { path: `/${name}`, secret: made.body.signingSecret, own, other };
    }
    // One event in each tenant, after both destinations exist.
    for (const [key, own] of [[a.key, fa], [b.key, fb]] as const) {
      expect((await call('POST', own.spaceId, '/pools', { key, body: { name: `hooked-${own.names.pool}`, capacity: 1 } })).statusCode).toBe(201);
    }
    for (let i = 0; i < 100 && (receiver.at('/a').length === 0 || receiver.at('/b').length === 0); i++) {
      await server.baton.deps.runDueWork();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    for (const { path, secret, own, other } of Object.values(hooks)) {
      const got = receiver.at(path);
      expect(got.map((r) => JSON.parse(r.body).data.name)).toEqual([`hooked-${own.names.pool}`]);
      for (const r of got) {
        for (const value of valuesOf(other)) expect(r.body).not.toContain(value);
        const timestamp = new Date(Number(r.headers['webhook-timestamp']) * 1000);
        expect(r.headers['webhook-signature']).toBe(new Webhook(secret).sign(r.headers['webhook-id']!, timestamp, r.body));
        expect(r.headers['webhook-signature']).not.toBe(new Webhook(hooks[path === '/a' ? 'b' : 'a'].secret).sign(r.headers['webhook-id']!, timestamp, r.body));
      }
    }
    // Each tenant's delivery audit lists its own attempt only.
    for (const [key, own, other] of [[a.key, fa, fb], [b.key, fb, fa]] as const) {
      const audit = await call('GET', own.spaceId, '/deliveries', { key });
      expect(audit.body.items).toHaveLength(1);
      for (const value of valuesOf(other)) expect(JSON.stringify(audit.body)).not.toContain(value);
    }
  });

  it('refuses credentials and tokens sent the wrong way with 4xx (and the log scan below covers these too)', async () => {
    const { server, fa, book } = world;
    const wrongAdmin = `wrong-admin-${randomUUID()}`;
    const unknownKey = `bk_${'0'.repeat(32)}_${randomUUID().replaceAll('-', '')}`;
    book.add(wrongAdmin, unknownKey);
    const space = `/v1/spaces/${fa.spaceId}`;
    const replies = [
      await server.inject('POST', '/admin/v1/orgs', { authorization: `Bearer ${wrongAdmin}` }, { name: 'x', plan: 'FREE' }),
      await server.inject('GET', `${space}/budgets`, { authorization: `Bearer ${unknownKey}` }),
      await server.inject('GET', `${space}/budgets`, { authorization: world.a.key }),
      await server.inject('GET', `${space}/budgets`, { 'x-api-key': world.a.key }),
      // Tokens where they do not belong: a query string (logs keep the path only), a body that does not parse.
      // (A token written into the path itself is logged with the path: docs/reliability.md, "Tenant isolation".)
      await server.inject('GET', `${space}/nowhere?token=${fa.tokens.message}`, { authorization: `Bearer ${world.a.key}` }),
      await server.baton.app
        .inject({ method: 'POST', url: `${space}/messages/${fa.ids.message}/renew`, headers: { authorization: `Bearer ${world.a.key}`, 'content-type': 'application/json' }, payload: `{"token":"${fa.tokens.message}",` })
        .then((res) => ({ statusCode: res.statusCode, headers: res.headers, body: JSON.parse(res.body) })),
    ];
    expect(replies.map((r) => r.statusCode)).toEqual([401, 401, 401, 401, 404, 400]);
    // The unparsable body is refused without repeating the token back.
    expect(JSON.stringify(replies.at(-1)!.body)).not.toContain(fa.tokens.message);
  });

  it('answered no cell of the matrix with a 5xx', () => {
    expect(serverErrors).toEqual([]);
  });

  it('never writes a key secret, the admin token, a lease or claim token, a signing secret or a Bearer header to the trace-level log', () => {
    const text = logChunks.join('');
    // The scan is not vacuous: the log is at trace level and holds every request's line.
    expect(logChunks.length).toBeGreaterThan(100);
    expect(world.book.values.size).toBeGreaterThan(15);
    const leaked = [...world.book.values].filter((secret) => text.includes(secret));
    expect(leaked).toEqual([]);
    // A credential-shaped value after Bearer, whatever it is (the refusals' own texts say "Bearer <API key>").
    expect(text).not.toMatch(/Bearer\s+[\w.~+/-]{16,}/i);
    expect(text).not.toContain('whsec_');
  });
});

/** What would betray a fixture's tenant in a reply to another: its ids, names, scope and space (and B's organization). */
function valuesOf(fixture: Fixture): string[] {
  const orgId = fixture === world.fb ? [world.b.orgId] : [];
  return [...fixture.allIds, ...Object.values(fixture.ids), ...Object.values(fixture.names), fixture.spaceId, ...orgId];
}

function count(check: string): void {
  cells[check] = (cells[check] ?? 0) + 1;
}

interface OpenApi {
  paths: Record<string, Record<string, { requestBody?: unknown; parameters?: Array<{ in: string; name: string }> }>>;
}

/** Per route key (`POST /tasks`): whether its OpenAPI operation takes a body, and its query parameters. */
function readDocument(doc: OpenApi): { withBody: Set<string>; queryParams: Map<string, string[]> } {
  const prefix = '/v1/spaces/{spaceId}';
  const withBody = new Set<string>();
  const queryParams = new Map<string, string[]>();
  for (const [path, operations] of Object.entries(doc.paths)) {
    if (!path.startsWith(prefix)) continue;
    for (const [method, operation] of Object.entries(operations)) {
      const key = `${method.toUpperCase()} ${path.slice(prefix.length).replace(/\{(\w+)\}/g, ':$1')}`;
      if (operation.requestBody) withBody.add(key);
      queryParams.set(key, (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name));
    }
  }
  return { withBody, queryParams };
}

/** Query parameters that name nothing a tenant owns: paging sizes, state filters, waits. */
const inertQuery = new Set(['limit', 'state', 'waitMs', 'epoch', 'types', 'waitSeconds', 'status']);

/** B's value for each query parameter that can name something of B's (undefined: B has none to give). */
const bQueryValues: Record<string, (route: SpaceRoute) => Promise<string | undefined>> = {
  scopeId: async () => world.fb.scopeId,
  destinationId: async () => world.fb.ids.destination,
  claimKey: async () => 'shared-lock',
  aggregate: async () => `task:${world.fb.ids.task}`,
  eventId: async () => (bBefore.events.at(-1) as { eventId: string }).eventId,
  // A cursor B's own listing handed out: continuing it in A's space must page A's rows only.
  cursor: async (route) => {
    const { b, fb, call } = world;
    const page = await call('GET', fb.spaceId, `${pathFor(route, () => fb)}?limit=1`, { key: b.key });
    return page.body?.nextCursor ?? page.body?.childRuns?.nextCursor ?? page.body?.liveTasks?.nextCursor ?? undefined;
  },
};

/** The path parameters and body references of a route: each can name a resource of another tenant. */
function slotsOf(route: SpaceRoute): string[] {
  return [...pathSlots(route.path).map((s) => s.param), ...bodySlots(bodies[route.key], world.fa)];
}

/** Each slot alone from B, then all of them together. */
function variants(slots: string[]): Array<Set<string>> {
  const single = slots.map((s) => new Set([s]));
  return slots.length > 1 ? [...single, new Set(slots)] : single;
}

/** Calls a route on `spaceId` with `key`: slots in `foreign` take `other`'s resources, the rest `own`'s (A1's by default). */
function callWith(route: SpaceRoute, key: string | null, spaceId: string, foreign: Set<string>, other: Fixture, own: Fixture = world.fa): Promise<Reply> {
  const from = (slot: string): Fixture => (foreign.has(slot) ? other : own);
  const context: BodyContext = { own, from, fresh: randomUUID() };
  const spec = bodies[route.key];
  return world.call(route.method, spaceId, pathFor(route, from), { key, ...(spec ? { body: spec.body(context) } : {}) });
}

/** The route's path with each id parameter filled from the fixture `from` gives for it. */
function pathFor(route: SpaceRoute, from: (slot: string) => Fixture): string {
  const slots = pathSlots(route.path);
  let i = 0;
  return route.path
    .split('/')
    .map((segment) => {
      if (!segment.startsWith(':')) return segment;
      const slot = slots[i++]!;
      return from(slot.param).ids[slot.kind!];
    })
    .join('/');
}

function notFound(reply: Reply): string | undefined {
  return reply.statusCode === 404 && reply.body?.error?.code === 'NOT_FOUND' ? undefined : `expected 404 NOT_FOUND, got ${brief(reply)}`;
}

/** A batch whose items are each answered as their single route would: every item 404. */
function notFoundItems(reply: Reply): string | undefined {
  const items: Array<{ status: number; body: { error?: { code: string } } }> = reply.body?.items ?? [];
  const ok = reply.statusCode === 200 && items.length > 0 && items.every((item) => item.status === 404 && item.body.error?.code === 'NOT_FOUND');
  return ok ? undefined : `expected 200 with every item 404 NOT_FOUND, got ${brief(reply)}`;
}

function forbidden(reply: Reply, message: string): string | undefined {
  const ok = reply.statusCode === 403 && reply.body?.error?.code === 'FORBIDDEN' && reply.body.error.message === message;
  return ok ? undefined : `expected 403 FORBIDDEN "${message}", got ${brief(reply)}`;
}

/**
 * Two replies that a client cannot tell apart: same status and body once request ids are dropped
 * and the ids and names the two calls named (B's or the ghost's) are blanked.
 */
function sameReply(x: Reply, y: Reply, other: Fixture = world.fb): boolean {
  return x.statusCode === y.statusCode && JSON.stringify(blank(x.body, other)) === JSON.stringify(blank(y.body, other));
}

function blank(body: unknown, other: Fixture): unknown {
  const { ghost, b } = world;
  const refs = [...Object.values(other.ids), ...Object.values(other.names), ...Object.values(other.tokens), other.spaceId, b.orgId, ...Object.values(ghost.ids), ...Object.values(ghost.names), ...Object.values(ghost.tokens)];
  let text = JSON.stringify(body ?? null).replace(/"requestId":"[^"]*"/g, '"requestId":""');
  text = text.replace(/\/v1\/spaces\/[0-9a-f-]{36}/g, '/v1/spaces/<space>');
  for (const ref of refs) text = text.replaceAll(ref, '<ref>');
  return JSON.parse(text);
}

function brief(reply: Reply): string {
  return `${reply.statusCode} ${JSON.stringify(reply.body)?.slice(0, 300)}`;
}

/** A tenant that never existed: random ids, names and tokens. */
function ghostFixture(): Fixture {
  const ids = Object.fromEntries(kinds.map((kind) => [kind, randomUUID()])) as Fixture['ids'];
  const names = { pool: 'ghost-gpu', workLimit: 'ghost-slots', allowance: 'ghost-tokens', budget: 'ghost-usd' };
  return { spaceId: randomUUID(), scopeId: randomUUID(), ids, names, tokens: { message: `ghost-${randomUUID()}`, claim: `ghost-${randomUUID()}` }, creates: {}, allIds: [] };
}

interface Snapshot {
  events: unknown[];
  usage: unknown;
  views: Record<string, unknown>;
}

/** Everything B can see of itself: its whole journal, every GET route on its ids, and what its usage counts. */
async function snapshotOfB(): Promise<Snapshot> {
  const { routes, b, fb, call } = world;
  const views: Record<string, unknown> = {};
  for (const route of routes.filter((r) => r.method === 'GET' && r.key !== 'GET /usage')) {
    const reply = await callWith(route, b.key, fb.spaceId, new Set(slotsOf(route)), fb);
    views[route.key] = { status: reply.statusCode, body: reply.body };
  }
  const events: unknown[] = [];
  for (let cursor = ''; ;) {
    const page = (await call('GET', fb.spaceId, `/events?limit=500${cursor ? `&cursor=${cursor}` : ''}`, { key: b.key })).body;
    if (page.items.length === 0) break;
    events.push(...page.items);
    cursor = page.nextCursor;
  }
  // requestsThisMinute counts B's own reads of this snapshot; what A did must count nowhere in B.
  const { requestsThisMinute: _reads, ...usage } = (await call('GET', fb.spaceId, '/usage', { key: b.key })).body;
  return { events, usage, views };
}
