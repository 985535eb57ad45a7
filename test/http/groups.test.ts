import type { LocalNotifier } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { allEvents, idem, openTestServer, startTestServer, type Reply, type TestServer } from '../support/server';

/**
 * Task groups over HTTP (docs/design/0010-task-groups.md, docs/api.md "Task groups"). Every
 * test makes its own mailbox, so what one test's workers claim never touches another's; the
 * server's clock is manual and only moves when a test moves it.
 */

const parentScope = '44444444-4444-4444-8444-444444444444';
const otherScope = '55555555-5555-4555-8555-555555555555';
const unknownId = '22222222-2222-4222-8222-222222222222';

type Condition = 'FIRST_ACCEPTED' | 'N_ACCEPTED' | 'ALL_TERMINAL';
interface Group {
  groupId: string;
  scopeId: string;
  box: string;
}
interface Delivery {
  messageId: string;
  taskId: string;
  token: string;
  scopeId: string;
}

describe.each(storeTargets())('task groups over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const opened = await target.open();
    server = await startTestServer(opened.store);
    close = async () => {
      await server.close();
      await opened.close();
    };
  });
  afterAll(async () => close());

  let counter = 0;
  const tag = () => `${++counter}`;

  const expectError = (res: Reply, status: number, code: string): void => {
    expect(res.statusCode, JSON.stringify(res.body)).toBe(status);
    expect(res.body.error.code).toBe(code);
  };
  const newBox = async (): Promise<string> => {
    const res = await server.api('POST', '/mailboxes', { body: { name: `group-box-${tag()}` }, idem: idem() });
    expect(res.statusCode).toBe(201);
    return res.body.id as string;
  };
  /** A new group in a mailbox of its own (FIRST_ACCEPTED unless `body` says otherwise). */
  const newGroup = async (body: Record<string, unknown> = {}): Promise<Group> => {
    const box = (body.mailboxId as string | undefined) ?? (await newBox());
    const res = await server.api('POST', '/task-groups', { body: { mailboxId: box, condition: 'FIRST_ACCEPTED', ...body }, idem: idem() });
    expect(res.statusCode, JSON.stringify(res.body)).toBe(201);
    return { groupId: res.body.groupId, scopeId: res.body.scopeId, box };
  };
  const view = async (groupId: string) => (await server.api('GET', `/task-groups/${groupId}`)).body;
  const addMember = (groupId: string, body: Record<string, unknown> = {}) =>
    server.api('POST', `/task-groups/${groupId}/tasks`, { body: { taskKey: `member-${tag()}`, ...body }, idem: idem() });
  /** Creates a member and answers its taskId. */
  const member = async (groupId: string, body: Record<string, unknown> = {}): Promise<string> => {
    const res = await addMember(groupId, body);
    expect(res.statusCode, JSON.stringify(res.body)).toBe(201);
    return res.body.taskId as string;
  };
  /** A task outside any group, in its own scope. */
  const outsideTask = async (box: string): Promise<string> => {
    const res = await server.api('POST', '/tasks', { body: { scopeId: otherScope, mailboxId: box, taskKey: `outside-${tag()}` }, idem: idem() });
    expect(res.statusCode).toBe(201);
    return res.body.taskId as string;
  };
  const task = async (id: string) => (await server.api('GET', `/tasks/${id}`)).body;
  const admit = (box: string, scopeId: string) =>
    server.api('POST', '/tasks/admit', { body: { scopeId, mailboxId: box, holder: 'worker', holderSession: 'session-1' }, idem: idem() });
  /** Admits the next delivery of the group's mailbox on `scopeId` (the gate scope by default); it must be `taskId`'s. */
  const claim = async (g: Group, taskId: string, scopeId = g.scopeId): Promise<Delivery> => {
    const res = await admit(g.box, scopeId);
    expect(res.statusCode, JSON.stringify(res.body)).toBe(200);
    expect(res.body.taskId).toBe(taskId);
    return res.body as Delivery;
  };
  const complete = (d: Delivery, payload: unknown = { ok: true }) => server.api('POST', `/messages/${d.messageId}/complete`, { body: { token: d.token, result: { payload } } });
  /** Runs the member (the next delivery of its mailbox) to SUCCEEDED. */
  const succeed = async (g: Group, taskId: string): Promise<void> => {
    expect((await complete(await claim(g, taskId))).statusCode).toBe(200);
    expect((await task(taskId)).state).toBe('SUCCEEDED');
  };
  /** Runs the member (the next delivery of its mailbox) to FAILED (nack without retry). */
  const fail = async (g: Group, taskId: string): Promise<void> => {
    const d = await claim(g, taskId);
    expect((await server.api('POST', `/messages/${d.messageId}/nack`, { body: { token: d.token, retry: false } })).statusCode).toBe(200);
    expect((await task(taskId)).state).toBe('FAILED');
  };
  const verdict = (groupId: string, taskId: string, which: 'accept' | 'reject') => server.api('POST', `/task-groups/${groupId}/tasks/${taskId}/${which}`, { body: {} });
  const closeGroup = (groupId: string, how: 'close' | 'seal' = 'close') => server.api('POST', `/task-groups/${groupId}/${how}`, { body: {} });
  const joinTask = (groupId: string, taskId: string) => server.api('POST', `/task-groups/${groupId}/join-task`, { body: { taskId } });
  const advance = (ms: number) => server.admin('POST', '/clock/advance', { ms });
  const iso = (ms: number) => new Date(ms).toISOString();
  /** The group's events, once `ready` holds for them. */
  const groupEvents = async (groupId: string, ready: (events: any[]) => boolean = () => true) => {
    const of = (all: any[]) => all.filter((e) => e.aggregate.type === 'group' && e.aggregate.id === groupId);
    return of(await allEvents(server, (all) => ready(of(all))));
  };
  const typesOf = (events: any[]) => events.map((e) => e.type as string);
  /** Resolves once a long poll is parked on the notifier. */
  const parked = async (): Promise<void> => {
    const notifier = server.baton.deps.notifier as LocalNotifier;
    await expect.poll(() => notifier.parked, { timeout: 5_000, interval: 5 }).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 20));
  };

  describe('create', () => {
    it.each<[Condition, number | undefined, number | null]>([
      ['FIRST_ACCEPTED', undefined, 1],
      ['FIRST_ACCEPTED', 1, 1],
      ['N_ACCEPTED', 3, 3],
      ['ALL_TERMINAL', undefined, null],
    ])('creates an OPEN %s group (threshold %s) with a fresh gate scope; the view stores threshold %s', async (condition, threshold, stored) => {
      const box = await newBox();
      const deadline = iso(server.clock.now() + 3_600_000);
      const g = await newGroup({ mailboxId: box, condition, parentScopeId: parentScope, expectedMembers: 5, deadline, ...(threshold === undefined ? {} : { threshold }) });
      expect(g.scopeId).toMatch(/^[0-9a-f-]{36}$/);
      expect(g.scopeId).not.toBe(parentScope);
      const v = await view(g.groupId);
      expect(v).toEqual({
        id: g.groupId,
        scopeId: g.scopeId,
        parentScopeId: parentScope,
        mailboxId: box,
        state: 'OPEN',
        condition,
        threshold: stored,
        expectedMembers: 5,
        deadline,
        outcome: null,
        outcomeReason: null,
        decidedAt: null,
        members: [],
        createdAt: iso(server.clock.now()),
        updatedAt: iso(server.clock.now()),
      });
      const events = await groupEvents(g.groupId, (e) => e.length > 0);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type: 'group.created', scopeId: g.scopeId, data: { groupId: g.groupId, condition, threshold: stored, expectedMembers: 5, mailboxId: box, parentScopeId: parentScope, deadline } });
    });

    it('two groups get two different gate scopes; without parentScopeId the view shows null', async () => {
      const a = await newGroup();
      const b = await newGroup({ mailboxId: a.box });
      expect(a.scopeId).not.toBe(b.scopeId);
      expect(await view(a.groupId)).toMatchObject({ parentScopeId: null, expectedMembers: null, deadline: null });
    });

    it.each<[string, Record<string, unknown>, string]>([
      ['N_ACCEPTED without threshold', { condition: 'N_ACCEPTED' }, 'body.threshold'],
      ['FIRST_ACCEPTED with threshold 2', { condition: 'FIRST_ACCEPTED', threshold: 2 }, 'body.threshold'],
      ['ALL_TERMINAL with a threshold', { condition: 'ALL_TERMINAL', threshold: 1 }, 'body.threshold'],
      ['threshold 0', { condition: 'N_ACCEPTED', threshold: 0 }, 'body.threshold'],
      ['threshold 1001', { condition: 'N_ACCEPTED', threshold: 1001 }, 'body.threshold'],
      ['threshold 1.5', { condition: 'N_ACCEPTED', threshold: 1.5 }, 'body.threshold'],
      ['expectedMembers 0', { expectedMembers: 0 }, 'body.expectedMembers'],
      ['expectedMembers 101', { expectedMembers: 101 }, 'body.expectedMembers'],
      ['an unknown condition', { condition: 'MAJORITY' }, 'body.condition'],
      ['no condition', { condition: undefined }, 'body.condition'],
      ['a mailboxId that is not a uuid', { mailboxId: 'box' }, 'body.mailboxId'],
      ['a parentScopeId that is not a uuid', { parentScopeId: 'run-1' }, 'body.parentScopeId'],
      ['a deadline that is not a date-time', { deadline: 'tomorrow' }, 'body.deadline'],
    ])('refuses %s with 400 VALIDATION_FAILED naming the field', async (_, extra, path) => {
      const box = await newBox();
      const res = await server.api('POST', '/task-groups', { body: { mailboxId: box, condition: 'FIRST_ACCEPTED', ...extra }, idem: idem() });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    });

    it('accepts the bounds: threshold 1000, expectedMembers 1 and 100', async () => {
      expect((await newGroup({ condition: 'N_ACCEPTED', threshold: 1000, expectedMembers: 100 })).groupId).toBeTruthy();
      expect((await view((await newGroup({ expectedMembers: 1 })).groupId)).expectedMembers).toBe(1);
    });

    it('needs an Idempotency-Key; a replay with the key answers the same group and creates no other', async () => {
      const box = await newBox();
      const body = { mailboxId: box, condition: 'ALL_TERMINAL' };
      expectError(await server.api('POST', '/task-groups', { body }), 400, 'IDEMPOTENCY_KEY_REQUIRED');
      const k = idem();
      const first = await server.api('POST', '/task-groups', { body, idem: k });
      const replay = await server.api('POST', '/task-groups', { body, idem: k });
      expect(replay.statusCode).toBe(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toEqual(first.body);
    });

    it('an unknown mailbox is 404 NOT_FOUND', async () => {
      expectError(await server.api('POST', '/task-groups', { body: { mailboxId: unknownId, condition: 'ALL_TERMINAL' }, idem: idem() }), 404, 'NOT_FOUND');
    });

    it('a deadline already passed decides at once: FAILED DEADLINE_EXCEEDED, one group.decided', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL', deadline: iso(server.clock.now() - 1) });
      expect(await view(g.groupId)).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED', decidedAt: iso(server.clock.now()) });
      const events = await groupEvents(g.groupId, (e) => e.length >= 2);
      expect(typesOf(events)).toEqual(['group.created', 'group.decided']);
      expect(events[1]).toMatchObject({ scopeId: g.scopeId, data: { outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED', from: 'OPEN', members: 0 } });
    });

    it('a key without coordination_write cannot create; one with coordination_read can read', async () => {
      const g = await newGroup();
      const reader = await server.newKey({ permissions: ['coordination_read'] });
      expectError(await server.api('POST', '/task-groups', { key: reader, body: { mailboxId: g.box, condition: 'ALL_TERMINAL' }, idem: idem() }), 403, 'FORBIDDEN');
      expectError(await server.api('POST', `/task-groups/${g.groupId}/close`, { key: reader, body: {} }), 403, 'FORBIDDEN');
      expect((await server.api('GET', `/task-groups/${g.groupId}`, { key: reader })).statusCode).toBe(200);
    });
  });

  describe('not found', () => {
    it('every route answers 404 NOT_FOUND for an unknown group', async () => {
      const box = await newBox();
      const t = await outsideTask(box);
      const base = `/task-groups/${unknownId}`;
      expectError(await server.api('GET', base), 404, 'NOT_FOUND');
      expectError(await server.api('GET', `${base}?waitMs=5000`), 404, 'NOT_FOUND');
      expectError(await server.api('POST', `${base}/tasks`, { body: { taskKey: `k-${tag()}` }, idem: idem() }), 404, 'NOT_FOUND');
      expectError(await joinTask(unknownId, t), 404, 'NOT_FOUND');
      expectError(await verdict(unknownId, t, 'accept'), 404, 'NOT_FOUND');
      expectError(await verdict(unknownId, t, 'reject'), 404, 'NOT_FOUND');
      expectError(await closeGroup(unknownId), 404, 'NOT_FOUND');
      expectError(await closeGroup(unknownId, 'seal'), 404, 'NOT_FOUND');
      // Nothing was created under the taskKey refused above.
      expect((await task(t)).state).toBe('PENDING');
    });

    it("another space's group is 404 there, and this space's tasks cannot join it", async () => {
      const g = await newGroup();
      const t = await outsideTask(g.box);
      const other = await server.admin('POST', `/orgs/${server.orgId}/spaces`, { name: `other-${tag()}` });
      const theirKey = await server.newKey({ spaceIds: [other.body.id] });
      const call = (method: 'GET' | 'POST', path: string, body?: unknown) =>
        server.inject(method, `/v1/spaces/${other.body.id}${path}`, { authorization: `Bearer ${theirKey}`, 'idempotency-key': idem() }, body);
      expectError(await call('GET', `/task-groups/${g.groupId}`), 404, 'NOT_FOUND');
      expectError(await call('POST', `/task-groups/${g.groupId}/close`, {}), 404, 'NOT_FOUND');
      expectError(await call('POST', `/task-groups/${g.groupId}/tasks`, { taskKey: 'x' }), 404, 'NOT_FOUND');
      expect((await call('GET', '/task-groups')).body.items).toEqual([]);
      // A group of theirs cannot take our task.
      const box = await call('POST', '/mailboxes', { name: 'theirs' });
      const theirs = await call('POST', '/task-groups', { mailboxId: box.body.id, condition: 'ALL_TERMINAL' });
      expect(theirs.statusCode).toBe(201);
      expectError(await call('POST', `/task-groups/${theirs.body.groupId}/join-task`, { taskId: t }), 404, 'NOT_FOUND');
      expect((await view(g.groupId)).state).toBe('OPEN');
    });

    it('a malformed group or task id in the path is 400 VALIDATION_FAILED', async () => {
      const g = await newGroup();
      expectError(await server.api('GET', '/task-groups/not-a-uuid'), 400, 'VALIDATION_FAILED');
      expectError(await closeGroup('not-a-uuid'), 400, 'VALIDATION_FAILED');
      expectError(await verdict(g.groupId, 'not-a-uuid', 'accept'), 400, 'VALIDATION_FAILED');
      expectError(await joinTask(g.groupId, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
    });
  });

  describe('member tasks', () => {
    it("creates a member (201) in the group's mailbox and gate scope, listed PENDING in the view", async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      const res = await addMember(g.groupId, { taskKey: `m-${tag()}`, input: { doc: 7 } });
      expect(res.statusCode).toBe(201);
      expect(res.body).toEqual({ taskId: expect.any(String), state: 'PENDING', created: true });
      const t = await task(res.body.taskId);
      expect(t).toMatchObject({ mailboxId: g.box, scopeId: g.scopeId, state: 'PENDING', input: { doc: 7 } });
      const v = await view(g.groupId);
      expect(v.members).toEqual([{ taskId: res.body.taskId, taskState: 'PENDING', verdict: 'PENDING', joinedAt: iso(server.clock.now()) }]);
      expect(v.state).toBe('OPEN');
      const messages = (await server.api('GET', `/mailboxes/${g.box}/messages?state=READY`)).body.items;
      expect(messages).toEqual([expect.objectContaining({ scopeId: g.scopeId, payload: { taskId: res.body.taskId, input: { doc: 7 } } })]);
      const events = await groupEvents(g.groupId, (e) => e.length >= 2);
      expect(events[1]).toMatchObject({ type: 'group.member_added', scopeId: g.scopeId, data: { groupId: g.groupId, taskId: res.body.taskId, position: 1, how: 'CREATED', taskState: 'PENDING' } });
    });

    it('the member task keeps its own deadline', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      const deadline = iso(server.clock.now() + 60_000);
      const t = await member(g.groupId, { deadline });
      expect((await task(t)).deadline).toBe(deadline);
    });

    it('the same taskKey and input again answers 200 created:false and adds no member', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      const taskKey = `m-${tag()}`;
      const first = await addMember(g.groupId, { taskKey, input: { a: 1 } });
      const again = await addMember(g.groupId, { taskKey, input: { a: 1 } });
      expect(again.statusCode).toBe(200);
      expect(again.body).toEqual({ taskId: first.body.taskId, state: 'PENDING', created: false });
      expect((await view(g.groupId)).members).toHaveLength(1);
    });

    it('the same taskKey with other input is 409 TASK_KEY_CONFLICT', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      const taskKey = `m-${tag()}`;
      await member(g.groupId, { taskKey, input: { a: 1 } });
      expectError(await addMember(g.groupId, { taskKey, input: { a: 2 } }), 409, 'TASK_KEY_CONFLICT');
      expect((await view(g.groupId)).members).toHaveLength(1);
    });

    it('a taskKey naming a task outside this group is 409 CONFLICT (a plain task, or a member of another group)', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      const taskKey = `plain-${tag()}`;
      // Same mailbox and no input: the fingerprint matches, so only the membership refuses it.
      expect((await server.api('POST', '/tasks', { body: { scopeId: otherScope, mailboxId: g.box, taskKey }, idem: idem() })).statusCode).toBe(201);
      const plain = await addMember(g.groupId, { taskKey });
      expectError(plain, 409, 'CONFLICT');
      expect(plain.body.error.message).toContain('join-task');
      const other = await newGroup({ condition: 'ALL_TERMINAL', mailboxId: g.box });
      const otherKey = `m-${tag()}`;
      await member(other.groupId, { taskKey: otherKey });
      expectError(await addMember(g.groupId, { taskKey: otherKey }), 409, 'CONFLICT');
      expect((await view(g.groupId)).members).toEqual([]);
    });

    it('needs an Idempotency-Key; a replay answers the first reply and adds no member', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      expectError(await server.api('POST', `/task-groups/${g.groupId}/tasks`, { body: { taskKey: `m-${tag()}` } }), 400, 'IDEMPOTENCY_KEY_REQUIRED');
      const k = idem();
      const body = { taskKey: `m-${tag()}` };
      const first = await server.api('POST', `/task-groups/${g.groupId}/tasks`, { body, idem: k });
      const replay = await server.api('POST', `/task-groups/${g.groupId}/tasks`, { body, idem: k });
      expect(replay.statusCode).toBe(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toEqual(first.body);
      expect((await view(g.groupId)).members).toHaveLength(1);
      expectError(await server.api('POST', `/task-groups/${g.groupId}/tasks`, { body: { taskKey: '' }, idem: idem() }), 400, 'VALIDATION_FAILED');
    });

    it('membership closes (SEALED, group.sealed EXPECTED_MEMBERS) when expectedMembers have joined; a further member is 409', async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 1, expectedMembers: 2 });
      const a = await member(g.groupId);
      expect((await view(g.groupId)).state).toBe('OPEN');
      const b = await member(g.groupId);
      const v = await view(g.groupId);
      expect(v).toMatchObject({ state: 'SEALED', outcome: null });
      expect(v.members.map((m: { taskId: string }) => m.taskId)).toEqual([a, b]);
      const refused = await addMember(g.groupId);
      expectError(refused, 409, 'CONFLICT');
      expect(refused.body.error.message).toContain('SEALED');
      expectError(await joinTask(g.groupId, await outsideTask(g.box)), 409, 'CONFLICT');
      const events = await groupEvents(g.groupId, (e) => e.some((x) => x.type === 'group.sealed'));
      expect(typesOf(events)).toEqual(['group.created', 'group.member_added', 'group.member_added', 'group.sealed']);
      expect(events[3]).toMatchObject({ scopeId: g.scopeId, data: { cause: 'EXPECTED_MEMBERS', members: 2 } });
    });

    it('the same taskKey of a member answers 200 created:false also after membership closed', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL', expectedMembers: 1 });
      const taskKey = `m-${tag()}`;
      const taskId = await member(g.groupId, { taskKey });
      expect((await view(g.groupId)).state).toBe('SEALED');
      const again = await addMember(g.groupId, { taskKey });
      expect(again.statusCode, JSON.stringify(again.body)).toBe(200);
      expect(again.body).toEqual({ taskId, state: 'PENDING', created: false });
    });

    it("a member's taskKey after the deadline passed answers 200 created:false with the member cancelled; the group decides once", async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL', deadline: iso(server.clock.now() + 5_000) });
      const taskKey = `m-${tag()}`;
      const taskId = await member(g.groupId, { taskKey });
      server.clock.advance(5_000);
      const again = await addMember(g.groupId, { taskKey });
      expect(again.statusCode, JSON.stringify(again.body)).toBe(200);
      expect(again.body).toEqual({ taskId, state: 'CANCELLED', created: false });
      expect(await view(g.groupId)).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED' });
      const events = await groupEvents(g.groupId, (e) => e.some((x) => x.type === 'group.decided'));
      expect(typesOf(events).filter((t) => t === 'group.decided')).toHaveLength(1);
    });

    it("a member input over the space's maxPayloadBytes is 413 PAYLOAD_TOO_LARGE and adds no member", async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      expectError(await addMember(g.groupId, { input: 'x'.repeat(70_000) }), 413, 'PAYLOAD_TOO_LARGE');
      expect((await view(g.groupId)).members).toEqual([]);
    });

    it('without expectedMembers, membership closes at 100 members (MAX_MEMBERS); the 101st is 409', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      for (let i = 0; i < 99; i++) await member(g.groupId);
      expect((await view(g.groupId)).state).toBe('OPEN');
      await member(g.groupId);
      const v = await view(g.groupId);
      expect(v.state).toBe('SEALED');
      expect(v.members).toHaveLength(100);
      expectError(await addMember(g.groupId), 409, 'CONFLICT');
      const sealed = (await groupEvents(g.groupId, (e) => e.some((x) => x.type === 'group.sealed'))).filter((e) => e.type === 'group.sealed');
      expect(sealed).toEqual([expect.objectContaining({ data: { groupId: g.groupId, cause: 'MAX_MEMBERS', members: 100 } })]);
    }, 60_000);

    it('a member create on a DECIDED group is 409 CONFLICT naming the state', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      expect((await closeGroup(g.groupId)).body.state).toBe('DECIDED');
      const res = await addMember(g.groupId);
      expectError(res, 409, 'CONFLICT');
      expect(res.body.error.message).toContain('DECIDED');
    });
  });

  describe('join-task', () => {
    it('joins an outside task (200 with the view); a repeat answers the same view and adds nothing', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      const t = await outsideTask(g.box);
      const res = await joinTask(g.groupId, t);
      expect(res.statusCode).toBe(200);
      expect(res.body).toMatchObject({ id: g.groupId, state: 'OPEN', members: [{ taskId: t, taskState: 'PENDING', verdict: 'PENDING' }] });
      const again = await joinTask(g.groupId, t);
      expect(again.statusCode).toBe(200);
      expect(again.body).toEqual(res.body);
      // The task keeps its own scope.
      expect((await task(t)).scopeId).toBe(otherScope);
      const added = (await groupEvents(g.groupId, (e) => e.length >= 2)).filter((e) => e.type === 'group.member_added');
      expect(added).toEqual([expect.objectContaining({ data: { groupId: g.groupId, taskId: t, position: 1, how: 'JOINED', taskState: 'PENDING' } })]);
    });

    it('a task that is a member of another group is 409 CONFLICT', async () => {
      const a = await newGroup({ condition: 'ALL_TERMINAL' });
      const b = await newGroup({ condition: 'ALL_TERMINAL', mailboxId: a.box });
      const t = await member(a.groupId);
      const res = await joinTask(b.groupId, t);
      expectError(res, 409, 'CONFLICT');
      expect(res.body.error.message).toContain(a.groupId);
      expect((await view(b.groupId)).members).toEqual([]);
    });

    it('an unknown task is 404 NOT_FOUND', async () => {
      const g = await newGroup();
      expectError(await joinTask(g.groupId, unknownId), 404, 'NOT_FOUND');
    });

    it('a group that is not OPEN is 409 CONFLICT, but a member of it repeating its join answers 200', async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 1 });
      const t = await outsideTask(g.box);
      await joinTask(g.groupId, t);
      expect((await closeGroup(g.groupId)).body.state).toBe('SEALED');
      expectError(await joinTask(g.groupId, await outsideTask(g.box)), 409, 'CONFLICT');
      const again = await joinTask(g.groupId, t);
      expect(again.statusCode).toBe(200);
      expect(again.body).toMatchObject({ state: 'SEALED', members: [{ taskId: t }] });
    });

    it('joining a task that already ended counts it as it is: an ALL_TERMINAL group at expectedMembers decides', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL', expectedMembers: 1 });
      const t = await outsideTask(g.box);
      expect((await server.api('POST', `/tasks/${t}/cancel`, { body: {} })).statusCode).toBe(200);
      const res = await joinTask(g.groupId, t);
      expect(res.body).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'ALL_TERMINAL', members: [{ taskId: t, taskState: 'CANCELLED' }] });
    });
  });

  describe('verdicts', () => {
    it('accept needs a SUCCEEDED member, reject a terminal one: 409 CONFLICT naming the state', async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 2 });
      const running = await member(g.groupId);
      const pending = await member(g.groupId);
      await claim(g, running);
      for (const [t, state] of [[running, 'RUNNING'], [pending, 'PENDING']] as const) {
        for (const which of ['accept', 'reject'] as const) {
          const res = await verdict(g.groupId, t, which);
          expectError(res, 409, 'CONFLICT');
          expect(res.body.error.message).toContain(state);
        }
      }
      expect((await view(g.groupId)).members.map((m: { verdict: string }) => m.verdict)).toEqual(['PENDING', 'PENDING']);
    });

    it('accept of a SUCCEEDED member answers the verdict and the group; the same verdict again changes nothing', async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 2 });
      const t = await member(g.groupId);
      await succeed(g, t);
      const res = await verdict(g.groupId, t, 'accept');
      expect(res.statusCode).toBe(200);
      expect(res.body).toMatchObject({ taskId: t, verdict: 'ACCEPTED', group: { id: g.groupId, state: 'OPEN', outcome: null, members: [{ taskId: t, taskState: 'SUCCEEDED', verdict: 'ACCEPTED' }] } });
      const again = await verdict(g.groupId, t, 'accept');
      expect(again.statusCode).toBe(200);
      expect(again.body).toEqual(res.body);
      const verdicts = (await groupEvents(g.groupId, (e) => e.some((x) => x.type === 'group.verdict'))).filter((e) => e.type === 'group.verdict');
      expect(verdicts).toEqual([expect.objectContaining({ scopeId: g.scopeId, data: { groupId: g.groupId, taskId: t, verdict: 'ACCEPTED', taskState: 'SUCCEEDED', groupState: 'OPEN' } })]);
    });

    it('a verdict is final: reject after accept, and accept after reject, are 409 CONFLICT', async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 3 });
      const a = await member(g.groupId);
      const b = await member(g.groupId);
      await succeed(g, a);
      await succeed(g, b);
      expect((await verdict(g.groupId, a, 'accept')).statusCode).toBe(200);
      expectError(await verdict(g.groupId, a, 'reject'), 409, 'CONFLICT');
      // Reject takes any terminal member, SUCCEEDED ones too.
      const rejected = await verdict(g.groupId, b, 'reject');
      expect(rejected.body).toMatchObject({ taskId: b, verdict: 'REJECTED' });
      expect((await verdict(g.groupId, b, 'reject')).statusCode).toBe(200);
      const res = await verdict(g.groupId, b, 'accept');
      expectError(res, 409, 'CONFLICT');
      expect(res.body.error.message).toContain('REJECTED');
      expect((await view(g.groupId)).members.map((m: { verdict: string }) => m.verdict)).toEqual(['ACCEPTED', 'REJECTED']);
    });

    it('reject of a FAILED member is allowed; accept of it is 409', async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 2 });
      const t = await member(g.groupId);
      await fail(g, t);
      expectError(await verdict(g.groupId, t, 'accept'), 409, 'CONFLICT');
      expect((await verdict(g.groupId, t, 'reject')).body).toMatchObject({ verdict: 'REJECTED', group: { state: 'OPEN', members: [{ taskState: 'FAILED', verdict: 'REJECTED' }] } });
    });

    it('a task that is not a member of this group is 404 NOT_FOUND', async () => {
      const g = await newGroup();
      const other = await newGroup({ mailboxId: g.box });
      const elsewhere = await member(other.groupId);
      const plain = await outsideTask(g.box);
      for (const t of [elsewhere, plain, unknownId]) {
        expectError(await verdict(g.groupId, t, 'accept'), 404, 'NOT_FOUND');
        expectError(await verdict(g.groupId, t, 'reject'), 404, 'NOT_FOUND');
      }
    });

    it('a verdict on a DECIDED group is recorded but never changes the outcome', async () => {
      const g = await newGroup({ condition: 'FIRST_ACCEPTED' });
      const a = await member(g.groupId);
      const b = await member(g.groupId);
      await succeed(g, a);
      await succeed(g, b);
      expect((await verdict(g.groupId, a, 'reject')).body.group.state).toBe('OPEN');
      // Closing with b still acceptable leaves it SEALED; rejecting b makes the threshold unreachable.
      expect((await closeGroup(g.groupId)).body).toMatchObject({ state: 'SEALED', outcome: null });
      const decided = await verdict(g.groupId, b, 'reject');
      expect(decided.body.group).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' });
      // A third, late member: none can join now, so test a late accept through a group decided while a SUCCEEDED member was pending.
      const h = await newGroup({ condition: 'N_ACCEPTED', threshold: 2, mailboxId: g.box });
      const x = await member(h.groupId);
      const y = await member(h.groupId);
      await fail(h, x);
      await succeed(h, y);
      expect((await closeGroup(h.groupId)).body).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' });
      const late = await verdict(h.groupId, y, 'accept');
      expect(late.statusCode).toBe(200);
      expect(late.body).toMatchObject({ verdict: 'ACCEPTED', group: { state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' } });
      expect(late.body.group.members.map((m: { verdict: string }) => m.verdict)).toEqual(['PENDING', 'ACCEPTED']);
      const events = await groupEvents(h.groupId, (e) => e.some((x) => x.type === 'group.verdict'));
      expect(typesOf(events).filter((t) => t === 'group.decided')).toHaveLength(1);
      expect(events.find((e) => e.type === 'group.verdict').data).toMatchObject({ verdict: 'ACCEPTED', groupState: 'DECIDED' });
    });
  });

  describe('close and seal', () => {
    it('close moves OPEN to SEALED (group.sealed CLOSE); a repeat answers 200 with the same state; seal is then 409', async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 1 });
      const t = await member(g.groupId);
      const closed = await closeGroup(g.groupId);
      expect(closed.statusCode).toBe(200);
      expect(closed.body).toMatchObject({ id: g.groupId, state: 'SEALED', outcome: null, outcomeReason: null, members: [{ taskId: t }] });
      const again = await closeGroup(g.groupId);
      expect(again.statusCode).toBe(200);
      expect(again.body).toEqual(closed.body);
      const seal = await closeGroup(g.groupId, 'seal');
      expectError(seal, 409, 'CONFLICT');
      expect(seal.body.error.message).toContain('SEALED');
      const events = await groupEvents(g.groupId, (e) => e.some((x) => x.type === 'group.sealed'));
      expect(events.filter((e) => e.type === 'group.sealed')).toEqual([expect.objectContaining({ scopeId: g.scopeId, data: { groupId: g.groupId, cause: 'CLOSE', members: 1 } })]);
    });

    it('seal moves OPEN to SEALED (cause SEAL); seal again is 409, close answers 200', async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 1 });
      await member(g.groupId);
      const sealed = await closeGroup(g.groupId, 'seal');
      expect(sealed.body).toMatchObject({ state: 'SEALED', outcome: null });
      expectError(await closeGroup(g.groupId, 'seal'), 409, 'CONFLICT');
      expect((await closeGroup(g.groupId)).body).toEqual(sealed.body);
      const events = await groupEvents(g.groupId, (e) => e.some((x) => x.type === 'group.sealed'));
      expect(events.find((e) => e.type === 'group.sealed').data.cause).toBe('SEAL');
    });

    it('on a DECIDED group close answers the committed outcome and seal is 409', async () => {
      const g = await newGroup({ condition: 'FIRST_ACCEPTED' });
      const decided = await closeGroup(g.groupId);
      expect(decided.body).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' });
      await advance(1_000);
      const again = await closeGroup(g.groupId);
      expect(again.statusCode).toBe(200);
      expect(again.body).toEqual(decided.body);
      const seal = await closeGroup(g.groupId, 'seal');
      expectError(seal, 409, 'CONFLICT');
      expect(seal.body.error.message).toContain('DECIDED');
    });
  });

  describe('decisions', () => {
    it('FIRST_ACCEPTED decides SUCCEEDED THRESHOLD_MET on the first accept, while OPEN', async () => {
      const g = await newGroup({ condition: 'FIRST_ACCEPTED' });
      const a = await member(g.groupId);
      await member(g.groupId);
      await succeed(g, a);
      const res = await verdict(g.groupId, a, 'accept');
      expect(res.body.group).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET', decidedAt: iso(server.clock.now()) });
      const decided = (await groupEvents(g.groupId, (e) => e.some((x) => x.type === 'group.decided'))).filter((e) => e.type === 'group.decided');
      expect(decided).toHaveLength(1);
      expect(decided[0]).toMatchObject({ scopeId: g.scopeId, data: { groupId: g.groupId, outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET', from: 'OPEN', members: 2, accepted: 1, rejected: 0, terminal: 1, succeeded: 1 } });
    });

    it('N_ACCEPTED decides only at threshold accepted members', async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 2 });
      const a = await member(g.groupId);
      const b = await member(g.groupId);
      await succeed(g, a);
      await succeed(g, b);
      expect((await verdict(g.groupId, a, 'accept')).body.group).toMatchObject({ state: 'OPEN', outcome: null });
      expect((await verdict(g.groupId, b, 'accept')).body.group).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET' });
    });

    it('a decision cancels live members (GROUP_DECIDED): their deliveries are CANCELLED, no longer admittable, and a running token is LEASE_LOST', async () => {
      const g = await newGroup({ condition: 'FIRST_ACCEPTED' });
      const winner = await member(g.groupId);
      const running = await member(g.groupId);
      const pending = await member(g.groupId);
      await succeed(g, winner);
      const d = await claim(g, running);
      await verdict(g.groupId, winner, 'accept');
      for (const t of [running, pending]) expect(await task(t)).toMatchObject({ state: 'CANCELLED', failureReason: 'GROUP_DECIDED' });
      expect((await task(winner)).state).toBe('SUCCEEDED');
      expect((await view(g.groupId)).members.map((m: { taskState: string }) => m.taskState)).toEqual(['SUCCEEDED', 'CANCELLED', 'CANCELLED']);
      const messages = (await server.api('GET', `/mailboxes/${g.box}/messages`)).body.items;
      expect(messages.map((m: { state: string }) => m.state)).toEqual(['ACKED', 'CANCELLED', 'CANCELLED']);
      expect((await admit(g.box, g.scopeId)).statusCode).toBe(204);
      expectError(await complete(d), 409, 'LEASE_LOST');
      const all = await allEvents(server, (events) => events.filter((e) => e.type === 'task.cancelled' && [running, pending].includes(e.aggregate.id)).length === 2);
      const cancelled = all.filter((e) => e.type === 'task.cancelled' && [running, pending].includes(e.aggregate.id));
      expect(cancelled.map((e) => e.data.reason)).toEqual(['GROUP_DECIDED', 'GROUP_DECIDED']);
      // A cancelled member's end does not decide the group again.
      expect(typesOf(await groupEvents(g.groupId)).filter((t) => t === 'group.decided')).toHaveLength(1);
    });

    it('close decides FAILED THRESHOLD_UNREACHABLE when the accepted plus the still acceptable fall short', async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 2 });
      const a = await member(g.groupId);
      const b = await member(g.groupId);
      await fail(g, a);
      await succeed(g, b);
      expect((await view(g.groupId)).state).toBe('OPEN');
      const res = await closeGroup(g.groupId);
      expect(res.body).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' });
      const events = await groupEvents(g.groupId, (e) => e.some((x) => x.type === 'group.decided'));
      expect(typesOf(events).slice(-2)).toEqual(['group.sealed', 'group.decided']);
      expect(events.at(-1).data).toMatchObject({ from: 'SEALED', members: 2, terminal: 2, succeeded: 1, accepted: 0 });
    });

    it('close with no members decides FAILED THRESHOLD_UNREACHABLE for FIRST_ACCEPTED', async () => {
      const g = await newGroup({ condition: 'FIRST_ACCEPTED' });
      expect((await closeGroup(g.groupId, 'seal')).body).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE', members: [] });
    });

    it('after close, a member failing decides FAILED THRESHOLD_UNREACHABLE and cancels the other live member', async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 2 });
      const a = await member(g.groupId);
      const b = await member(g.groupId);
      expect((await closeGroup(g.groupId)).body).toMatchObject({ state: 'SEALED', outcome: null });
      await fail(g, a);
      expect(await view(g.groupId)).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' });
      expect(await task(b)).toMatchObject({ state: 'CANCELLED', failureReason: 'GROUP_DECIDED' });
    });

    it('after close, a member cancelled by the caller decides FAILED THRESHOLD_UNREACHABLE', async () => {
      const g = await newGroup({ condition: 'FIRST_ACCEPTED' });
      const a = await member(g.groupId);
      await closeGroup(g.groupId);
      expect((await server.api('POST', `/tasks/${a}/cancel`, { body: { reason: 'not needed' } })).statusCode).toBe(200);
      expect(await view(g.groupId)).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE', members: [{ taskState: 'CANCELLED' }] });
      expect((await task(a)).failureReason).toBe('not needed');
    });

    it('a SUCCEEDED member still pending a verdict keeps a closed group undecided', async () => {
      const g = await newGroup({ condition: 'FIRST_ACCEPTED' });
      const a = await member(g.groupId);
      await succeed(g, a);
      expect((await closeGroup(g.groupId)).body).toMatchObject({ state: 'SEALED', outcome: null });
      expect((await verdict(g.groupId, a, 'accept')).body.group).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET' });
    });

    it('ALL_TERMINAL waits for membership to close, then decides SUCCEEDED ALL_TERMINAL whatever the members ended as', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      const a = await member(g.groupId);
      const b = await member(g.groupId);
      const c = await member(g.groupId);
      await succeed(g, a);
      await fail(g, b);
      await server.api('POST', `/tasks/${c}/cancel`, { body: {} });
      expect((await view(g.groupId)).state).toBe('OPEN');
      const res = await closeGroup(g.groupId);
      expect(res.body).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'ALL_TERMINAL' });
      expect(res.body.members.map((m: { taskState: string }) => m.taskState)).toEqual(['SUCCEEDED', 'FAILED', 'CANCELLED']);
    });

    it('ALL_TERMINAL after close decides when the last member ends', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      const a = await member(g.groupId);
      const b = await member(g.groupId);
      await succeed(g, a);
      expect((await closeGroup(g.groupId)).body).toMatchObject({ state: 'SEALED', outcome: null });
      await succeed(g, b);
      expect(await view(g.groupId)).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'ALL_TERMINAL' });
      const events = await groupEvents(g.groupId, (e) => e.some((x) => x.type === 'group.decided'));
      expect(events.filter((e) => e.type === 'group.decided')).toEqual([expect.objectContaining({ scopeId: g.scopeId, data: expect.objectContaining({ from: 'SEALED', members: 2, terminal: 2, succeeded: 2 }) })]);
    });

    it('ALL_TERMINAL with no members decides SUCCEEDED on close', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      expect((await closeGroup(g.groupId)).body).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'ALL_TERMINAL' });
    });

    it('the deadline sweep decides an undecided group FAILED DEADLINE_EXCEEDED and cancels its live members', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL', deadline: iso(server.clock.now() + 10_000) });
      const a = await member(g.groupId);
      const b = await member(g.groupId);
      await succeed(g, a);
      await advance(9_999);
      expect((await view(g.groupId)).state).toBe('OPEN');
      await advance(1);
      expect(await view(g.groupId)).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED', decidedAt: iso(server.clock.now()) });
      expect(await task(b)).toMatchObject({ state: 'CANCELLED', failureReason: 'GROUP_DECIDED' });
      expect((await task(a)).state).toBe('SUCCEEDED');
      expect((await admit(g.box, g.scopeId)).statusCode).toBe(204);
      const decided = (await groupEvents(g.groupId, (e) => e.some((x) => x.type === 'group.decided'))).filter((e) => e.type === 'group.decided');
      expect(decided).toEqual([expect.objectContaining({ scopeId: g.scopeId, data: expect.objectContaining({ outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED', from: 'OPEN' }) })]);
    });

    it("members expiring in one sweep batch: the first one's end decides the group and cancels the other, which the sweep then leaves CANCELLED", async () => {
      const g = await newGroup({ condition: 'N_ACCEPTED', threshold: 2, expectedMembers: 2 });
      const deadline = iso(server.clock.now() + 10_000);
      const [a, b] = [await member(g.groupId, { deadline }), await member(g.groupId, { deadline })];
      await advance(10_000);
      expect(await view(g.groupId)).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' });
      const states = [await task(a), await task(b)].map((t) => `${t.state} ${t.failureReason}`).sort();
      expect(states).toEqual(['CANCELLED GROUP_DECIDED', 'EXPIRED DEADLINE_EXCEEDED']);
    });

    it('an accept after the deadline passed cannot meet the threshold: the deadline decides first', async () => {
      const g = await newGroup({ condition: 'FIRST_ACCEPTED', deadline: iso(server.clock.now() + 5_000) });
      const a = await member(g.groupId);
      await succeed(g, a);
      server.clock.advance(5_000);
      const res = await verdict(g.groupId, a, 'accept');
      expect(res.statusCode).toBe(200);
      expect(res.body.group).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED' });
      const events = await groupEvents(g.groupId, (e) => e.some((x) => x.type === 'group.verdict'));
      expect(typesOf(events).filter((t) => t === 'group.decided')).toHaveLength(1);
    });
  });

  describe('scopes', () => {
    it('an admit on the parent scope claims a member in the gate scope; message.claimed names the parent as claimScopeId', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL', parentScopeId: parentScope });
      const t = await member(g.groupId);
      expect((await admit(g.box, otherScope)).statusCode).toBe(204);
      const d = await claim(g, t, parentScope);
      expect(d.scopeId).toBe(g.scopeId);
      expect((await task(t)).state).toBe('RUNNING');
      const claimed = (await allEvents(server, (all) => all.some((e) => e.type === 'message.claimed' && e.data.messageId === d.messageId))).find(
        (e) => e.type === 'message.claimed' && e.data.messageId === d.messageId,
      );
      expect(claimed).toMatchObject({ scopeId: g.scopeId, data: { claimScopeId: parentScope, admitted: true } });
    });

    it('a recv on the parent scope claims members too, also of a group nested below another group', async () => {
      const outer = await newGroup({ condition: 'ALL_TERMINAL', parentScopeId: parentScope });
      const inner = await newGroup({ condition: 'ALL_TERMINAL', parentScopeId: outer.scopeId, mailboxId: outer.box });
      const t = await member(inner.groupId);
      const res = await server.api('POST', `/mailboxes/${outer.box}/recv`, { body: { scopeId: parentScope, holder: 'w', holderSession: 's' } });
      expect(res.statusCode).toBe(200);
      expect(res.body).toMatchObject({ scopeId: inner.scopeId, payload: { taskId: t } });
    });

    it('an admit on the gate scope does not claim work of the parent scope', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL', parentScopeId: parentScope });
      const res = await server.api('POST', '/tasks', { body: { scopeId: parentScope, mailboxId: g.box, taskKey: `parent-${tag()}` }, idem: idem() });
      expect(res.statusCode).toBe(201);
      expect((await admit(g.box, g.scopeId)).statusCode).toBe(204);
      expect((await admit(g.box, parentScope)).body.taskId).toBe(res.body.taskId);
    });
  });

  describe('long poll', () => {
    it('GET with waitMs returns as soon as a decision commits', async () => {
      const g = await newGroup({ condition: 'FIRST_ACCEPTED' });
      const a = await member(g.groupId);
      await succeed(g, a);
      let answered = false;
      const poll = server.api('GET', `/task-groups/${g.groupId}?waitMs=20000`);
      void poll.then(() => (answered = true));
      await parked();
      expect(answered).toBe(false);
      await verdict(g.groupId, a, 'accept');
      const res = await poll;
      expect(res.statusCode).toBe(200);
      expect(res.body).toMatchObject({ id: g.groupId, state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET' });
    });

    it('a change that does not decide does not end the wait; the wait ends at its cap with the undecided group', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      let answered = false;
      const poll = server.api('GET', `/task-groups/${g.groupId}?waitMs=120000`);
      void poll.then(() => (answered = true));
      await parked();
      await member(g.groupId);
      await parked();
      await new Promise((r) => setTimeout(r, 50));
      expect(answered).toBe(false);
      server.clock.advance(30_000);
      const res = await poll;
      expect(res.statusCode).toBe(200);
      expect(res.body).toMatchObject({ state: 'OPEN', members: [expect.objectContaining({ verdict: 'PENDING' })] });
    });

    it('a member ending ends the wait, undecided: the coordinator can give its verdict at once', async () => {
      const g = await newGroup({ condition: 'FIRST_ACCEPTED' });
      const [a, b] = [await member(g.groupId), await member(g.groupId)];
      await fail(g, a);
      let answered = false;
      const poll = server.api('GET', `/task-groups/${g.groupId}?waitMs=20000`);
      void poll.then(() => (answered = true));
      await parked();
      expect(answered).toBe(false);
      await succeed(g, b);
      const res = await poll;
      expect(res.body).toMatchObject({ state: 'OPEN', outcome: null });
      expect(res.body.members.map((m: { taskState: string }) => m.taskState)).toEqual(['FAILED', 'SUCCEEDED']);
    });

    it('a DECIDED group answers at once; a bad waitMs is 400', async () => {
      const g = await newGroup({ condition: 'ALL_TERMINAL' });
      await closeGroup(g.groupId);
      expect((await server.api('GET', `/task-groups/${g.groupId}?waitMs=30000`)).body.state).toBe('DECIDED');
      for (const q of ['waitMs=-1', 'waitMs=120001', 'waitMs=soon']) expectError(await server.api('GET', `/task-groups/${g.groupId}?${q}`), 400, 'VALIDATION_FAILED');
    });
  });

  describe('list', () => {
    it('lists oldest first with paging and a state filter of one or several states', async () => {
      // A server of its own, so the list holds only this test's groups.
      const own = await openTestServer(target);
      try {
        const at = own.server;
        const box = (await at.api('POST', '/mailboxes', { body: { name: 'list-box' }, idem: idem() })).body.id;
        const create = async (condition: Condition, extra: Record<string, unknown> = {}) => {
          // Groups created in the same millisecond are ordered by id: a tick apart, by creation.
          await at.admin('POST', '/clock/advance', { ms: 1 });
          const res = await at.api('POST', '/task-groups', { body: { mailboxId: box, condition, ...extra }, idem: idem() });
          expect(res.statusCode).toBe(201);
          return res.body.groupId as string;
        };
        const open = await create('ALL_TERMINAL');
        const sealed = await create('N_ACCEPTED', { threshold: 1 });
        await at.api('POST', `/task-groups/${sealed}/tasks`, { body: { taskKey: 'list-member' }, idem: idem() });
        expect((await at.api('POST', `/task-groups/${sealed}/close`, { body: {} })).body.state).toBe('SEALED');
        const decided = await create('ALL_TERMINAL');
        expect((await at.api('POST', `/task-groups/${decided}/close`, { body: {} })).body.state).toBe('DECIDED');
        const open2 = await create('FIRST_ACCEPTED');
        const ids = (res: Reply) => res.body.items.map((g: { id: string }) => g.id);

        const all = await at.api('GET', '/task-groups');
        expect(ids(all)).toEqual([open, sealed, decided, open2]);
        expect(all.body.nextCursor).toBeNull();
        expect(all.body.items[1]).toMatchObject({ state: 'SEALED', members: [{ taskState: 'PENDING', verdict: 'PENDING' }] });

        const page1 = await at.api('GET', '/task-groups?limit=3');
        expect(ids(page1)).toEqual([open, sealed, decided]);
        const page2 = await at.api('GET', `/task-groups?limit=3&cursor=${page1.body.nextCursor}`);
        expect(ids(page2)).toEqual([open2]);
        expect(page2.body.nextCursor).toBeNull();

        expect(ids(await at.api('GET', '/task-groups?state=OPEN'))).toEqual([open, open2]);
        expect(ids(await at.api('GET', '/task-groups?state=OPEN,SEALED'))).toEqual([open, sealed, open2]);
        const onePerPage = await at.api('GET', '/task-groups?state=OPEN,DECIDED&limit=1');
        expect(ids(onePerPage)).toEqual([open]);
        expect(ids(await at.api('GET', `/task-groups?state=OPEN,DECIDED&limit=2&cursor=${onePerPage.body.nextCursor}`))).toEqual([decided, open2]);
        expect(ids(await at.api('GET', '/task-groups?state=DECIDED'))).toEqual([decided]);

        for (const q of ['state=CLOSED', 'state=open', 'state=', 'limit=0', 'limit=501', 'cursor=bogus']) {
          expectError(await at.api('GET', `/task-groups?${q}`), 400, 'VALIDATION_FAILED');
        }
      } finally {
        await own.close();
      }
    });
  });
});
