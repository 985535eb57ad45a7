import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { openTestServer, type Reply, type TestServer } from '../support/server';

/** Every item of a list, page by page of `limit`, checking each page's size on the way. */
async function everyPage(server: TestServer, path: string, limit: number): Promise<{ items: any[]; pages: number }> {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep: string = path.includes('?') ? '&' : '?';
    const res: Reply = await server.admin('GET', `${path}${sep}limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`);
    expect(res.statusCode).toBe(200);
    expect(res.body.items.length).toBeLessThanOrEqual(limit);
    items.push(...res.body.items);
    cursor = res.body.nextCursor;
    pages++;
  } while (cursor !== null);
  return { items, pages };
}

describe.each(storeTargets())('operator lists of organizations, spaces and keys on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
  });
  afterAll(async () => close());

  it.each(['/orgs', '/orgs/00000000-0000-4000-8000-000000000001/spaces', '/orgs/00000000-0000-4000-8000-000000000001/keys'])('GET %s refuses a request without the admin token, or with a wrong one', async (path) => {
    const none = await server.inject('GET', `/admin/v1${path}`, {});
    expect(none.statusCode).toBe(401);
    expect(none.body.error.code).toBe('UNAUTHENTICATED');
    const wrong = await server.inject('GET', `/admin/v1${path}`, { authorization: 'Bearer not-the-token' });
    expect(wrong.statusCode).toBe(401);
    const tenantKey = await server.inject('GET', `/admin/v1${path}`, { authorization: `Bearer ${server.key}` });
    expect(tenantKey.statusCode).toBe(401);
  });

  it('lists every organization oldest first, page by page, with nothing repeated or skipped', async () => {
    const names = ['one', 'two', 'three', 'four', 'five'];
    for (const name of names) {
      server.clock.advance(1); // distinct createdAt: the order is the order of creation
      expect((await server.admin('POST', '/orgs', { name })).statusCode).toBe(201);
    }
    const { items, pages } = await everyPage(server, '/orgs', 2);
    expect(items.map((o) => o.name)).toEqual(['acme', ...names]);
    expect(pages).toBe(3);
    expect(items[0]).toMatchObject({ id: server.orgId, plan: 'TEAM', limits: { requestsPerMinute: 3000 } });
  });

  it('pages organizations created in the same millisecond by id, so none is lost between pages', async () => {
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await server.admin('POST', '/orgs', { name: `same-ms-${i}` })).body.id as string);
    const { items } = await everyPage(server, '/orgs', 1);
    const ids = items.map((o) => o.id as string);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.filter((id) => created.includes(id))).toEqual([...created].sort());
  });

  it('answers 400 for a cursor it did not make and for a limit out of range', async () => {
    const cursor = await server.admin('GET', '/orgs?cursor=bm90LWEtY3Vyc29y');
    expect(cursor.statusCode).toBe(400);
    expect(cursor.body.error.code).toBe('VALIDATION_FAILED');
    expect((await server.admin('GET', '/orgs?limit=0')).statusCode).toBe(400);
    expect((await server.admin('GET', '/orgs?limit=501')).statusCode).toBe(400);
  });

  it("lists an organization's spaces and no other organization's, and 404 for an unknown organization", async () => {
    const other = (await server.admin('POST', '/orgs', { name: 'other', plan: 'TEAM' })).body.id as string;
    await server.admin('POST', `/orgs/${other}/spaces`, { name: 'elsewhere' });
    for (const name of ['second', 'third']) {
      server.clock.advance(1);
      await server.admin('POST', `/orgs/${server.orgId}/spaces`, { name });
    }
    const { items, pages } = await everyPage(server, `/orgs/${server.orgId}/spaces`, 2);
    expect(items.map((s) => s.name)).toEqual(['main', 'second', 'third']);
    expect(items.every((s) => s.orgId === server.orgId)).toBe(true);
    expect(pages).toBe(2);
    const unknown = await server.admin('GET', '/orgs/00000000-0000-4000-8000-000000000001/spaces');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
  });

  it('lists keys without their secrets or hashes, revoked ones too, and filters by the space they may use', async () => {
    const org = (await server.admin('POST', '/orgs', { name: 'keyed', plan: 'TEAM' })).body.id as string;
    const spaceA = (await server.admin('POST', `/orgs/${org}/spaces`, { name: 'a' })).body.id as string;
    const spaceB = (await server.admin('POST', `/orgs/${org}/spaces`, { name: 'b' })).body.id as string;
    const everywhere = (await server.admin('POST', `/orgs/${org}/keys`, { name: 'everywhere' })).body;
    const onlyA = (await server.admin('POST', `/orgs/${org}/keys`, { name: 'only-a', spaceIds: [spaceA] })).body;
    const revoked = (await server.admin('POST', `/orgs/${org}/keys`, { name: 'revoked', spaceIds: [spaceB] })).body;
    await server.admin('POST', `/keys/${revoked.id}/revoke`);

    const all = await everyPage(server, `/orgs/${org}/keys`, 2);
    expect(all.items.map((k) => k.name).sort()).toEqual(['everywhere', 'only-a', 'revoked']);
    expect(all.items.find((k) => k.name === 'revoked').revokedAt).not.toBeNull();
    const listed = JSON.stringify(all.items);
    for (const key of [everywhere, onlyA, revoked]) expect(listed).not.toContain(key.secret);
    for (const item of all.items) expect(Object.keys(item).sort()).toEqual(['createdAt', 'id', 'name', 'orgId', 'permissions', 'revokedAt', 'spaceIds']);

    const inA = await server.admin('GET', `/orgs/${org}/keys?spaceId=${spaceA}`);
    expect(inA.body.items.map((k: any) => k.name).sort()).toEqual(['everywhere', 'only-a']);
    const inB = await server.admin('GET', `/orgs/${org}/keys?spaceId=${spaceB}`);
    expect(inB.body.items.map((k: any) => k.name).sort()).toEqual(['everywhere', 'revoked']);
    const foreignSpace = await server.admin('GET', `/orgs/${org}/keys?spaceId=${server.spaceId}`);
    expect(foreignSpace.statusCode).toBe(404);
    expect((await server.admin('GET', '/orgs/00000000-0000-4000-8000-000000000001/keys')).statusCode).toBe(404);
  });

  it('describes the three lists in the OpenAPI document with an operationId, a summary and a response description', async () => {
    const doc = (await server.inject('GET', '/v1/openapi.json', {})).body;
    const operations = [doc.paths['/admin/v1/orgs'].get, doc.paths['/admin/v1/orgs/{orgId}/spaces'].get, doc.paths['/admin/v1/orgs/{orgId}/keys'].get];
    expect(operations.map((o) => o.operationId)).toEqual(['listOrgs', 'listSpaces', 'listApiKeys']);
    for (const operation of operations) {
      expect(operation.summary).toBeTruthy();
      expect(operation.responses['200'].description).not.toBe('Default Response');
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '503']));
    }
  });
});
