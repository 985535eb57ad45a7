import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../store/memory/memory-store';
import { maxWatchExamined, readWatchPage } from './watch';
import { parseWatchTypes, type WatchFilter } from './watch-filter';

const spaceId = '00000000-0000-4000-8000-000000000001';
const budgets = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ type: 'budget.created', aggregateType: 'budget', aggregateId: `b${from + i}`, scopeId: null, data: {} }));
const only = (types: string): WatchFilter => ({ types: parseWatchTypes(types), aggregate: null, scopeId: null });

describe('readWatchPage', () => {
  it('examines at most maxWatchExamined events per read, and its cursor moves past all of them', async () => {
    const store = new MemoryStore();
    await store.transaction((tx) => tx.events.append(spaceId, 0, budgets(maxWatchExamined + 100)));
    await store.transaction((tx) => tx.events.append(spaceId, 0, [{ type: 'group.decided', aggregateType: 'group', aggregateId: 'g', scopeId: null, data: {} }]));
    const all = await store.read((tx) => tx.events.listAfter(spaceId, '0', maxWatchExamined + 200));

    const first = await store.read((tx) => readWatchPage(tx, spaceId, undefined, only('group.decided'), 10));
    expect(first.items).toEqual([]);
    expect(first.nextCursor).toBe(all[maxWatchExamined - 1]!.eventId);
    const second = await store.read((tx) => readWatchPage(tx, spaceId, first.nextCursor, only('group.decided'), 10));
    expect(second.items.map((e) => e.type)).toEqual(['group.decided']);
    expect(second.nextCursor).toBe(all.at(-1)!.eventId);
    const after = await store.read((tx) => readWatchPage(tx, spaceId, second.nextCursor, only('group.decided'), 10));
    expect(after).toMatchObject({ items: [], nextCursor: second.nextCursor });
  });

  it('stops at limit matches, its cursor at the last one', async () => {
    const store = new MemoryStore();
    await store.transaction((tx) => tx.events.append(spaceId, 0, budgets(700)));
    const all = await store.read((tx) => tx.events.listAfter(spaceId, '0', 700));
    const page = await store.read((tx) => readWatchPage(tx, spaceId, undefined, only('budget.*'), 3));
    expect(page.items.map((e) => e.eventId)).toEqual(all.slice(0, 3).map((e) => e.eventId));
    expect(page.nextCursor).toBe(all[2]!.eventId);
    const many = await store.read((tx) => readWatchPage(tx, spaceId, undefined, only('budget.*'), 500));
    expect(many.items).toHaveLength(500);
    expect(many.nextCursor).toBe(all[499]!.eventId);
  });
});
