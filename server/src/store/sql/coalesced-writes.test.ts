import { describe, expect, it } from 'vitest';
import { CoalescingQueryable, coalescedWrite, combinedStatement, type Coalescible } from './coalesced-writes';
import type { SqlParam, SqlQueryable } from './driver';

/** Records what reaches the connection, in order. */
function recording(): { q: SqlQueryable; sent: string[] } {
  const sent: string[] = [];
  const q: SqlQueryable = {
    query: async <R>(text: string) => {
      sent.push(text);
      return [] as R[];
    },
    write: async (text: string) => {
      sent.push(text);
    },
    exec: async (script: string) => {
      sent.push(script);
    },
  };
  return { q, sent };
}

const kind = (key: string, heldToCommit = false): Coalescible<string> => ({
  key,
  heldToCommit,
  statement: (rows: readonly string[]) => ({ dml: `${key}(${rows.join(',')})`, params: [] as SqlParam[] }),
});

describe('coalesced writes', () => {
  it('send held writes of a kind as one statement, before the next statement', async () => {
    const { q, sent } = recording();
    const c = new CoalescingQueryable(q);
    const update = kind('update');
    await coalescedWrite(c, update, 'a');
    await coalescedWrite(c, update, 'b');
    await c.query('SELECT 1');
    await c.finish();
    expect(sent).toEqual(['update(a,b)', 'SELECT 1']);
  });

  it('flush what is held before a row is written twice', async () => {
    const { q, sent } = recording();
    const c = new CoalescingQueryable(q);
    const update = kind('update');
    await coalescedWrite(c, update, 'a', 'row-1');
    await coalescedWrite(c, update, 'b', 'row-1');
    await c.finish();
    expect(sent).toEqual(['update(a)', 'update(b)']);
  });

  it('hold a kind marked heldToCommit past reads and writes, and send it last, in a statement after the other kinds', async () => {
    // The journal's appends: their positions must be drawn after everything the transaction saw,
    // including a lock the last held writes wait out (a statement's snapshot is taken as it starts).
    const { q, sent } = recording();
    const c = new CoalescingQueryable(q);
    const events = kind('events', true);
    const update = kind('update');
    await coalescedWrite(c, events, 'e1');
    await coalescedWrite(c, update, 'a');
    await c.query('SELECT locked FOR UPDATE');
    await coalescedWrite(c, events, 'e2');
    await c.write('UPDATE guarded');
    await coalescedWrite(c, update, 'b');
    await c.finish();
    expect(sent).toEqual(['update(a)', 'SELECT locked FOR UPDATE', 'UPDATE guarded', 'update(b)', 'events(e1,e2)']);
  });

  it('send every kind held at a flush as one statement, a CTE each, in the order the kinds were first held', async () => {
    const { q, sent } = recording();
    const c = new CoalescingQueryable(q);
    await coalescedWrite(c, kind('insert'), 'a');
    await coalescedWrite(c, kind('update'), 'b');
    await coalescedWrite(c, kind('insert'), 'c');
    await c.query('SELECT 1');
    await c.finish();
    expect(sent).toEqual(['WITH w0 AS (insert(a,c)), w1 AS (update(b)) SELECT 1', 'SELECT 1']);
  });

  it('combine writes with their parameters renumbered after those before them, and a guard over each guarded CTE', () => {
    const combined = combinedStatement([
      { dml: 'INSERT INTO t VALUES ($1, $2)', params: ['a', 'b'] },
      { dml: `UPDATE u SET v = $2 WHERE id = $1 AND state = 'READY' RETURNING 1`, params: ['u1', 'v1'], check: { guard: 'baton_assert', rows: 1, message: 'update of missing u' } },
      { dml: 'INSERT INTO k SELECT * FROM unnest($1::text[]) ON CONFLICT DO NOTHING RETURNING 1', params: [['k1', 'k2']], check: { guard: 'baton_won', rows: 2, message: 'a key is taken' } },
    ]);
    expect(combined.text).toBe(
      `WITH w0 AS (INSERT INTO t VALUES ($1, $2)), w1 AS (UPDATE u SET v = $4 WHERE id = $3 AND state = 'READY' RETURNING 1), ` +
        `w2 AS (INSERT INTO k SELECT * FROM unnest($7::text[]) ON CONFLICT DO NOTHING RETURNING 1) ` +
        `SELECT baton_assert((SELECT count(*) FROM w1) = $5, $6), baton_won((SELECT count(*) FROM w2) = $8, $9)`,
    );
    expect(combined.params).toEqual(['a', 'b', 'u1', 'v1', 1, 'update of missing u', ['k1', 'k2'], 2, 'a key is taken']);
  });

  it('send one write alone as the statement it always was, and refuse to renumber a write that quotes a $', () => {
    expect(combinedStatement([{ dml: 'UPDATE u SET v = $1 RETURNING 1', params: ['x'], check: { guard: 'baton_assert', rows: 1, message: 'm' } }])).toEqual({
      text: 'WITH changed AS (UPDATE u SET v = $1 RETURNING 1) SELECT baton_assert(count(*) = $2, $3) FROM changed',
      params: ['x', 1, 'm'],
    });
    expect(() => combinedStatement([{ dml: 'SELECT 1', params: [] }, { dml: `UPDATE u SET v = '$1'`, params: [] }])).toThrow(/quotes a \$/);
  });

  it('drop the rows held to commit since a savepoint when it is rolled back, and keep the earlier ones', async () => {
    const { q, sent } = recording();
    const c = new CoalescingQueryable(q);
    const events = kind('events', true);
    await coalescedWrite(c, events, 'before');
    const mark = c.savepointMark();
    await coalescedWrite(c, events, 'inside');
    c.rollBackTo(mark);
    const empty = c.savepointMark();
    await coalescedWrite(c, kind('other-events', true), 'x');
    c.rollBackTo(empty);
    await c.finish();
    expect(sent).toEqual(['events(before)']);
  });
});
