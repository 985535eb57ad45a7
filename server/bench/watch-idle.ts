/**
 * `npx tsx --conditions=@baton/source server/bench/watch-idle.ts [watchers] [commits]`: what idle GET /watch long polls cost a
 * busy space (docs/benchmarks.md, "Idle watchers"). Parks `watchers` watches, then commits
 * `commits` barrier arrivals and budget creates, and counts the journal reads the watches made
 * (each wake-up re-reads) and the commit rate, for three filters:
 *
 * - `types=group.decided`: matches nothing the burst commits; parks on its type's topic.
 * - `scopeId=<another scope>`: likewise, parked on the scope's topic.
 * - `aggregate=barrier:<the barrier arrived at>&types=barrier.cancelled`: parks on the aggregate's
 *   topic, which every arrival publishes: the worst case, each commit wakes every watch once.
 *
 * Memory store, in-process (`inject`): the figure is the count of wake-ups, not a latency.
 */
import { randomUUID } from 'node:crypto';
import { LocalNotifier, ManualClock, maxBarrierTarget, MemoryStore, SeededRandom } from '@baton/core';
import { createBaton } from '../src/host/baton';

const watchers = Number(process.argv[2] ?? 1000);
const commits = Number(process.argv[3] ?? 500);
const adminToken = 'bench-admin';

async function run(label: string, filterOf: (ids: { barrierId: string; otherScope: string }) => string): Promise<void> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const baton = await createBaton({ store: new MemoryStore(), clock, random: new SeededRandom(1), adminToken });
  const call = async (method: 'GET' | 'POST', url: string, key: string, body?: object) => {
    const res = await baton.app.inject({ method, url, headers: { authorization: `Bearer ${key}`, 'idempotency-key': randomUUID() }, ...(body ? { payload: body } : {}) });
    return { statusCode: res.statusCode, body: JSON.parse(res.body) };
  };
  const org = await call('POST', '/admin/v1/orgs', adminToken, { name: 'bench', plan: 'TEAM' });
  const space = await call('POST', `/admin/v1/orgs/${org.body.id}/spaces`, adminToken, { name: 'main' });
  const key = (await call('POST', `/admin/v1/orgs/${org.body.id}/keys`, adminToken, { name: 'bench' })).body.secret as string;
  const base = `/v1/spaces/${space.body.id}`;
  const barrier = await call('POST', `${base}/barriers`, key, { scopeId: randomUUID(), target: maxBarrierTarget });
  const filter = filterOf({ barrierId: barrier.body.id, otherScope: randomUUID() });

  let reads = 0;
  const store = baton.deps.store;
  const read = store.read.bind(store);
  store.read = (work) => (reads++, read(work));
  const notifier = baton.deps.notifier as LocalNotifier;
  const polls = Array.from({ length: watchers }, () => call('GET', `${base}/watch?${filter}&waitSeconds=30`, key));
  while (notifier.parked < watchers) await new Promise((r) => setTimeout(r, 5));
  const readsParked = reads;

  const t0 = performance.now();
  for (let i = 0; i < commits; i++) {
    const res = i % 2 === 0
      ? await call('POST', `${base}/barriers/${barrier.body.id}/arrive`, key, { arrivalKey: `a${i}` })
      : await call('POST', `${base}/budgets`, key, { name: `b${i}`, currency: 'USD', scale: 2, limitMinor: '100' });
    if (res.statusCode >= 300) throw new Error(`commit ${i}: ${JSON.stringify(res.body)}`);
  }
  // Let woken watches finish their re-reads before counting.
  await new Promise((r) => setTimeout(r, 200));
  const seconds = (performance.now() - t0 - 200) / 1000;
  const wakeReads = reads - readsParked - 0;
  console.log(`${label}: ${watchers} watchers, ${commits} commits: ${wakeReads} watch reads during the burst (${(wakeReads / commits).toFixed(2)} per commit), ${Math.round(commits / seconds)} commits/s, ${notifier.parked} waits still parked`);
  clock.advance(30_000);
  await Promise.all(polls);
  await baton.drainAndClose();
}

await run('types=group.decided', () => 'types=group.decided');
await run('scopeId=<another scope>', ({ otherScope }) => `scopeId=${otherScope}`);
await run('aggregate=barrier:<hit>&types=barrier.cancelled', ({ barrierId }) => `aggregate=barrier:${barrierId}&types=barrier.cancelled`);
