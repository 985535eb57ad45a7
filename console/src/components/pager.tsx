import { useState } from 'preact/hooks';

/**
 * Cursor paging as the API does it: a page, and the cursor of the next one. Keeps the cursors of
 * the pages seen, so Back returns to the previous page exactly.
 */
export function useCursorPages(): { cursor: string | undefined; page: number; next(cursor: string): void; back(): void; reset(): void } {
  const [cursors, setCursors] = useState<Array<string | undefined>>([undefined]);
  return {
    cursor: cursors[cursors.length - 1],
    page: cursors.length,
    next: (cursor) => setCursors((seen) => [...seen, cursor]),
    back: () => setCursors((seen) => (seen.length > 1 ? seen.slice(0, -1) : seen)),
    reset: () => setCursors([undefined]),
  };
}

export function Pager({ page, nextCursor, onNext, onBack }: { page: number; nextCursor: string | null | undefined; onNext(cursor: string): void; onBack(): void }) {
  if (page === 1 && !nextCursor) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" onClick={onBack} disabled={page === 1}>
        Previous page
      </button>
      <span>Page {page}</span>
      <button type="button" onClick={() => nextCursor && onNext(nextCursor)} disabled={!nextCursor}>
        Next page
      </button>
    </nav>
  );
}
