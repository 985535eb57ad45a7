import { useRoute } from 'preact-iso';
import { unwrap } from '../api/client';
import type { TaskGroup } from '../api/types';
import { useCan, useSignedIn } from '../console-context';
import { ConfirmButton } from '../components/confirm';
import { useSpaceId } from '../components/layout';
import { LiveBadge, usePoll } from '../components/poll';
import { ErrorNote, Needs, PageTitle, StateBadge, when } from '../components/ui';

/** One task group: which member it waits on, each member's verdict, and the decision once made. */
export function TaskGroupPage() {
  return (
    <Needs permission="coordination_read">
      <GroupBody />
    </Needs>
  );
}

/** Task keys of the group's gate scope, where member tasks run; a task joined from elsewhere shows by id. */
const keysShown = 100;

function GroupBody() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  const groupId = useRoute().params.groupId!;
  const canWrite = useCan('coordination_write');
  const polled = usePoll(async () => {
    const group = await api.GET('/v1/spaces/{spaceId}/task-groups/{id}', { params: { path: { spaceId, id: groupId } } }).then(unwrap);
    const inScope = await api.GET('/v1/spaces/{spaceId}/tasks', { params: { path: { spaceId }, query: { scopeId: group.scopeId, limit: keysShown } } }).then(unwrap);
    return { group, taskKeys: new Map(inScope.items.map((t) => [t.id, t.taskKey])) };
  }, [spaceId, groupId]);
  const close = async (): Promise<void> => {
    await api.POST('/v1/spaces/{spaceId}/task-groups/{id}/close', { params: { path: { spaceId, id: groupId }, header: { 'Idempotency-Key': crypto.randomUUID() } } }).then(unwrap);
    polled.refresh();
  };
  const group = polled.data?.group;
  const taskKeys = polled.data?.taskKeys;
  return (
    <section>
      <PageTitle>Task group</PageTitle>
      <LiveBadge updatedAt={polled.updatedAt} error={polled.error} />
      <ErrorNote error={group ? undefined : polled.error} />
      {group && taskKeys && (
        <>
          <div class="task-head">
            <StateBadge state={group.state} />
            {canWrite && group.state === 'OPEN' && (
              <ConfirmButton label="Close group" question="Close this group? No member can be added any more; it is decided on the members it has." confirmLabel="Yes, close it" onConfirm={close} />
            )}
          </div>
          <dl class="facts">
            <dt>Id</dt>
            <dd>
              <code>{group.id}</code>
            </dd>
            <dt>Condition</dt>
            <dd>{conditionInWords(group)}</dd>
            <dt>Members</dt>
            <dd>
              {group.members.length}
              {group.expectedMembers !== null ? ` of ${group.expectedMembers} expected` : ''}
            </dd>
            <dt>Deadline</dt>
            <dd>{when(group.deadline)}</dd>
            <dt>Gate scope</dt>
            <dd>
              <code>{group.scopeId}</code>
            </dd>
            <dt>Parent scope</dt>
            <dd>
              {group.parentScopeId ? (
                <a href={`/console/spaces/${spaceId}/runs/${group.parentScopeId}`}>
                  <code>{group.parentScopeId}</code>
                </a>
              ) : (
                '—'
              )}
            </dd>
            <dt>Mailbox</dt>
            <dd>
              <code>{group.mailboxId}</code>
            </dd>
            <dt>Created</dt>
            <dd>{when(group.createdAt)}</dd>
          </dl>
          <section aria-labelledby="decision-title" class="panel" data-decision={group.outcome ?? 'none'}>
            <h2 id="decision-title">Decision</h2>
            {group.outcome ? (
              <p>
                <strong>{group.outcome}</strong> ({group.outcomeReason ?? 'no reason given'}) at {when(group.decidedAt)}
              </p>
            ) : (
              <p>Not decided yet: {group.state === 'OPEN' ? 'members may still join, and it waits on them.' : 'membership is closed; it waits on its members.'}</p>
            )}
          </section>
          {group.members.length === 0 ? (
            <p>No member yet.</p>
          ) : (
            <table>
              <caption>Members in join order, with their task's state and their verdict.</caption>
              <thead>
                <tr>
                  <th scope="col">Member task</th>
                  <th scope="col">Task state</th>
                  <th scope="col">Verdict</th>
                  <th scope="col">Joined</th>
                </tr>
              </thead>
              <tbody>
                {group.members.map((m) => (
                  <tr key={m.taskId} data-member={taskKeys.get(m.taskId) ?? m.taskId}>
                    <th scope="row">
                      <a href={`/console/spaces/${spaceId}/tasks/${m.taskId}`}>{taskKeys.get(m.taskId) ?? <code class="id">{m.taskId}</code>}</a>
                    </th>
                    <td>
                      <StateBadge state={m.taskState} />
                    </td>
                    <td>
                      <StateBadge state={m.verdict} />
                    </td>
                    <td>{when(m.joinedAt)}</td>
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

function conditionInWords(g: TaskGroup): string {
  return `${g.condition}${g.threshold !== null ? ` (threshold ${g.threshold})` : ''}`;
}
