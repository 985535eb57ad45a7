import { useMemo } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { unwrap } from '../api/client';
import type { AllowanceWaiter } from '../api/types';
import { WaitLineFollower, waitersShown } from '../api/wait-line';
import { useCan, useSignedIn } from '../console-context';
import { ConfirmButton } from '../components/confirm';
import { useSpaceId } from '../components/layout';
import { LiveBadge, usePoll } from '../components/poll';
import { ErrorNote, Needs, PageTitle, when } from '../components/ui';

/** One allowance: its window and cooldown, and its wait line, each waiter cancellable behind a confirmation. */
export function AllowancePage() {
  return (
    <Needs permission="coordination_read">
      <AllowanceBody />
    </Needs>
  );
}

function AllowanceBody() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  const allowanceId = useRoute().params.allowanceId!;
  const canCancel = useCan('coordination_write');
  // Kept across refreshes: each one reads only the journal written since the last.
  const follower = useMemo(() => new WaitLineFollower(api, spaceId, allowanceId), [api, spaceId, allowanceId]);
  const polled = usePoll(async () => {
    const allowance = await api.GET('/v1/spaces/{spaceId}/allowances/{id}', { params: { path: { spaceId, id: allowanceId } } }).then(unwrap);
    return { allowance, line: await follower.read() };
  }, [follower]);
  const data = polled.data;
  const cancel = (w: AllowanceWaiter) => async (): Promise<void> => {
    await api.POST('/v1/spaces/{spaceId}/allowance-waiters/{id}/cancel', { params: { path: { spaceId, id: w.id }, header: { 'Idempotency-Key': crypto.randomUUID() } } }).then(unwrap);
    polled.refresh();
  };
  const a = data?.allowance;
  const line = data?.line;
  return (
    <section>
      <PageTitle>Allowance {a ? a.name : ''}</PageTitle>
      <LiveBadge updatedAt={polled.updatedAt} error={polled.error} />
      <ErrorNote error={data ? undefined : polled.error} />
      {a && line && (
        <>
          <dl class="facts">
            <dt>Id</dt>
            <dd>
              <code>{a.id}</code>
            </dd>
            <dt>Used</dt>
            <dd>
              {a.usedUnits} of {a.unitsLimit} units ({a.availableUnits} available)
            </dd>
            <dt>Window</dt>
            <dd>
              {a.windowSeconds} s from {when(a.windowStartsAt)}
            </dd>
            <dt>Cooldown</dt>
            <dd>{a.cooldownUntil ? `until ${when(a.cooldownUntil)}${a.cooldownReason ? ` (${a.cooldownReason})` : ''}` : 'none'}</dd>
            <dt>Waiting</dt>
            <dd data-fact="waiting">{a.waiting}</dd>
          </dl>
          <h2>Wait line</h2>
          {!line.caughtUp && <p class="note">Still reading the journal for the line; the list grows as it does.</p>}
          {line.truncated && <p class="note">Retention deleted events this line was read from: a waiter may be missing below.</p>}
          {line.inLine > waitersShown && <p class="note">The front {waitersShown} of {line.inLine} waiters are shown.</p>}
          {line.waiters.length === 0 ? (
            <p>Nobody waits in line.</p>
          ) : (
            <table>
              <caption>Waiters in line, the front first (strict FIFO: the first is granted before anyone behind it).</caption>
              <thead>
                <tr>
                  <th scope="col">Waiter</th>
                  <th scope="col">Holder</th>
                  <th scope="col">Units</th>
                  <th scope="col">Scope</th>
                  <th scope="col">Waiting since</th>
                  <th scope="col">Expires</th>
                  {canCancel && <th scope="col">Action</th>}
                </tr>
              </thead>
              <tbody>
                {line.waiters.map((w) => (
                  <tr key={w.id} data-waiter={w.id}>
                    <th scope="row">
                      <code class="id">{w.id}</code>
                    </th>
                    <td>{w.holder}</td>
                    <td class="number">{w.units}</td>
                    <td>
                      <a href={`/console/spaces/${spaceId}/runs/${w.scopeId}`}>
                        <code class="id">{w.scopeId}</code>
                      </a>
                    </td>
                    <td>{when(w.createdAt)}</td>
                    <td>{when(w.expiresAt)}</td>
                    {canCancel && (
                      <td>
                        <ConfirmButton
                          label="Cancel waiter"
                          question={`Take ${w.holder} out of the line? Its wait for ${w.units} units ends CANCELLED, and whoever stands behind it moves up.`}
                          confirmLabel="Yes, cancel the wait"
                          onConfirm={cancel(w)}
                        />
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}
