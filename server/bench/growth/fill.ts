/**
 * Fills a level's tables fast and exactly as the service would: one template task is made through
 * the API (submit, and for finished rows admit and complete too), then its rows are cloned with
 * set-based SQL, INSERT ... SELECT over generate_series. Each clone is the template's row with
 * the template's ids, task key and idempotency keys replaced by the clone's own (in every column,
 * JSON bodies and event data included) and its times moved back by its number in milliseconds, so
 * a clone is what the same request with other ids would have written. Identity, generated and
 * sequence-defaulted columns (messages.seq, events.event_id and tx, tasks.live_deadline) take
 * their own values, and every row goes in through a plain INSERT, so triggers (counts or
 * summaries kept by the database) see each clone as they see a request's rows.
 *
 * What is not the service's own: the clones' fingerprints (a hash of the request) are the
 * template's, so they match another body than the clone's; nothing measured here reads them.
 */
import pg from 'pg';
import { BenchFailure } from '../harness';
import type { Client } from './api';

/** Tables a template task writes rows into, cloned in this order. */
const clonedTables = ['tasks', 'messages', 'events', 'idempotency_keys'] as const;

/** Rows a template wrote, by table: the xmin of every row it inserted or updated is newer than the fill's marker. */
interface Template {
  taskId: string;
  messageId: string;
  taskKey: string;
  mailboxId: string;
  rowsPerTable: Record<string, number>;
  /** Tables outside clonedTables that gained rows from the template: triggers keep them, or the fill is wrong. */
  notCloned: Record<string, number>;
}

export interface FillSpec {
  /** Clones (besides the template) land in these mailboxes, round robin. */
  mailboxIds: string[];
  scopeId: string;
  /** READY tasks, or tasks taken through admit and complete (SUCCEEDED, ACKED). */
  finished: boolean;
  total: number;
  /** Tells this fill's ids and keys apart from other fills in the database. */
  label: string;
}

export interface FillResult {
  seconds: number;
  rowsPerTask: Record<string, number>;
  notCloned: Record<string, number>;
  /** A clone's task id (the middle one), for the validation reads. */
  sampleTaskId: string;
}

/** A v4-shaped UUID from md5: version nibble 4, variant 8, as z.uuid() accepts. */
const uuidSql = (seed: string) =>
  `(SELECT substr(h,1,8)||'-'||substr(h,9,4)||'-4'||substr(h,14,3)||'-8'||substr(h,18,3)||'-'||substr(h,21,12) FROM (SELECT md5(${seed}) AS h) u)`;

async function userTables(db: pg.Client): Promise<string[]> {
  const { rows } = await db.query(
    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1",
  );
  return rows.map((r) => r.relname as string);
}

