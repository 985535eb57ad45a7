import type { Call } from '../history';

/**
 * The history's calls read as the domain's acts: lease grants and what holders did with them,
 * claim grants, settles, consumptions. A batch call becomes one act per item, with the status
 * its item was answered (or none when the call got no reply: indeterminate).
 */

/** Clocks of the servers and clients are one machine's clock; this absorbs the rounding of ISO times and scheduling. */
export const clockMarginMs = 100;

const route = (call: Call): string => `${call.method} ${call.path.split('?')[0]!.replace(/\/[0-9a-f]{8}-[0-9a-f-]{27}(?=\/|$)/g, '/:id')}`;

export const answered = (call: Call): boolean => call.status !== undefined;
export const succeeded = (call: Call): boolean => call.status !== undefined && call.status >= 200 && call.status < 300;

export function callsOf(calls: Call[], ...routes: string[]): Call[] {
  const wanted = new Set(routes);
  return calls.filter((c) => wanted.has(route(c)));
}

export interface LeaseGrant {
  messageId: string;
  taskId: string | undefined;
  token: string;
  attempt: number;
  leaseExpiresMs: number;
  proc: string;
  /** The grant happened after the request left... */
  requestedAtMs: number;
  /** ...and before its reply came. */
  grantedByMs: number;
}

export function leaseGrants(calls: Call[]): LeaseGrant[] {
  const grants: LeaseGrant[] = [];
  for (const call of callsOf(calls, 'POST /tasks/admit', 'POST /tasks/admit-batch', 'POST /mailboxes/:id/recv', 'POST /mailboxes/:id/recv-batch')) {
    if (call.status !== 200) continue;
    const deliveries: any[] = Array.isArray(call.reply?.items) ? call.reply.items : [call.reply];
    for (const d of deliveries) {
      grants.push({ messageId: d.messageId, taskId: d.taskId, token: d.token, attempt: d.attempt, leaseExpiresMs: Date.parse(d.leaseExpiresAt), proc: call.proc, requestedAtMs: call.invokedAtMs, grantedByMs: call.endedAtMs! });
    }
  }
  return grants;
}

export type ActKind = 'complete' | 'nack' | 'renew';

export interface LeaseAct {
  kind: ActKind;
  messageId: string;
  token: string;
  proc: string;
  /** When the logical call's first attempt left: a retry's 200 may replay what that attempt did. */
  invokedAtMs: number;
  /** The item's status; undefined when no reply came. */
  status: number | undefined;
  /** A successful renew's new lease end. */
  leaseExpiresMs?: number;
  /** A complete's result payload: the task's outcome if it took. */
  payload?: unknown;
}

export function leaseActs(calls: Call[]): LeaseAct[] {
  const acts: LeaseAct[] = [];
  for (const kind of ['complete', 'nack', 'renew'] as const) {
    for (const call of callsOf(calls, `POST /messages/:id/${kind}`)) acts.push(act(kind, call, { ...call.body, messageId: messageIdOf(call.path) }, call.status, call.reply));
    for (const call of callsOf(calls, `POST /messages/${kind}-batch`)) {
      const items: any[] = call.body?.items ?? [];
      items.forEach((item, i) => {
        const replied = call.status === 200 ? call.reply?.items?.[i] : undefined;
        acts.push(act(kind, call, item, replied ? replied.status : call.status, replied ? replied.body : call.reply));
      });
    }
  }
  return acts;
}

function act(kind: ActKind, call: Call, item: any, status: number | undefined, reply: any): LeaseAct {
  const a: LeaseAct = { kind, messageId: item.messageId, token: item.token, proc: call.proc, invokedAtMs: call.firstInvokedAtMs, status };
  if (kind === 'renew' && status === 200) a.leaseExpiresMs = Date.parse(reply.leaseExpiresAt);
  if (kind === 'complete') a.payload = item.result?.payload;
  return a;
}

const messageIdOf = (path: string): string => /\/messages\/([^/?]+)/.exec(path)![1]!;

/** Groups `items` by `key`, each group in the order given. */
export function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}
