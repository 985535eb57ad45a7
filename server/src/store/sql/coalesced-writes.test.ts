import { describe, expect, it } from 'vitest';
import { CoalescingQueryable, coalescedWrite, type Coalescible } from './coalesced-writes';
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
  statement: (rows: readonly string[]) => ({ text: `${key}(${rows.join(',')})`, params: [] as SqlParam[] }),
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

  it('hold a kind marked heldToCommit past reads and writes, and send it after every other kind at the end', async () => {
    // The journal's appends: their positions must be drawn after everything the transaction saw.
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
