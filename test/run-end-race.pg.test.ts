import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { Store } from '@baton/core';
import { openStore } from '@baton-coordination/server/store/open-store';
import { PlantedStore } from '../sim/src/bugs/planted-store';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';
import { idem, startTestServer, type Reply, type TestServer } from './support/server';

/**
 * A run's end and work created under it are serialized (docs/design/0019-runs.md, docs/lock-order.md): the
 * work reads the run FOR SHARE before anything else, an end locks it FOR UPDATE. So work
 * either commits before the end takes the run, and the cancel's cascade sees it, or reads the
 * ended run and is refused: never an ACTIVE task under a CANCELLED run. Real concurrency on one
 * PostgreSQL; the planted run-guard-skips-lock shows the race the lock closes.
 */
const rounds = Number(process.env.RACE_ROUNDS ?? 20);
const submitsPerRound = 6;

describe.runIf(postgresUrl())('a run ending while work is created under it on PostgreSQL', () => {
  let db: TestDatabase;
  let store: Store;
  let server: TestServer;
  let holder: pg.Client;
  let box: string;
  /** The planted run-guard-skips-lock, at the store seam: the run governing new work is read without its share lock. */
  let skipRunLock = false;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await openStore({ kind: 'postgres', url: db.url, poolMax: submitsPerRound + 4 });
    server = await startTestServer(new PlantedStore(store, (tx) => (skipRunLock ? { runs: { governing: (spaceId, scopeId) => tx.runs.get(spaceId, scopeId) } } : {})));
    holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    box = (await server.api('POST', '/mailboxes', { body: { name: 'race-box', backlogLimit: 100_000 }, idem: idem() })).body.id;
  });
  afterAll(async () => {
    await holder?.end();
    await server?.close();
    await store?.close();
    await db?.drop();
  });

  const newRun = async (): Promise<string> => (await server.api('POST', '/runs', { body: {}, idem: idem() })).body.scopeId as string;
  const submit = (scopeId: string): Promise<Reply> => server.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: `race-${idem()}` }, idem: idem() });
  const liveUnder = async (scopeId: string): Promise<number> => {
    const page = await server.api('GET', `/tasks?scopeId=${scopeId}&state=PENDING,RUNNING&limit=100`);
    return page.body.items.length as number;
  };

  it('a submit that meets an end in progress waits for it, then answers 409 with the state it committed', async () => {
    const scopeId = await newRun();
    // Stands for a cancel between its lock of the run and its commit.
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM runs WHERE scope_id = $1 FOR UPDATE', [scopeId]);
    await holder.query(`UPDATE runs SET state = 'CANCELLED', cascade_pending = true, ended_at = now() WHERE scope_id = $1`, [scopeId]);
    const submitting = submit(scopeId);
    await untilWaitingOnLock(holder);
    await holder.query('COMMIT');
    expect((await submitting).body.error).toMatchObject({ code: 'CONFLICT', message: `run ${scopeId} is CANCELLED: it takes no new work` });
  });

  it('a cancel that meets a submit in progress waits for it, and its cascade cancels the submitted task', async () => {
    const scopeId = await newRun();
    // Stands for a submit between its read of the run and its commit.
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM runs WHERE scope_id = $1 FOR SHARE', [scopeId]);
    const cancelling = server.api('POST', `/runs/${scopeId}/cancel`, { idem: idem() });
    await untilWaitingOnLock(holder);
    const submitted = await submit(scopeId);
    expect(submitted.statusCode).toBe(201);
    await holder.query('COMMIT');
    expect((await cancelling).body).toMatchObject({ state: 'CANCELLED' });
    expect((await server.api('GET', `/tasks/${submitted.body.taskId}`)).body).toMatchObject({ state: 'CANCELLED', failureReason: 'RUN_CANCELLED' });
  });

  /**
   * One run, several submits under it and its cancel, the cancel sent `offsetMs` after the
   * submits (before them when negative), so that rounds meet either order and the race between,
   * however loaded the machine; what is left live under the run after its cascade.
   */
  const raceRound = async (offsetMs = 0): Promise<{ live: number; statuses: number[] }> => {
    const scopeId = await newRun();
    const pause = () => new Promise((resolve) => setTimeout(resolve, Math.abs(offsetMs)));
    const cancel = () => server.api('POST', `/runs/${scopeId}/cancel`, { idem: idem() });
    const submitAll = () => Array.from({ length: submitsPerRound }, () => submit(scopeId));
    let replies: Reply[];
    if (offsetMs < 0) {
      const cancelled = cancel();
      await pause();
      replies = await Promise.all([...submitAll(), cancelled]);
    } else {
      const submits = submitAll();
      if (offsetMs > 0) await pause();
      replies = await Promise.all([...submits, cancel()]);
    }
    await server.baton.deps.runDueWork();
    return { live: await liveUnder(scopeId), statuses: replies.map((r) => r.statusCode) };
  };

  it('leaves no live task under a cancelled run, however submits and the cancel interleave', async () => {
    const statuses: number[] = [];
    const cancelOffsetsMs = [-5, -1, 0, 1, 5];
    for (let round = 0; round < rounds; round++) {
      const raced = await raceRound(cancelOffsetsMs[round % cancelOffsetsMs.length]);
      expect(raced.live, `round ${round}: ${JSON.stringify(raced.statuses)}`).toBe(0);
      statuses.push(...raced.statuses);
    }
    // Both outcomes happened: submits before the cancel (then cancelled by it) and after (refused).
    expect(statuses).toContain(201);
    expect(statuses).toContain(409);
  }, 120_000);

  it('catches the race when the run is read without its lock (planted run-guard-skips-lock): a live task under a cancelled run', async () => {
    skipRunLock = true;
    try {
      let caught = false;
      for (let round = 0; round < 60 && !caught; round++) caught = (await raceRound()).live > 0;
      expect(caught, 'no task outlived its run in 60 racing rounds without the lock').toBe(true);
    } finally {
      skipRunLock = false;
    }
  }, 120_000);
});

/** Until some other backend of this database waits on a lock. */
async function untilWaitingOnLock(client: pg.Client): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (rows[0].n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('nothing waited on the held run');
}
