import { randomUUID } from 'node:crypto';
import type { Permission } from '@baton/core';
import type { Reply, TestServer } from './server';
import { allPermissions, type Kind } from './isolation-routes';

/**
 * The tenant side of the isolation matrix: organizations made through the operator API, one of
 * every resource kind in a space, and a valid body for every /v1 route that takes one.
 */

/** Every secret the scenario handles, for the log scan: key secrets, tokens, signing secrets. */
export class SecretBook {
  readonly values = new Set<string>();
  add(...values: Array<string | undefined>): void {
    for (const value of values) if (value) this.values.add(value);
  }
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  idem?: string;
}

export type Call = (method: string, spaceId: string, path: string, options?: CallOptions) => Promise<Reply>;

/** A /v1/spaces call with the given key (none when null), always with an Idempotency-Key on writes. */
export function caller(server: TestServer): Call {
  return (method, spaceId, path, options = {}) => {
    const headers: Record<string, string> = {};
    if (options.key) headers.authorization = `Bearer ${options.key}`;
    if (method !== 'GET') headers['idempotency-key'] = options.idem ?? `iso-${randomUUID()}`;
    return server.inject(method, `/v1/spaces/${spaceId}${path}`, headers, options.body);
  };
}

export interface Tenant {
  orgId: string;
  spaceIds: string[];
  /** A key with all four permissions in every space. */
  key: string;
  /** A key with exactly `permissions`, limited to `spaceIds` when given; one per distinct ask. */
  keyWith(permissions: readonly Permission[], spaceIds?: string[]): Promise<string>;
  /** A key that was used once and then revoked. */
  revokedKey(): Promise<string>;
}

/** An organization on SCALE (so the matrix stays far from the request rate) with `spaces` spaces. */
export async function createTenant(server: TestServer, name: string, spaces: number, book: SecretBook): Promise<Tenant> {
  const org = await expectStatus(server.admin('POST', '/orgs', { name, plan: 'SCALE' }), 201, `org ${name}`);
  const spaceIds: string[] = [];
  for (let i = 1; i <= spaces; i++) spaceIds.push((await expectStatus(server.admin('POST', `/orgs/${org.id}/spaces`, { name: `${name}-${i}` }), 201, 'space')).id);
  const made = new Map<string, string>();
  const createKey = async (body: object): Promise<{ id: string; secret: string }> => {
    const key = await expectStatus(server.admin('POST', `/orgs/${org.id}/keys`, { name: `${name}-key`, ...body }), 201, 'key');
    book.add(key.secret);
    return key;
  };
  const keyWith = async (permissions: readonly Permission[], limitedTo?: string[]): Promise<string> => {
    const id = `${[...permissions].sort().join(',')}|${limitedTo?.join(',') ?? '*'}`;
    if (!made.has(id)) made.set(id, (await createKey({ permissions, ...(limitedTo ? { spaceIds: limitedTo } : {}) })).secret);
    return made.get(id)!;
  };
  const revokedKey = async (): Promise<string> => {
    const key = await createKey({});
    // Used once first, so the server's credential cache holds it when it is revoked.
    await expectStatus(server.inject('GET', `/v1/spaces/${spaceIds[0]}/budgets`, { authorization: `Bearer ${key.secret}` }), 200, 'key before revoke');
    await expectStatus(server.admin('POST', `/keys/${key.id}/revoke`), 200, 'revoke');
    return key.secret;
  };
  return { orgId: org.id, spaceIds, key: await keyWith(allPermissions), keyWith, revokedKey };
}

export interface Fixture {
  spaceId: string;
  /** The scopeId of the tenant's run; its work lives under it. */
  scopeId: string;
  ids: Record<Kind, string>;
  /** Names that task requirements refer to (names are per space, so they are references too). */
  names: { pool: string; workLimit: string; allowance: string; budget: string };
  /** Live lease tokens: a cross-tenant call carries the real token, the strongest guess there is. */
  tokens: { message: string; claim: string };
  /** The create bodies, by route key, for the natural-key checks. */
  creates: Record<string, unknown>;
  /** Every id the fixture made, for the scans of A's replies. */
  allIds: string[];
}

/**
 * One of every resource kind in `spaceId`: the message and the claim are held (live tokens), the
 * task is PENDING with a subscriber, the waiter WAITING, the group OPEN, the timer ARMED. Names
 * carry `label` so requirements can name the other tenant's. Idempotency-Keys are the same for
 * every tenant: a second tenant's fixture gets 201s only if those keys are kept per space.
 */
