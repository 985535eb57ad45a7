import type { HttpReply } from '../http';

/**
 * A CLAIM_HELD must name a live lease (docs/api.md, Claims: "A lease that ran out frees the key
 * at once", swept or not). The refusal's details carry the holder's leaseExpiresAt; the server
 * decided at or after the moment the acquire was sent (a retry replays the first attempt's
 * reply, which was decided later still), on the same clock, so a lease that had ended by then
 * could not have held the key.
 */
export function checkHeldLive(agent: string, claimKey: string, sentAtMs: number, reply: HttpReply, violation: (message: string) => void): void {
  const until = reply.body?.error?.details?.leaseExpiresAt;
  if (typeof until !== 'string') return violation(`${agent}: acquire of ${claimKey} answered CLAIM_HELD without the holder's leaseExpiresAt: ${JSON.stringify(reply.body)}`);
  if (Date.parse(until) <= sentAtMs) {
    violation(`${agent}: acquire of ${claimKey} sent at ${new Date(sentAtMs).toISOString()} answered CLAIM_HELD naming a lease that ran out at ${until}: a lease that ran out frees the key at once`);
  }
}
