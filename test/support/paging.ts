import { expect } from 'vitest';

export interface Page<Item> {
  items: Item[];
  nextCursor: string | null;
}

/**
 * The paging contract of every list route, over a list of exactly five items (`keys` in list
 * order, `keyOf` reading an item's): a page holds at most limit items; its cursor names its last
 * item, so the next page starts after it; and a page that ends the list, also with exactly limit
 * items left, has no cursor.
 */
export async function expectPagingOfFive<Item>(page: (query: string) => Promise<Page<Item>>, keys: readonly string[], keyOf: (item: Item) => string): Promise<void> {
  expect(keys).toHaveLength(5);
  const first = await page('limit=3');
  expect(first.items.map(keyOf)).toEqual(keys.slice(0, 3));
  const rest = await page(`limit=3&cursor=${first.nextCursor}`);
  expect([rest.items.map(keyOf), rest.nextCursor]).toEqual([keys.slice(3), null]);
  const whole = await page('limit=5');
  expect([whole.items.map(keyOf), whole.nextCursor]).toEqual([[...keys], null]);
  expect((await page('limit=4')).nextCursor).not.toBeNull();
}
