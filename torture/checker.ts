import type { History } from './history';
import { checkAllowances } from './checks/allowances';
import { checkBudgets } from './checks/budgets';
import { checkClaims } from './checks/claims';
import { checkJournal } from './checks/journal';
import { checkLeases } from './checks/leases';
import { checkOutage } from './checks/outage';
import type { Snapshot } from './checks/snapshot';
import { checkTasks } from './checks/tasks';

/** Every check of a torture run, named as docs/reliability.md names the promise it holds. */
export const checks = {
  'acknowledged submits exist; one outcome per task, from a worker': checkTasks,
  'no delivery held by two live leases': (h: History) => checkLeases(h),
  'claims: one holder, fencing tokens in grant order': (h: History) => checkClaims(h),
  'budgets conserve; no settle applied twice': checkBudgets,
  'allowances never grant beyond a window': checkAllowances,
  'acknowledged events journaled; readers skip none': checkJournal,
  'a store outage answers 503 UNAVAILABLE with Retry-After': (h: History) => checkOutage(h),
} satisfies Record<string, (history: History, snapshot: Snapshot) => string[]>;

export interface CheckResult {
  check: string;
  violations: string[];
}

export function checkRun(history: History, snapshot: Snapshot): CheckResult[] {
  return Object.entries(checks).map(([check, run]) => ({ check, violations: run(history, snapshot) }));
}

/** Reads the snapshot through the API of a live server. */
export async function readSnapshot(target: { origin: string; apiKey: string; spaceId: string; scopeId: string; budgetId: string; allowanceId: string }): Promise<Snapshot> {
  const get = async (path: string): Promise<any> => {
    const response = await fetch(`${target.origin}/v1/spaces/${target.spaceId}${path}`, { headers: { authorization: `Bearer ${target.apiKey}` } });
    if (response.status !== 200) throw new Error(`snapshot: GET ${path} answered ${response.status} ${await response.text()}`);
    return response.json();
  };
  const events = await pages((cursor) => get(`/events?limit=500${cursor ? `&cursor=${cursor}` : ''}`), true);
  const tasks = await pages((cursor) => get(`/tasks?scopeId=${target.scopeId}&limit=200${cursor ? `&cursor=${cursor}` : ''}`));
  const reservations = await pages((cursor) => get(`/budgets/${target.budgetId}/reservations?limit=200${cursor ? `&cursor=${cursor}` : ''}`));
  return {
    events,
    tasks: new Map(tasks.map((t) => [t.id, t])),
    budget: await get(`/budgets/${target.budgetId}`),
    reservations,
    allowance: await get(`/allowances/${target.allowanceId}`),
  };
}

/** Every item of a paged list. The journal's cursor never ends: its last page is the empty one. */
async function pages(read: (cursor: string | undefined) => Promise<{ items: any[]; nextCursor: string | null }>, journal = false): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await read(cursor);
    items.push(...page.items);
    if (journal ? page.items.length === 0 : page.nextCursor === null) return items;
    cursor = page.nextCursor ?? undefined;
  }
}

/** Secrets never reach a server's log: its output is scanned for each one the run handed out. */
export function checkLogs(logs: Map<string, string>, secrets: string[]): CheckResult {
  const violations: string[] = [];
  for (const [name, text] of logs) for (const secret of secrets) if (text.includes(secret)) violations.push(`${name}'s log holds a secret (${secret.slice(0, 6)}...)`);
  return { check: 'no secret in a server log', violations };
}

/**
 * An outage of the store is logged once each way by store-outage.ts; an error of it (StoreUnavailable)
 * logged with its stack means some loop or request logs it again, every time it fails.
 */
export function checkOutageLogs(logs: Map<string, string>): CheckResult {
  const violations: string[] = [];
  for (const [name, text] of logs) {
    const stacks = text.split('\n').filter((line) => line.includes('"type":"StoreUnavailable"'));
    if (stacks.length > 0) violations.push(`${name}'s log holds ${stacks.length} line(s) with a StoreUnavailable error, e.g. ${stacks[0]!.slice(0, 200)}`);
  }
  return { check: 'an outage is logged once, not with every failure', violations };
}