export async function populate(call: Call, key: string, spaceId: string, label: string, book: SecretBook): Promise<Fixture> {
  const creates: Record<string, unknown> = {};
  const allIds: string[] = [];
  const step = async (name: string, method: string, path: string, body: unknown, status = 201): Promise<any> => {
    const reply = await call(method, spaceId, path, { key, body, idem: `fixture-${name}` });
    if (reply.statusCode !== status || reply.headers['idempotent-replayed']) {
      throw new Error(`fixture ${label}: ${name} answered ${reply.statusCode} ${JSON.stringify(reply.body)} (replayed: ${String(reply.headers['idempotent-replayed'])})`);
    }
    if (method === 'POST' && !path.includes('/', 1)) creates[`POST ${path}`] = body;
    if (typeof reply.body?.id === 'string') allIds.push(reply.body.id);
    return reply.body;
  };
  const scopeId = randomUUID();
  const worker = { holder: `${label}-worker`, holderSession: `${label}-session` };
  const names = { pool: `${label}-gpu`, workLimit: `${label}-slots`, allowance: `${label}-tokens`, budget: `${label}-usd` };

  await step('run', 'POST', '/runs', { scopeId, name: `${label}-run` });
  const mailbox = await step('mailbox', 'POST', '/mailboxes', { name: `${label}-jobs` });
  const pool = await step('pool', 'POST', '/pools', { name: names.pool, capacity: 2 });
  const workLimit = await step('work-limit', 'POST', '/work-limits', { name: names.workLimit, maxConcurrent: 2 });
  const allowance = await step('allowance', 'POST', '/allowances', { name: names.allowance, unitsLimit: 1, windowSeconds: 3600 });
  const budget = await step('budget', 'POST', '/budgets', { name: names.budget, currency: 'USD', scale: 2, limitMinor: '100000' });
  const reservation = await step('reserve', 'POST', `/budgets/${budget.id}/reserve`, { scopeId, holder: worker.holder, amountMinor: '100' });
  // The window's one unit is spent, so the waiter stays WAITING.
  await step('consume', 'POST', `/allowances/${allowance.id}/consume`, { scopeId, units: 1, holder: worker.holder });
  const waiter = await step('wait', 'POST', `/allowances/${allowance.id}/wait`, { scopeId, units: 1, holder: worker.holder });
  const barrier = await step('barrier', 'POST', '/barriers', { scopeId, target: 2 });
  await step('arrive', 'POST', `/barriers/${barrier.id}/arrive`, { arrivalKey: `${label}-first` }, 200);
  await step('send-1', 'POST', `/mailboxes/${mailbox.id}/messages`, { scopeId, payload: { n: 1 } });
  await step('send-2', 'POST', `/mailboxes/${mailbox.id}/messages`, { scopeId, payload: { n: 2 } });
  const received = await step('recv', 'POST', `/mailboxes/${mailbox.id}/recv`, { scopeId, ...worker }, 200);
  await step('renew', 'POST', `/messages/${received.messageId}/renew`, { token: received.token, leaseSeconds: 600 }, 200);
  // A task run to the end: admit's token and complete's body go through the log too.
  await step('task-done', 'POST', '/tasks', { scopeId, mailboxId: mailbox.id, taskKey: `${label}-done`, input: { n: 0 } });
  const admitted = await step('admit', 'POST', '/tasks/admit', { scopeId, mailboxId: mailbox.id, ...worker }, 200);
  await step('complete', 'POST', `/messages/${admitted.messageId}/complete`, { token: admitted.token, result: { payload: { ok: true } } }, 200);
  const task = await step('task', 'POST', '/tasks', { scopeId, mailboxId: mailbox.id, taskKey: `${label}-pending`, input: { n: 1 }, subscriberId: 'owner' });
  const group = await step('group', 'POST', '/task-groups', { mailboxId: mailbox.id, condition: 'ALL_TERMINAL', parentScopeId: scopeId });
  await step('member', 'POST', `/task-groups/${group.groupId}/tasks`, { taskKey: `${label}-member`, input: { n: 2 } });
  const claim = await step('claim', 'POST', '/claims', { claimKey: 'shared-lock', scopeId, ...worker, leaseSeconds: 600 });
  await step('claim-renew', 'POST', `/claims/${claim.id}/renew`, { token: claim.token, leaseSeconds: 600 }, 200);
  const timer = await step('timer', 'POST', '/timers', { timerKey: 'shared-tick', scopeId, delaySeconds: 3600, mailboxId: mailbox.id, payload: { tick: true } });
  const destination = await step('destination', 'POST', '/destinations', { url: `https://hooks.example.com/${label}` });
  book.add(received.token, admitted.token, claim.token, destination.signingSecret);
  allIds.push(received.messageId, admitted.messageId, task.taskId, group.groupId, group.scopeId, scopeId, reservation.id, waiter.id);

  return {
    spaceId,
    scopeId,
    ids: {
      budget: budget.id, reservation: reservation.id, barrier: barrier.id, claim: claim.id, timer: timer.id, task: task.taskId, group: group.groupId,
      pool: pool.id, workLimit: workLimit.id, allowance: allowance.id, waiter: waiter.id, mailbox: mailbox.id, message: received.messageId,
      destination: destination.id, run: scopeId,
    },
    names,
    tokens: { message: received.token, claim: claim.token },
    creates,
    allIds,
  };
}

