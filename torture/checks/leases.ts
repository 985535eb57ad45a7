import type { History } from '../history';
import { clockMarginMs, groupBy, leaseActs, leaseGrants, type LeaseAct, type LeaseGrant } from './calls';

/**
 * No delivery worked by two holders with live leases at once. For each message, its grants in
 * attempt order (a retried admit's replay is the same grant: one token). Two ways to break it:
 *
 * - overlap: a later grant came back before the earlier lease's end (as its holder last heard
 *   it) while nothing its holder sent could have ended that lease yet;
 * - stale act: a complete, nack or renew with an earlier grant's token was accepted although it
 *   was sent after a later grant had come back, or after its own lease had run out.
 */
export function checkLeases(history: History): string[] {
  const grants = uniqueGrants(leaseGrants(history.calls));
  const acts = groupBy(leaseActs(history.calls), (a) => a.token);
  const violations: string[] = [];
  for (const [messageId, ofMessage] of groupBy(grants, (g) => g.messageId)) {
    const ordered = ofMessage.sort((a, b) => a.attempt - b.attempt || a.grantedByMs - b.grantedByMs);
    for (let i = 0; i < ordered.length; i++) {
      const grant = ordered[i]!;
      const mine = acts.get(grant.token) ?? [];
      const next = ordered[i + 1];
      if (next) violations.push(...overlap(messageId, grant, next, mine));
      violations.push(...staleActs(messageId, grant, next, mine));
    }
  }
  return violations;
}

/** A replayed admit answers the same delivery again: one grant, from the first reply. */
function uniqueGrants(grants: LeaseGrant[]): LeaseGrant[] {
  const byToken = new Map<string, LeaseGrant>();
  for (const g of grants) {
    const seen = byToken.get(g.token);
    if (!seen || g.grantedByMs < seen.grantedByMs) byToken.set(g.token, seen ? { ...g, requestedAtMs: Math.min(g.requestedAtMs, seen.requestedAtMs) } : g);
  }
  return [...byToken.values()];
}

/** The lease's end as its holder knew it by `atMs`: the grant's, pushed on by renewals sent before then. */
function leaseEndBy(grant: LeaseGrant, acts: LeaseAct[], atMs: number): number {
  let end = grant.leaseExpiresMs;
  for (const a of acts) if (a.kind === 'renew' && a.status === 200 && a.invokedAtMs < atMs) end = Math.max(end, a.leaseExpiresMs!);
  return end;
}

function overlap(messageId: string, grant: LeaseGrant, next: LeaseGrant, acts: LeaseAct[]): string[] {
  const endedBefore = acts.some((a) => a.kind !== 'renew' && a.invokedAtMs < next.grantedByMs);
  const liveUntil = leaseEndBy(grant, acts, next.grantedByMs);
  if (endedBefore || next.grantedByMs >= liveUntil - clockMarginMs) return [];
  return [`message ${messageId}: attempt ${next.attempt} (${next.proc}) was granted by ${iso(next.grantedByMs)} while attempt ${grant.attempt} (${grant.proc}) held a lease until ${iso(liveUntil)} and had not ended it`];
}

function staleActs(messageId: string, grant: LeaseGrant, next: LeaseGrant | undefined, acts: LeaseAct[]): string[] {
  const out: string[] = [];
  for (const a of acts) {
    if (a.status !== 200) continue;
    if (next && a.invokedAtMs > next.grantedByMs) {
      out.push(`message ${messageId}: ${a.kind} by ${a.proc} with attempt ${grant.attempt}'s token was accepted, sent at ${iso(a.invokedAtMs)} after attempt ${next.attempt} (${next.proc}) was granted by ${iso(next.grantedByMs)}`);
    } else if (a.invokedAtMs > leaseEndBy(grant, acts, a.invokedAtMs) + clockMarginMs) {
      out.push(`message ${messageId}: ${a.kind} by ${a.proc} was accepted, sent at ${iso(a.invokedAtMs)} after its lease ended at ${iso(leaseEndBy(grant, acts, a.invokedAtMs))}`);
    }
  }
  return out;
}

export const iso = (ms: number): string => new Date(ms).toISOString();