/** Columns an INSERT gives values to: not identity, not generated, not defaulted from a sequence or the transaction. */
async function insertableColumns(db: pg.Client, table: string): Promise<Array<{ name: string; timestamp: boolean }>> {
  const { rows } = await db.query(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, pg_get_expr(d.adbin, d.adrelid) AS def, a.attidentity, a.attgenerated
       FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [table],
  );
  return rows
    .filter((r) => r.attidentity === '' && r.attgenerated === '' && !/nextval\(|pg_current|pg_snapshot/.test(r.def ?? ''))
    .map((r) => ({ name: r.name as string, timestamp: r.type === 'timestamp with time zone' }));
}

async function currentXid(db: pg.Client): Promise<bigint> {
  const { rows } = await db.query('SELECT pg_current_xact_id()::text AS x');
  return BigInt(rows[0].x);
}

/** Rows whose last write is newer than `xid` (a fresh database: no wraparound to mind). */
const newerThan = (xid: bigint) => `xmin::text::bigint > ${xid}`;

async function makeTemplate(db: pg.Client, api: Client, spec: FillSpec): Promise<Template> {
  const tables = await userTables(db);
  const marker = await currentXid(db);
  const taskKey = `growth-fill-${spec.label}-template`;
  const mailboxId = spec.mailboxIds[0]!;
  const submitted = (await api.post('/tasks', [201], { scopeId: spec.scopeId, mailboxId, taskKey, input: { fill: spec.label } }, taskKey)).body;
  let messageId: string;
  if (spec.finished) {
    const admitBody = { scopeId: spec.scopeId, mailboxId, holder: 'growth-filler', holderSession: `${taskKey}-session`, leaseSeconds: 120, waitMs: 0 };
    const admitted = (await api.post('/tasks/admit', [200], admitBody, `${taskKey}-admit`)).body;
    if (admitted.taskId !== submitted.taskId) throw new BenchFailure(`fill ${spec.label}: the template's admit took ${admitted.taskId}, not the template ${submitted.taskId}`);
    await api.post(`/messages/${admitted.messageId}/complete`, [200], { token: admitted.token });
    messageId = admitted.messageId;
  } else {
    const { rows } = await db.query('SELECT id FROM messages WHERE task_id = $1', [submitted.taskId]);
    if (rows.length !== 1) throw new BenchFailure(`fill ${spec.label}: the template task has ${rows.length} messages`);
    messageId = rows[0].id;
  }
  const rowsPerTable: Record<string, number> = {};
  const notCloned: Record<string, number> = {};
  for (const table of tables) {
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${newerThan(marker)}`);
    const n = rows[0].n as number;
    if (n === 0) continue;
    if ((clonedTables as readonly string[]).includes(table)) rowsPerTable[table] = n;
    else notCloned[table] = n;
  }
  // Mark the template's rows so the clone statements find them (and nothing written later).
  await db.query(`CREATE TEMP TABLE IF NOT EXISTS growth_template (tbl text, row_ctid tid, ord bigint)`);
  await db.query('TRUNCATE growth_template');
  for (const table of Object.keys(rowsPerTable)) {
    const ord = table === 'events' ? 'event_id' : '0';
    await db.query(`INSERT INTO growth_template SELECT $1, ctid, ${ord} FROM ${table} WHERE ${newerThan(marker)}`, [table]);
  }
  return { taskId: submitted.taskId, messageId, taskKey, mailboxId, rowsPerTable, notCloned };
}

/** Clones g = from..to of the template into `table`, in one statement. */
async function cloneRows(db: pg.Client, table: string, t: Template, spec: FillSpec, from: number, to: number): Promise<number> {
  const columns = await insertableColumns(db, table);
  const shift = "(x.g * interval '1 millisecond')";
  const select = columns.map((c) => (c.timestamp ? `(x.r).${c.name} - ${shift}` : `(x.r).${c.name}`)).join(', ');
  // Replace the template's ids in the row's JSON text (every column at once), then read the row back.
  const salt = `'${spec.label}-'`;
  let text = 'tpl.j';
  text = `replace(${text}, $1, ${uuidSql(`${salt} || 't' || g`)})`;
  text = `replace(${text}, $2, ${uuidSql(`${salt} || 'm' || g`)})`;
  text = `replace(${text}, $3, 'growth-fill-${spec.label}-' || g)`;
  text = `replace(${text}, $4, ($5::text[])[1 + g % ${spec.mailboxIds.length}])`;
  const sql = `INSERT INTO ${table} (${columns.map((c) => c.name).join(', ')})
    SELECT ${select} FROM (
      SELECT g, json_populate_record(NULL::${table}, ${text}::json) AS r
        FROM generate_series($6::int, $7::int) g
        CROSS JOIN (SELECT row_to_json(s)::text AS j, m.ord FROM ${table} s JOIN growth_template m ON m.tbl = '${table}' AND m.row_ctid = s.ctid) tpl
       ORDER BY g, tpl.ord) x`;
  const result = await db.query(sql, [t.taskId, t.messageId, t.taskKey, t.mailboxId, spec.mailboxIds, from, to]);
  return result.rowCount ?? 0;
}

/** Fills, VACUUM ANALYZEs and checkpoints; `log` reports progress. */
export async function fill(dbUrl: string, api: Client, spec: FillSpec, log: (line: string) => void): Promise<FillResult> {
  const started = performance.now();
  const db = new pg.Client({ connectionString: dbUrl });
  await db.connect();
  try {
    await db.query("SET statement_timeout = 0; SET maintenance_work_mem = '512MB'; SET work_mem = '64MB'");
    const t = await makeTemplate(db, api, spec);
    log(`template rows per task: ${JSON.stringify(t.rowsPerTable)}${Object.keys(t.notCloned).length ? `; left to triggers: ${JSON.stringify(t.notCloned)}` : ''}`);
    const chunk = 100_000;
    for (let from = 1; from < spec.total; from += chunk) {
      const to = Math.min(spec.total - 1, from + chunk - 1);
      await db.query('BEGIN');
      for (const table of clonedTables) {
        const expected = t.rowsPerTable[table];
        if (expected === undefined) continue;
        const n = await cloneRows(db, table, t, spec, from, to);
        if (n !== expected * (to - from + 1)) throw new BenchFailure(`fill ${spec.label}: ${table} got ${n} rows, expected ${expected * (to - from + 1)}`);
      }
      await db.query('COMMIT');
      log(`${to + 1} of ${spec.total} tasks (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }
    const middle = Math.max(1, Math.floor(spec.total / 2));
    const { rows } = await db.query(`SELECT ${uuidSql(`'${spec.label}-t' || $1::int`)} AS id`, [middle]);
    return { seconds: (performance.now() - started) / 1000, rowsPerTask: t.rowsPerTable, notCloned: t.notCloned, sampleTaskId: spec.total > 1 ? rows[0].id : t.taskId };
  } finally {
    await db.end();
  }
}

/** After every fill of a level: fresh statistics and visibility maps, and no checkpoint debt left for the measured phases. */
export async function settle(dbUrl: string): Promise<number> {
  const started = performance.now();
  const db = new pg.Client({ connectionString: dbUrl });
  await db.connect();
  try {
    await db.query('SET statement_timeout = 0');
    await db.query('VACUUM ANALYZE');
    await db.query('CHECKPOINT');
  } finally {
    await db.end();
  }
  return (performance.now() - started) / 1000;
}
