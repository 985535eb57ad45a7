/**
 * `npx tsx --conditions=@baton/source server/bench/inject-floor.ts [requests]`: what one
 * in-process request costs in CPU, the floor under the simulator's rate (docs/benchmarks.md,
 * "Simulator"). The simulator drives the real routes through Fastify's `inject`, so no seed can
 * run faster than these; 20,000 simulated requests per second on one core leaves 50 us per
 * request for everything: the HTTP layer, Baton's hooks and core, the memory store, the
 * simulated network, the agents and the invariant checks.
 *
 * Rows: a bare Fastify app with one route (the framework's floor), then Baton on the memory store
 * (`/healthz`, which skips auth and the store; a budget read; a reserve, which writes, journals
 * and stores its idempotent reply). CPU time of this process per request (user + system), after
 * a warm-up, one request at a time.
 */
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { ManualClock, MemoryStore, SeededRandom } from '@baton/core';
import { createBaton } from '../src/host/baton';

const requests = Number(process.argv[2] ?? 20_000);
const warmup = Math.min(2_000, requests);
const adminToken = 'bench-admin';

async function cpuPerRequestUs(send: () => Promise<{ statusCode: number; body: string }>): Promise<number> {
  for (let i = 0; i < warmup; i++) await expectOk(send());
  const before = process.cpuUsage();
  for (let i = 0; i < requests; i++) await expectOk(send());
  const used = process.cpuUsage(before);
  return (used.user + used.system) / requests;
}

async function expectOk(reply: Promise<{ statusCode: number; body: string }>): Promise<void> {
  const { statusCode, body } = await reply;
  if (statusCode >= 300) throw new Error(`bench request answered ${statusCode}: ${body}`);
}

async function bareFastify(): Promise<number> {
  const app = Fastify();
  app.get('/healthz', async () => ({ ok: true }));
  await app.ready();
  try {
    return await cpuPerRequestUs(() => app.inject({ method: 'GET', url: '/healthz' }));
  } finally {
    await app.close();
  }
}

async function baton(): Promise<{ healthz: number; budgetRead: number; reserve: number }> {
  const instance = await createBaton({ store: new MemoryStore(), clock: new ManualClock(Date.UTC(2026, 0, 1)), random: new SeededRandom(1), adminToken });
  const app = instance.app;
  const call = async (method: 'GET' | 'POST', url: string, key: string, body?: object) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${key}`, 'idempotency-key': randomUUID() }, ...(body ? { payload: body } : {}) });
  const json = async (reply: ReturnType<typeof call>) => JSON.parse((await reply).body);
  try {
    // Uncapped, so 40,000 calls in one simulated minute are not refused for their rate.
    const uncapped = { requestsPerMinute: null, agentsAtOnce: null, activeTasks: null, activeRuns: null, operationsPerMonth: null, spaces: null, apiKeys: null };
    const org = await json(call('POST', '/admin/v1/orgs', adminToken, { name: 'bench', plan: 'ENTERPRISE', limits: uncapped }));
    const space = await json(call('POST', `/admin/v1/orgs/${org.id}/spaces`, adminToken, { name: 'main' }));
    const key = (await json(call('POST', `/admin/v1/orgs/${org.id}/keys`, adminToken, { name: 'bench' }))).secret as string;
    const base = `/v1/spaces/${space.id}`;
    const budget = await json(call('POST', `${base}/budgets`, key, { name: 'b', currency: 'USD', scale: 2, limitMinor: '900000000000' }));
    const scopeId = randomUUID();
    return {
      healthz: await cpuPerRequestUs(() => app.inject({ method: 'GET', url: '/healthz' })),
      budgetRead: await cpuPerRequestUs(() => call('GET', `${base}/budgets/${budget.id}`, key)),
      reserve: await cpuPerRequestUs(() => call('POST', `${base}/budgets/${budget.id}/reserve`, key, { scopeId, holder: 'bench', amountMinor: '1' })),
    };
  } finally {
    await instance.drainAndClose();
  }
}

const floor = await bareFastify();
const rows = await baton();
const line = (label: string, us: number) => console.log(`${label.padEnd(46)} ${us.toFixed(1).padStart(7)} us CPU  (at most ${Math.floor(1e6 / us).toLocaleString('en-US')}/s on one core)`);
console.log(`${requests.toLocaleString('en-US')} requests each, one at a time, in process:`);
line('bare Fastify, one route, inject', floor);
line('Baton GET /healthz (no auth, no store)', rows.healthz);
line('Baton GET /budgets/{id} (memory store)', rows.budgetRead);
line('Baton POST /budgets/{id}/reserve (memory store)', rows.reserve);
