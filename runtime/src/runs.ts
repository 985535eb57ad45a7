import { randomUUID } from 'node:crypto';
import type { RunApi, RunView } from './contract';

/**
 * Runs (docs/design/0019-runs.md; docs/api.md "Runs"): a scopeId made explicit, that a person can look at
 * and cancel with everything under it. withChildRun gives a piece of work its own child run, so
 * cancelling the parent (or the child) cancels that work's tasks and timers on the server.
 */

export interface ChildRunOptions {
  name?: string;
  /**
   * The child's scopeId. Default: a new UUID, made here rather than by the server so that a
   * child whose create was cut short by the signal can still be cancelled. Pass a stable one to
   * make a rerun of the whole call reach the same child (create answers 200 for the same body).
   */
  scopeId?: string;
  /** Child runs the child may have, ever (1 to 10,000; server default 1,000). */
  childLimit?: number;
  /** Cancels the child run at once (what lives under it too) and aborts fn's signal. */
  signal?: AbortSignal;
}

export interface ChildRunContext {
  run: RunView;
  /** Aborted with the caller's reason when `options.signal` aborts. */
  signal: AbortSignal;
}

/**
 * Creates a child run of `parentScopeId`, runs `fn` with the child's scopeId (submit the work's
 * tasks and timers under it), then completes the child when fn resolves, or cancels it when fn
 * throws or the signal aborts, and rethrows (the signal's reason after an abort, even if fn then
 * resolved). A cancel that fails is not reported over fn's error: the run is then left ACTIVE for
 * an operator to cancel. A complete that fails is thrown (409 CONFLICT when the run was cancelled
 * meanwhile, by its parent's cascade for one).
 */
export async function withChildRun<T>(
  client: RunApi,
  parentScopeId: string,
  fn: (scopeId: string, child: ChildRunContext) => Promise<T>,
  options: ChildRunOptions = {},
): Promise<T> {
  const { signal } = options;
  signal?.throwIfAborted();
  const scopeId = options.scopeId ?? randomUUID();
  let cancelling: Promise<void> | null = null;
  const cancelOnce = (): Promise<void> => (cancelling ??= cancelQuietly(client, scopeId));

  let run: RunView;
  try {
    run = await client.createRun(
      { scopeId, parentScopeId, ...(options.name === undefined ? {} : { name: options.name }), ...(options.childLimit === undefined ? {} : { childLimit: options.childLimit }) },
      signal ? { signal } : {},
    );
  } catch (error) {
    // The create may have reached the server before the abort: cancel what it may have made.
    if (signal?.aborted) await cancelOnce();
    throw error;
  }
  if (run.scopeId.toLowerCase() !== scopeId.toLowerCase()) throw new Error(`POST /runs answered run ${run.scopeId}, asked for ${scopeId}`);

  const abort = new AbortController();
  const onAbort = (): void => {
    abort.abort(signal!.reason);
    void cancelOnce(); // now, not when fn settles: the server stops the work under it
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    let value: T;
    try {
      value = await fn(run.scopeId, { run, signal: abort.signal });
    } catch (error) {
      await cancelOnce();
      throw error;
    }
    if (signal?.aborted) {
      await cancelOnce();
      throw signal.reason;
    }
    await client.completeRun(run.scopeId);
    return value;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/** On the failure path fn's error (or the abort) is what matters; a cancel that fails leaves the run ACTIVE. */
async function cancelQuietly(client: RunApi, scopeId: string): Promise<void> {
  try {
    await client.cancelRun(scopeId);
  } catch {
    // nothing to add over the error being thrown
  }
}
