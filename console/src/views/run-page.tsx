import { useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { unwrap } from '../api/client';
import type { ResourceCount, RunDetail } from '../api/types';
import { useCan, useSignedIn } from '../console-context';
import { useSpaceId } from '../components/layout';
import { ConfirmButton } from '../components/confirm';
import { LiveBadge, usePoll } from '../components/poll';
import { ErrorNote, Needs, PageTitle, StateBadge, when } from '../components/ui';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Runs are found by their scopeId (the API lists a run's children, not every run of a space). */
export function RunFinder() {
  const spaceId = useSpaceId();
  const { route } = useLocation();
  const [scopeId, setScopeId] = useState('');
  const valid = uuidPattern.test(scopeId.trim());
  return (
    <section>
      <PageTitle>Runs</PageTitle>
      <p>A run is named by its scopeId: the one a worker and its producers share (BATON_SCOPE). Its page shows its child runs, so the tree is walked from any run.</p>
      <form
        class="filters"
        aria-label="Open a run"
        onSubmit={(e) => {
          e.preventDefault();
          if (valid) route(`/console/spaces/${spaceId}/runs/${scopeId.trim().toLowerCase()}`);
        }}
      >
        <label>
          Scope id
          <input value={scopeId} placeholder="UUID" aria-invalid={scopeId !== '' && !valid} onInput={(e) => setScopeId(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={!valid}>
          Open run
        </button>
      </form>
    </section>
  );
}

/** One run: its state, its parent and child runs (links: the tree), what lives under it, and its live tasks. */
export function RunPage() {
  return (
    <Needs permission="coordination_read">
      <RunBody />
    </Needs>
  );
}

function RunBody() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  const scopeId = useRoute().params.scopeId!;
  const canWrite = useCan('coordination_write');
  const canDiagnose = useCan('usage_read');
  const polled = usePoll(async () => {
    const [run, ops] = await Promise.all([
      api.GET('/v1/spaces/{spaceId}/runs/{scopeId}', { params: { path: { spaceId, scopeId } } }).then(unwrap),
      // 404 when nothing lives under the scope yet: then there is no live task to show.
      canDiagnose
        ? api
            .GET('/v1/spaces/{spaceId}/ops/runs/{scopeId}', { params: { path: { spaceId, scopeId } } })
            .then((result) => (result.response.status === 404 ? undefined : unwrap(result)))
        : Promise.resolve(undefined),
    ]);
    return { run, ops };
  }, [spaceId, scopeId]);
  const run = polled.data?.run;
  const ops = polled.data?.ops;
  const cancel = async (): Promise<void> => {
    await api.POST('/v1/spaces/{spaceId}/runs/{scopeId}/cancel', { params: { path: { spaceId, scopeId }, header: { 'Idempotency-Key': crypto.randomUUID() } } }).then(unwrap);
    polled.refresh();
  };
  return (
    <section>
      <PageTitle>Run {run?.name ?? scopeId}</PageTitle>
      <LiveBadge updatedAt={polled.updatedAt} error={polled.error} />
      <ErrorNote error={run ? undefined : polled.error} />
      {run && (
        <>
          <div class="task-head">
            <StateBadge state={run.state} />
            {run.cascading && <span>cancelling what lives under it…</span>}
            {canWrite && run.state === 'ACTIVE' && (
              <ConfirmButton
                label="Cancel run"
                question={`Cancel run ${run.name ?? run.scopeId}? Its child runs and its PENDING or RUNNING tasks are cancelled too, and new work under it is refused.`}
                confirmLabel="Yes, cancel the run"
                onConfirm={cancel}
              />
            )}
          </div>
          <dl class="facts">
            <dt>Scope id</dt>
            <dd>
              <code>{run.scopeId}</code>
            </dd>
            <dt>Parent</dt>
            <dd>{run.parentScopeId ? <a href={`/console/spaces/${spaceId}/runs/${run.parentScopeId}`}>{run.parentScopeId}</a> : 'none (a root run)'}</dd>
            <dt>Created</dt>
            <dd>{when(run.createdAt)}</dd>
            <dt>Ended</dt>
            <dd>{when(run.endedAt)}</dd>
            <dt>Child runs</dt>
            <dd>
              {run.children} (at most {run.childLimit})
            </dd>
          </dl>
          <Counts counts={run.counts} />
          <ChildRuns run={run} spaceId={spaceId} />
          {ops && ops.liveTasks.items.length > 0 && (
            <table>
              <caption>Its PENDING and RUNNING tasks, and what each waits for</caption>
              <thead>
                <tr>
                  <th scope="col">Task key</th>
                  <th scope="col">State</th>
                  <th scope="col">Waits on</th>
                  <th scope="col">Blocked by</th>
                </tr>
              </thead>
              <tbody>
                {ops.liveTasks.items.map((t) => (
                  <tr key={t.taskId}>
                    <th scope="row">
                      <a href={`/console/spaces/${spaceId}/tasks/${t.taskId}`}>{t.taskKey}</a>
                    </th>
                    <td>
                      <StateBadge state={t.state} />
                    </td>
                    <td>{t.waitingOn}</td>
                    <td>{t.blockedBy.map((b) => `${b.resource} ${b.name}: ${b.reason}`).join(', ') || '—'}</td>
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

function Counts({ counts }: { counts: RunDetail['counts'] }) {
  const rows: Array<[string, ResourceCount]> = Object.entries(counts);
  return (
    <table>
      <caption>What lives under this run's scopeId, by state</caption>
      <thead>
        <tr>
          <th scope="col">Resource</th>
          <th scope="col">Total</th>
          <th scope="col">By state</th>
        </tr>
      </thead>
      <tbody>
        {rows.map(([name, count]) => (
          <tr key={name} data-resource={name}>
            <th scope="row">{name}</th>
            <td class="number">{count.total}</td>
            <td>
              {Object.entries(count.byState)
                .filter(([, n]) => n > 0)
                .map(([state, n]) => `${state} ${n}`)
                .join(', ') || '—'}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function ChildRuns({ run, spaceId }: { run: RunDetail; spaceId: string }) {
  if (run.childRuns.items.length === 0) return <p>No child run.</p>;
  return (
    <>
      <h2>Child runs</h2>
      <ul class="run-tree">
        {run.childRuns.items.map((child) => (
          <li key={child.scopeId}>
            <a href={`/console/spaces/${spaceId}/runs/${child.scopeId}`}>{child.name ?? child.scopeId}</a> <StateBadge state={child.state} /> {child.children > 0 ? `(${child.children} child runs)` : ''}
          </li>
        ))}
      </ul>
      {run.childRuns.nextCursor && <p class="note">More child runs than shown: the API pages them.</p>}
    </>
  );
}
