import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Polled<T> {
  data: T | undefined;
  error: Error | undefined;
  /** When the last answer (data or error) arrived. */
  updatedAt: Date | undefined;
  refresh(): void;
}

/**
 * Calls `load` now and every `intervalMs`, while the page is shown; `deps` restart it (and clear
 * what was shown). Returns the last answer, so a view keeps showing data through a failed refresh.
 */
export function usePoll<T>(load: () => Promise<T>, deps: unknown[], intervalMs = 5000): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [updatedAt, setUpdatedAt] = useState<Date | undefined>(undefined);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const shownFor = useRef<unknown[] | undefined>(undefined);
  useEffect(() => {
    // Another thing to show (another id, page or filter): what was shown is not its answer. A
    // refresh of the same thing (after an action) keeps it on screen until the new answer.
    const same = shownFor.current !== undefined && shownFor.current.length === deps.length && shownFor.current.every((d, i) => Object.is(d, deps[i]));
    shownFor.current = deps;
    if (!same) {
      setData(undefined);
      setError(undefined);
    }
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async (): Promise<void> => {
      try {
        const value = await loadRef.current();
        if (stopped) return;
        setData(value);
        setError(undefined);
      } catch (caught) {
        if (stopped) return;
        setError(caught instanceof Error ? caught : new Error(String(caught)));
      }
      setUpdatedAt(new Date());
      timer = setTimeout(() => void run(), intervalMs);
    };
    void run();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [...deps, tick, intervalMs]);
  const refresh = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, updatedAt, refresh };
}

/** Says the page is live: when it last heard from the server, or that the last call failed. */
export function LiveBadge({ updatedAt, error, label = 'Refreshes every 5 s' }: { updatedAt: Date | undefined; error: Error | undefined; label?: string }) {
  if (error) return <p class="live live-error" role="status">Not live: {error.message}</p>;
  return (
    <p class="live" role="status">
      <span class="live-dot" aria-hidden="true" /> {label}
      {updatedAt ? `; updated ${updatedAt.toLocaleTimeString()}` : '; loading…'}
    </p>
  );
}