/** What a body builder gets: the fixture each slot takes its resource from, and a fresh uuid. */
export interface BodyContext {
  /** The caller's own fixture (scopes and the like that name no other tenant's resource). */
  own: Fixture;
  /** A's fixture for a slot, B's in the cells that test that slot. */
  from(slot: string): Fixture;
  fresh: string;
}

export interface BodySpec {
  body(c: BodyContext): unknown;
  /** The body's slots sit in items whose replies are per item (a 200 batch with a 404 item). */
  itemReplies?: boolean;
}

const intruder = { holder: 'intruder', holderSession: 'intruder-session' };

/** A submit naming every resource a task can refer to, each its own slot. */
const taskBody = (c: BodyContext) => ({
  scopeId: c.own.scopeId,
  mailboxId: c.from('mailboxId').ids.mailbox,
  taskKey: `job-${c.fresh}`,
  requirements: {
    pools: [{ name: c.from('requirements.pool').names.pool, units: 1 }],
    quotas: [{ name: c.from('requirements.quota').names.allowance, units: 1 }],
    budgets: [{ name: c.from('requirements.budget').names.budget, reserveMinor: '1' }],
  },
  workLimit: c.from('workLimit').names.workLimit,
});

const fixed = (body: unknown): BodySpec => ({ body: () => body });

/**
 * A valid body for every /v1 route whose OpenAPI operation takes one, so a call gets past
 * validation to the lookups. Ids in bodies are slots like path ids: `from(slot)` picks the tenant.
 */
