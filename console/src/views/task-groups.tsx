import { useMemo } from 'preact/hooks';
import { unwrap } from '../api/client';
import type { TaskGroup } from '../api/types';
import { useCan, useSignedIn } from '../console-context';
import { ConfirmButton } from '../components/confirm';
import { useSpaceId } from '../components/layout';
import { PagedTable, type Column } from '../components/paged-table';
import { Needs, PageTitle, StateBadge, when } from '../components/ui';

function verdicts(g: TaskGroup): string {
  const counts = new Map<string, number>();
  for (const m of g.members) counts.set(m.verdict, (counts.get(m.verdict) ?? 0) + 1);
  return [...counts].map(([verdict, n]) => `${verdict} ${n}`).join(', ') || 'no member yet';
}

const columns = (spaceId: string): Array<Column<TaskGroup>> => [
  {
    header: 'Group',
    cell: (g) => (
      <a href={`/console/spaces/${spaceId}/task-groups/${g.id}`}>
        <code class="id">{g.id}</code>
      </a>
    ),
  },
  { header: 'State', cell: (g) => <StateBadge state={g.state} /> },
  { header: 'Condition', cell: (g) => `${g.condition}${g.threshold !== null ? ` (${g.threshold})` : ''}` },
  { header: 'Members', cell: (g) => `${g.members.length}${g.expectedMembers !== null ? ` of ${g.expectedMembers}` : ''}`, numeric: true },
  { header: 'Verdicts', cell: verdicts },
  { header: 'Decision', cell: (g) => (g.outcome ? `${g.outcome} (${g.outcomeReason ?? ''}) at ${when(g.decidedAt)}` : '—') },
];

/** Task groups: which group waits on which member, and the decision once made. */
export function TaskGroups() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  const canWrite = useCan('coordination_write');
  const shown = useMemo<Array<Column<TaskGroup>>>(() => {
    if (!canWrite) return columns(spaceId);
    const close = (g: TaskGroup) => async (): Promise<void> => {
      await api.POST('/v1/spaces/{spaceId}/task-groups/{id}/close', { params: { path: { spaceId, id: g.id }, header: { 'Idempotency-Key': crypto.randomUUID() } } }).then(unwrap);
    };
    const action: Column<TaskGroup> = {
      header: 'Action',
      cell: (g, refresh) =>
        g.state === 'OPEN' ? (
          <ConfirmButton
            label="Close group"
            question="Close this group? No member can be added any more; it is decided on the members it has."
            confirmLabel="Yes, close it"
            onConfirm={async () => {
              await close(g)();
              refresh();
            }}
          />
        ) : (
          '—'
        ),
    };
    return [...columns(spaceId), action];
  }, [api, spaceId, canWrite]);
  return (
    <section>
      <PageTitle>Task groups</PageTitle>
      <Needs permission="coordination_read">
        <PagedTable
          deps={[spaceId]}
          load={(cursor) => api.GET('/v1/spaces/{spaceId}/task-groups', { params: { path: { spaceId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } }).then(unwrap)}
          columns={shown}
          caption="Task groups with their members' verdicts and the decision, 50 a page."
          empty="This space has no task group."
          rowKey={(g) => g.id}
        />
      </Needs>
    </section>
  );
}
