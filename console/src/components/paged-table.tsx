import type { ComponentChild } from 'preact';
import { Pager, useCursorPages } from './pager';
import { LiveBadge, usePoll } from './poll';
import { ErrorNote } from './ui';

export interface Column<T> {
  header: string;
  /** `refresh` reloads the page shown now: for a cell whose action changed the item. */
  cell(item: T, refresh: () => void): ComponentChild;
  numeric?: boolean;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * A list the API pages through with a cursor, refreshed every 5 s: the first column heads each
 * row. `load` gets the cursor of the page to show.
 */
export function PagedTable<T>({ load, deps, columns, caption, empty, rowKey }: { load: (cursor: string | undefined) => Promise<Page<T>>; deps: unknown[]; columns: Array<Column<T>>; caption: string; empty: string; rowKey: (item: T) => string }) {
  const pages = useCursorPages();
  const polled = usePoll(() => load(pages.cursor), [...deps, pages.cursor]);
  const page = polled.data;
  return (
    <>
      <LiveBadge updatedAt={polled.updatedAt} error={polled.error} />
      <ErrorNote error={page ? undefined : polled.error} />
      {page && page.items.length === 0 && <p>{empty}</p>}
      {page && page.items.length > 0 && (
        <table>
          <caption>{caption}</caption>
          <thead>
            <tr>
              {columns.map((c) => (
                <th key={c.header} scope="col">
                  {c.header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {page.items.map((item) => (
              <tr key={rowKey(item)} data-row={rowKey(item)}>
                {columns.map((c, i) =>
                  i === 0 ? (
                    <th key={c.header} scope="row">
                      {c.cell(item, polled.refresh)}
                    </th>
                  ) : (
                    <td key={c.header} class={c.numeric ? 'number' : undefined}>
                      {c.cell(item, polled.refresh)}
                    </td>
                  ),
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager page={pages.page} nextCursor={page?.nextCursor} onNext={pages.next} onBack={pages.back} />
    </>
  );
}
