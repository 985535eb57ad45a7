import { useState } from 'preact/hooks';
import { unwrap } from '../api/client';
import type { Task } from '../api/types';
import { useSignedIn } from '../console-context';
import { useSpaceId } from '../components/layout';
import { Pager, useCursorPages } from '../components/pager';
import { LiveBadge, usePoll } from '../components/poll';
import { ErrorNote, Needs, PageTitle, StateBadge, when } from '../components/ui';

export const taskStates: Array<Task['state']> = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED'];

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface TaskFilter {
  state: string;
  scopeId: string;
}

export function Tasks() {
  return (
    <section>
      <PageTitle>Tasks</PageTitle>
      <Needs permission="coordination_read">
        <TaskList />
      </Needs>
    </section>
  );
}

function TaskList() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  const pages = useCursorPages();
  const [draft, setDraft] = useState<TaskFilter>({ state: '', scopeId: '' });
  const [filter, setFilter] = useState<TaskFilter>(draft);
  const scopeInvalid = draft.scopeId !== '' && !uuidPattern.test(draft.scopeId.trim());
  const polled = usePoll(() => {
    const query = {
      limit: 50,
      ...(pages.cursor ? { cursor: pages.cursor } : {}),
      ...(filter.state ? { state: filter.state } : {}),
      ...(filter.scopeId ? { scopeId: filter.scopeId } : {}),
    };
    return api.GET('/v1/spaces/{spaceId}/tasks', { params: { path: { spaceId }, query } }).then(unwrap);
  }, [spaceId, pages.cursor, filter.state, filter.scopeId]);
  const apply = (event: Event): void => {
    event.preventDefault();
    if (scopeInvalid) return;
    pages.reset();
    setFilter({ state: draft.state, scopeId: draft.scopeId.trim() });
  };
  const page = polled.data;
  return (
    <>
      <form class="filters" onSubmit={apply} aria-label="Task filters">
        <label>
          State
          <select value={draft.state} onChange={(e) => setDraft({ ...draft, state: e.currentTarget.value })}>
            <option value="">any</option>
            {taskStates.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Scope id
          <input
            value={draft.scopeId}
            placeholder="a run's scopeId (UUID)"
            aria-invalid={scopeInvalid}
            onInput={(e) => setDraft({ ...draft, scopeId: e.currentTarget.value })}
          />
        </label>
        <button type="submit" disabled={scopeInvalid}>
          Filter
        </button>
        {scopeInvalid && <span class="error">A scope id is a UUID.</span>}
      </form>
      <LiveBadge updatedAt={polled.updatedAt} error={polled.error} />
      <ErrorNote error={page ? undefined : polled.error} />
      {page && page.items.length === 0 && <p>No task matches.</p>}
      {page && page.items.length > 0 && (
        <table>
          <caption>Tasks, 50 a page.</caption>
          <thead>
            <tr>
              <th scope="col">Task key</th>
              <th scope="col">State</th>
              <th scope="col">Attempts</th>
              <th scope="col">Scope</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {page.items.map((t) => (
              <tr key={t.id} data-task={t.taskKey}>
                <th scope="row">
                  <a href={`/console/spaces/${spaceId}/tasks/${t.id}`}>{t.taskKey}</a>
                </th>
                <td>
                  <StateBadge state={t.state} />
                </td>
                <td class="number">{t.attempts}</td>
                <td>
                  <a href={`/console/spaces/${spaceId}/runs/${t.scopeId}`}>
                    <code class="id">{t.scopeId}</code>
                  </a>
                </td>
                <td>{when(t.updatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager page={pages.page} nextCursor={page?.nextCursor} onNext={pages.next} onBack={pages.back} />
    </>
  );
}
