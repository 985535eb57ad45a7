import { unwrap } from '../api/client';
import type { Census, SpaceLimits, Usage } from '../api/types';
import { useSignedIn } from '../console-context';
import { useSpaceId } from '../components/layout';
import { LiveBadge, usePoll } from '../components/poll';
import { Sparkline } from '../components/sparkline';
import { ErrorNote, Needs, PageTitle, UsageMeter } from '../components/ui';
import { recordRequestCount, requestRateHistory, type RatePoint } from '../api/request-rate';

interface OverviewData {
  census: Census;
  usage: Usage;
  limits: SpaceLimits;
}

/** The space at a glance: the organization's usage against its plan, the space's limits, and its census. */
export function Overview() {
  return (
    <section>
      <PageTitle>Overview</PageTitle>
      <Needs permission="usage_read">
        <OverviewBody />
      </Needs>
    </section>
  );
}

function OverviewBody() {
  const { api, session } = useSignedIn();
  const spaceId = useSpaceId();
  const orgId = session.org.id;
  const path = { spaceId };
  const polled = usePoll<OverviewData>(async () => {
    const [census, usage, limits] = await Promise.all([
      api.GET('/v1/spaces/{spaceId}/diagnostics/census', { params: { path } }).then(unwrap),
      api.GET('/v1/spaces/{spaceId}/usage', { params: { path } }).then(unwrap),
      api.GET('/v1/spaces/{spaceId}/limits', { params: { path } }).then(unwrap),
    ]);
    recordRequestCount(orgId, { atMs: Date.now(), requestsThisMinute: usage.requestsThisMinute });
    return { census, usage, limits };
  }, [spaceId]);
  const rates = requestRateHistory(orgId);
  const { data } = polled;
  return (
    <>
      <LiveBadge updatedAt={polled.updatedAt} error={polled.error} />
      <ErrorNote error={data ? undefined : polled.error} />
      {data && (
        <div class="panels">
          <section class="panel" aria-labelledby="usage-title">
            <h2 id="usage-title">
              Usage in {data.usage.month} (plan {data.usage.plan}, whole organization)
            </h2>
            <UsageMeter label="Operations this month" used={data.usage.operations} limit={data.usage.operationsLimit} />
            <UsageMeter label="Requests this minute" used={data.usage.requestsThisMinute} limit={data.usage.planLimits.requestsPerMinute} />
            <RequestRate rates={rates} />
            <UsageMeter label="Active tasks" used={data.usage.activeTasks} limit={data.usage.planLimits.activeTasks} />
            <UsageMeter label="Active runs" used={data.usage.activeRuns} limit={data.usage.planLimits.activeRuns} />
            <UsageMeter label="Agents at once (live leases)" used={data.usage.liveLeases} limit={data.usage.planLimits.agentsAtOnce} />
          </section>
          <section class="panel" aria-labelledby="limits-title">
            <h2 id="limits-title">Space limits</h2>
            <dl class="facts">
              <dt>Requests a minute</dt>
              <dd>{data.limits.requestsPerMinute ?? 'no cap'}</dd>
              <dt>Backlog</dt>
              <dd>{data.limits.maxBacklog.toLocaleString('en-US')} messages</dd>
              <dt>Payload</dt>
              <dd>{data.limits.maxPayloadBytes.toLocaleString('en-US')} bytes</dd>
              <dt>Lease</dt>
              <dd>{data.limits.maxLeaseSeconds} s</dd>
              <dt>Pending waiters</dt>
              <dd>{data.limits.maxPendingWaiters}</dd>
              <dt>Armed timers</dt>
              <dd>{data.limits.maxArmedTimers}</dd>
            </dl>
          </section>
          <section class="panel wide" aria-labelledby="census-title">
            <h2 id="census-title">Census</h2>
            <table>
              <caption>Resources of this space by type and state (each counted up to {data.census.countCap.toLocaleString('en-US')}).</caption>
              <thead>
                <tr>
                  <th scope="col">Resource</th>
                  <th scope="col">Total</th>
                  <th scope="col">By state</th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(data.census.resources).map(([name, count]) => (
                  <tr key={name} data-resource={name}>
                    <th scope="row">{name}</th>
                    <td class="number">
                      {count.total.toLocaleString('en-US')}
                      {count.capped ? '+' : ''}
                    </td>
                    <td>
                      {Object.entries(count.byState)
                        .map(([state, n]) => `${state} ${n}`)
                        .join(', ') || '—'}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        </div>
      )}
    </>
  );
}

/** The stretch of time the sparkline spans (what api/request-rate.ts keeps at a 5 s refresh). */
const rateWindowMs = 5 * 60_000;

const perMinute = (v: number): string => `${Math.round(v).toLocaleString('en-US')} a minute`;

/** The request rate between the overview's readings of GET /usage (api/request-rate.ts): the API keeps no history. */
function RequestRate({ rates }: { rates: RatePoint[] }) {
  return (
    <figure class="rate">
      <figcaption>
        Request rate (whole organization, this console's own calls included)
        {rates.length > 0 ? `: ${perMinute(rates[rates.length - 1]!.requestsPerMinute)} now` : ''}
      </figcaption>
      {rates.length === 0 ? (
        <p class="note">Measured from the next refresh on: GET /usage gives this minute's count, and a rate takes two readings.</p>
      ) : (
        <>
          <Sparkline points={rates.map((r) => ({ atMs: r.atMs, value: r.requestsPerMinute }))} windowMs={rateWindowMs} label="Requests a minute, read every 5 s" describe={perMinute} />
          <p class="rate-axis" aria-hidden="true">
            <span>5 min ago</span>
            <span>now</span>
          </p>
        </>
      )}
    </figure>
  );
}
