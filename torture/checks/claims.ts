import type { Call, History } from '../history';
import { callsOf, clockMarginMs, groupBy } from './calls';
import { iso } from './leases';

/**
 * Claims with fencing tokens: per key, fencing tokens grow in the order claims were granted,
 * two claims never held the key at once, and no renew or release with a claim's token was
 * accepted after a later claim of its key came back.
 */
interface ClaimGrant {
  id: string;
  claimKey: string;
  fencingToken: number;
  proc: string;
  requestedAtMs: number;
  grantedByMs: number;
  leaseExpiresMs: number;
}

interface ClaimAct {
  kind: 'renew' | 'release';
  claimId: string;
  invokedAtMs: number;
  status: number | undefined;
  leaseExpiresMs?: number;
}

export function checkClaims(history: History): string[] {
  const grants = claimGrants(history.calls);
  const acts = groupBy(claimActs(history.calls), (a) => a.claimId);
  const out: string[] = [];
  for (const [claimKey, ofKey] of groupBy(grants, (g) => g.claimKey)) {
    const byFencing = [...ofKey].sort((a, b) => a.fencingToken - b.fencingToken);
    byFencing.forEach((claim, i) => out.push(...fencingOrder(claimKey, claim, byFencing.slice(i + 1))));
    // Overlaps in the order the grants came back: the fencing order may itself be the bug.
    const byTime = [...ofKey].sort((a, b) => a.grantedByMs - b.grantedByMs);
    for (let i = 0; i + 1 < byTime.length; i++) out.push(...overlap(claimKey, byTime[i]!, byTime[i + 1]!, acts.get(byTime[i]!.id) ?? []));
  }
  return out;
}

/** One grant per claim id: a same-holder re-claim answers the same claim again. */
function claimGrants(calls: Call[]): ClaimGrant[] {
  const byId = new Map<string, ClaimGrant>();
  for (const call of callsOf(calls, 'POST /claims')) {
    if (call.status !== 200 && call.status !== 201) continue;
    const r = call.reply;
    const seen = byId.get(r.id);
    if (seen && seen.grantedByMs <= call.endedAtMs!) continue;
    byId.set(r.id, { id: r.id, claimKey: r.claimKey, fencingToken: r.fencingToken, proc: call.proc, requestedAtMs: call.firstInvokedAtMs, grantedByMs: call.endedAtMs!, leaseExpiresMs: Date.parse(r.leaseExpiresAt) });
  }
  return [...byId.values()];
}

function claimActs(calls: Call[]): ClaimAct[] {
  const acts: ClaimAct[] = [];
  for (const kind of ['renew', 'release'] as const) {
    for (const call of callsOf(calls, `POST /claims/:id/${kind}`)) {
      const a: ClaimAct = { kind, claimId: /\/claims\/([^/]+)/.exec(call.path)![1]!, invokedAtMs: call.firstInvokedAtMs, status: call.status };
      if (kind === 'renew' && call.status === 200) a.leaseExpiresMs = Date.parse(call.reply.leaseExpiresAt);
      acts.push(a);
    }
  }
  return acts;
}

/** A claim granted before another was even asked for must carry the lower fencing token. */
function fencingOrder(claimKey: string, claim: ClaimGrant, later: ClaimGrant[]): string[] {
  const out: string[] = [];
  for (const other of later) {
    if (other.fencingToken === claim.fencingToken) out.push(`claim key ${claimKey}: claims ${claim.id} and ${other.id} share fencing token ${claim.fencingToken}`);
    else if (other.grantedByMs < claim.requestedAtMs) out.push(`claim key ${claimKey}: claim ${other.id} (fencing ${other.fencingToken}) came back by ${iso(other.grantedByMs)}, before claim ${claim.id} (fencing ${claim.fencingToken}) was asked for`);
  }
  return out;
}

/**
 * `next` came back after `claim`: by then both had been granted, so if neither lease had ended,
 * two held the key at once. A renew or release of `claim` accepted after `next` came back is a
 * stale token taken, if `claim` surely came first.
 */
function overlap(claimKey: string, claim: ClaimGrant, next: ClaimGrant, acts: ClaimAct[]): string[] {
  const out: string[] = [];
  let liveUntil = claim.leaseExpiresMs;
  for (const a of acts) if (a.kind === 'renew' && a.status === 200 && a.invokedAtMs < next.grantedByMs) liveUntil = Math.max(liveUntil, a.leaseExpiresMs!);
  const released = acts.some((a) => a.kind === 'release' && a.invokedAtMs < next.grantedByMs);
  if (!released && next.grantedByMs < Math.min(liveUntil, next.leaseExpiresMs) - clockMarginMs) {
    out.push(`claim key ${claimKey}: claim ${next.id} (${next.proc}) was granted by ${iso(next.grantedByMs)} while claim ${claim.id} (${claim.proc}) held it until ${iso(liveUntil)}`);
  }
  if (claim.grantedByMs > next.requestedAtMs) return out;
  for (const a of acts) {
    if (a.status === 200 && a.invokedAtMs > next.grantedByMs) out.push(`claim key ${claimKey}: a ${a.kind} of claim ${claim.id} was accepted, sent at ${iso(a.invokedAtMs)} after claim ${next.id} was granted by ${iso(next.grantedByMs)}`);
  }
  return out;
}