export const bodies: Record<string, BodySpec> = {
  'POST /budgets': { body: (c) => ({ name: `budget-${c.fresh}`, currency: 'USD', scale: 2, limitMinor: '1000' }) },
  'POST /budgets/:id/reserve': { body: (c) => ({ scopeId: c.from('id').scopeId, holder: 'intruder', amountMinor: '1' }) },
  'POST /budgets/:id/settle': { body: (c) => ({ reservationId: c.from('reservationId').ids.reservation, amountMinor: '1', workKey: `settle-${c.fresh}` }) },
  'POST /budgets/:id/void': { body: (c) => ({ reservationId: c.from('reservationId').ids.reservation, workKey: `void-${c.fresh}` }) },
  'POST /barriers': { body: (c) => ({ scopeId: c.own.scopeId, target: 2 }) },
  'POST /barriers/:id/arrive': { body: (c) => ({ arrivalKey: `arrive-${c.fresh}` }) },
  'POST /barriers/:id/nextEpoch': fixed({}),
  'POST /claims': { body: (c) => ({ claimKey: `lock-${c.fresh}`, scopeId: c.own.scopeId, ...intruder }) },
  'POST /claims/:id/renew': { body: (c) => ({ token: c.from('id').tokens.claim }) },
  'POST /claims/:id/release': { body: (c) => ({ token: c.from('id').tokens.claim }) },
  'POST /timers': { body: (c) => ({ timerKey: `tick-${c.fresh}`, scopeId: c.own.scopeId, delaySeconds: 60, mailboxId: c.from('mailboxId').ids.mailbox, payload: {} }) },
  'POST /pools': { body: (c) => ({ name: `pool-${c.fresh}`, capacity: 1 }) },
  'POST /work-limits': { body: (c) => ({ name: `limit-${c.fresh}`, maxConcurrent: 1 }) },
  'POST /allowances': { body: (c) => ({ name: `quota-${c.fresh}`, unitsLimit: 1, windowSeconds: 60 }) },
  'POST /allowances/:id/consume': { body: (c) => ({ scopeId: c.from('id').scopeId, units: 1, holder: 'intruder' }) },
  'POST /allowances/:id/wait': { body: (c) => ({ scopeId: c.from('id').scopeId, units: 1, holder: 'intruder' }) },
  'POST /allowances/:id/cooldown': fixed({ seconds: 60 }),
  'POST /mailboxes': { body: (c) => ({ name: `mailbox-${c.fresh}` }) },
  'POST /mailboxes/:id/messages': { body: (c) => ({ scopeId: c.from('id').scopeId, payload: { intruder: true } }) },
  'POST /mailboxes/:id/messages/send-batch': { body: (c) => ({ messages: [{ scopeId: c.from('id').scopeId, payload: { intruder: true } }] }) },
  'POST /mailboxes/:id/recv': { body: (c) => ({ scopeId: c.from('id').scopeId, ...intruder }) },
  'POST /mailboxes/:id/recv-batch': { body: (c) => ({ scopeId: c.from('id').scopeId, ...intruder, maxMessages: 2 }) },
  'POST /messages/:id/renew': { body: (c) => ({ token: c.from('id').tokens.message }) },
  'POST /messages/:id/complete': {
    // The result names a mailbox too: publishing into another tenant's mailbox must fail as well.
    body: (c) => ({ token: c.from('id').tokens.message, result: { mailboxId: c.from('result.mailboxId').ids.mailbox, scopeId: c.own.scopeId, payload: {} } }),
  },
  'POST /messages/:id/nack': { body: (c) => ({ token: c.from('id').tokens.message, retry: true }) },
  'POST /messages/complete-batch': { itemReplies: true, body: (c) => ({ items: [{ messageId: c.from('items.messageId').ids.message, token: c.from('items.messageId').tokens.message }] }) },
  'POST /messages/nack-batch': { itemReplies: true, body: (c) => ({ items: [{ messageId: c.from('items.messageId').ids.message, token: c.from('items.messageId').tokens.message, retry: true }] }) },
  'POST /messages/renew-batch': { itemReplies: true, body: (c) => ({ items: [{ messageId: c.from('items.messageId').ids.message, token: c.from('items.messageId').tokens.message }] }) },
  'POST /tasks': { body: taskBody },
  'POST /tasks/submit-batch': { itemReplies: true, body: (c) => ({ tasks: [taskBody(c)] }) },
  'POST /tasks/admit': { body: (c) => ({ scopeId: c.from('mailboxId').scopeId, mailboxId: c.from('mailboxId').ids.mailbox, ...intruder }) },
  'POST /tasks/admit-batch': { body: (c) => ({ scopeId: c.from('mailboxId').scopeId, mailboxId: c.from('mailboxId').ids.mailbox, ...intruder, maxTasks: 2 }) },
  'POST /tasks/:id/cancel': fixed({ reason: 'intruder' }),
  'POST /tasks/:id/join': { body: (c) => ({ subscriberId: 'intruder', scopeId: c.from('id').scopeId }) },
  // The fixture's task has subscriber `owner`: a leak would detach it, which B's view would show.
  'POST /tasks/:id/detach': fixed({ subscriberId: 'owner' }),
  'POST /task-groups': { body: (c) => ({ mailboxId: c.from('mailboxId').ids.mailbox, condition: 'ALL_TERMINAL' }) },
  'POST /task-groups/:id/tasks': { body: (c) => ({ taskKey: `member-${c.fresh}` }) },
  'POST /task-groups/:id/join-task': { body: (c) => ({ taskId: c.from('taskId').ids.task }) },
  'PUT /limits': fixed({ maxBacklog: 1000 }),
  'POST /destinations': { body: (c) => ({ url: `https://hooks.example.com/${c.fresh}` }) },
  'POST /runs': { body: (c) => ({ scopeId: c.fresh, parentScopeId: c.from('parentScopeId').ids.run }) },
};

/** The body slots of a route: the names its builder asks `from` for. */
export function bodySlots(spec: BodySpec | undefined, own: Fixture): string[] {
  if (!spec) return [];
  const slots = new Set<string>();
  spec.body({ own, fresh: randomUUID(), from: (slot) => (slots.add(slot), own) });
  return [...slots];
}

async function expectStatus(reply: Promise<Reply>, status: number, what: string): Promise<any> {
  const res = await reply;
  if (res.statusCode !== status) throw new Error(`${what}: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}
