import { useRoute } from 'preact-iso';
import { unwrap } from '../api/client';
import type { Task, TaskDebug } from '../api/types';
import { useCan, useSignedIn } from '../console-context';
import { useSpaceId } from '../components/layout';
import { ConfirmButton } from '../components/confirm';
import { LiveBadge, usePoll } from '../components/poll';
import { ErrorNote, Needs, PageTitle, StateBadge, when } from '../components/ui';

const cancellable = new Set<Task['state']>(['PENDING', 'RUNNING']);

/** One task: its facts, why it is blocked now, each attempt with what its admission claimed, its events. */
export function TaskPage() {
  return (
    <Needs permission="coordination_read">
      <TaskBody />
    </Needs>
  );
}

function TaskBody() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  const taskId = useRoute().params.taskId!;
  const canWrite = useCan('coordination_write');
  const canDebug = useCan('usage_read');
  const polled = usePoll(() => api.GET('/v1/spaces/{spaceId}/tasks/{id}', { params: { path: { spaceId, id: taskId } } }).then(unwrap), [spaceId, taskId]);
  const task = polled.data;
  const cancel = async (): Promise<void> => {
    await api
      .POST('/v1/spaces/{spaceId}/tasks/{id}/cancel', {
        params: { path: { spaceId, id: taskId }, header: { 'Idempotency-Key': crypto.randomUUID() } },
        body: { reason: 'cancelled in the console' },
      })
      .then(unwrap);
    polled.refresh();
  };
  return (
    <section>
      <PageTitle>Task {task ? task.taskKey : ''}</PageTitle>
      <LiveBadge updatedAt={polled.updatedAt} error={polled.error} />
      <ErrorNote error={task ? undefined : polled.error} />
      {task && (
        <>
          <div class="task-head">
            <StateBadge state={task.state} />
            {canWrite && cancellable.has(task.state) && (
              <ConfirmButton label="Cancel task" question={`Cancel task ${task.taskKey}? Its work stops and it ends CANCELLED; this cannot be undone.`} confirmLabel="Yes, cancel it" onConfirm={cancel} />
            )}
          </div>
          <dl class="facts">
            <dt>Id</dt>
            <dd>
              <code>{task.id}</code>
            </dd>
            <dt>Scope</dt>
            <dd>
              <a href={`/console/spaces/${spaceId}/runs/${task.scopeId}`}>
                <code>{task.scopeId}</code>
              </a>
            </dd>
            <dt>Mailbox</dt>
            <dd>
              <code>{task.mailboxId}</code>
            </dd>
            <dt>Attempts</dt>
            <dd>{task.attempts}</dd>
            <dt>Deadline</dt>
            <dd>{when(task.deadline)}</dd>
            <dt>Work limit</dt>
            <dd>{task.workLimit ?? '—'}</dd>
            <dt>Requires</dt>
            <dd>{requirementsInWords(task.requirements)}</dd>
            <dt>Created</dt>
            <dd>{when(task.createdAt)}</dd>
            <dt>Updated</dt>
            <dd>{when(task.updatedAt)}</dd>
            {task.failureReason && (
              <>
                <dt>Failure</dt>
                <dd>{task.failureReason}</dd>
              </>
            )}
          </dl>
          {canDebug && <Debugger spaceId={spaceId} task={task} />}
        </>
      )}
    </section>
  );
}

function requirementsInWords(r: Task['requirements']): string {
  const parts = [
    ...r.pools.map((p) => `pool ${p.name} × ${p.units}`),
    ...r.quotas.map((q) => `allowance ${q.name} × ${q.units}`),
    ...r.budgets.map((b) => `budget ${b.name} ${b.reserveMinor} minor`),
  ];
  return parts.length === 0 ? 'nothing' : parts.join(', ');
}

/** The debugger view (usage_read) and, for a waiting task, what blocks its admission now. */
function Debugger({ spaceId, task }: { spaceId: string; task: Task }) {
  const { api } = useSignedIn();
  const polled = usePoll(async () => {
    const [debug, waits] = await Promise.all([
      api.GET('/v1/spaces/{spaceId}/ops/tasks/{taskId}', { params: { path: { spaceId, taskId: task.id } } }).then(unwrap),
      task.state === 'PENDING' ? api.GET('/v1/spaces/{spaceId}/diagnostics/waits', { params: { path: { spaceId } } }).then(unwrap) : Promise.resolve(undefined),
    ]);
    return { debug, wait: waits?.blockedTasks.items.find((w) => w.taskId === task.id) };
  }, [spaceId, task.id, task.state, task.updatedAt]);
  const data = polled.data;
  return (
    <>
      <ErrorNote error={polled.error} />
      {data && task.state === 'PENDING' && (
        <section aria-labelledby="blocked-title" class="panel">
          <h2 id="blocked-title">Why it waits{data.wait ? `: ${data.wait.waitingOn}` : ''}</h2>
          {!data.wait || data.wait.blockedBy.length === 0 ? (
            <p>Nothing blocks its admission now: it waits for a worker to admit it.</p>
          ) : (
            <ul>
              {data.wait.blockedBy.map((b) => (
                <li key={`${b.resource}-${b.id}`}>
                  {b.resource} <strong>{b.name}</strong>: {b.reason} (needs {b.needed}, {b.available} available{b.retryAt ? `; retry at ${when(b.retryAt)}` : ''})
                </li>
              ))}
            </ul>
          )}
        </section>
      )}
      {data && <Attempts debug={data.debug} />}
      {data && <TaskEvents debug={data.debug} />}
    </>
  );
}

function Attempts({ debug }: { debug: TaskDebug }) {
  if (debug.attempts.length === 0) return <p>No attempt yet: no worker has admitted it.</p>;
  return (
    <table>
      <caption>Attempts and what each admission claimed</caption>
      <thead>
        <tr>
          <th scope="col">Attempt</th>
          <th scope="col">Holder</th>
          <th scope="col">Claimed at</th>
          <th scope="col">Lease until</th>
          <th scope="col">Claimed</th>
        </tr>
      </thead>
      <tbody>
        {debug.attempts.map((a) => (
          <tr key={`${a.messageId}-${a.attempt}`}>
            <th scope="row">{a.attempt}</th>
            <td>{a.holder ?? '—'}</td>
            <td>{when(a.claimedAt)}</td>
            <td>{when(a.leaseExpiresAt)}</td>
            <td>
              {a.claimed
                ? [
                    ...a.claimed.pools.map((p) => `pool ${p.name} × ${p.units}`),
                    ...a.claimed.quotas.map((q) => `allowance ${q.name} × ${q.units}`),
                    ...a.claimed.budgets.map((b) => `budget ${b.name} ${b.amountMinor} minor`),
                    ...(a.claimed.workLimit ? [`work limit ${a.claimed.workLimit}`] : []),
                  ].join(', ') || 'nothing'
                : '—'}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function TaskEvents({ debug }: { debug: TaskDebug }) {
  return (
    <table>
      <caption>Its events, oldest first</caption>
      <thead>
        <tr>
          <th scope="col">Event</th>
          <th scope="col">Type</th>
          <th scope="col">At</th>
        </tr>
      </thead>
      <tbody>
        {debug.events.map((e) => (
          <tr key={e.eventId}>
            <th scope="row">{e.eventId}</th>
            <td>{e.type}</td>
            <td>{when(e.occurredAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
