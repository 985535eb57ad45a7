import { unwrap } from '../api/client';
import type { Barrier, Timer } from '../api/types';
import { useSignedIn } from '../console-context';
import { useSpaceId } from '../components/layout';
import { PagedTable, type Column } from '../components/paged-table';
import { Needs, PageTitle, StateBadge, when } from '../components/ui';

const barrierColumns: Array<Column<Barrier>> = [
  { header: 'Barrier', cell: (b) => <code class="id">{b.id}</code> },
  { header: 'State', cell: (b) => <StateBadge state={b.state} /> },
  { header: 'Epoch', cell: (b) => b.epoch, numeric: true },
  { header: 'Arrived', cell: (b) => `${b.arrivals} of ${b.target}`, numeric: true },
  { header: 'Scope', cell: (b) => <code class="id">{b.scopeId}</code> },
  { header: 'Released', cell: (b) => when(b.releasedAt) },
];

const timerColumns: Array<Column<Timer>> = [
  { header: 'Timer key', cell: (t) => t.timerKey },
  { header: 'State', cell: (t) => <StateBadge state={t.state} /> },
  { header: 'Fires at', cell: (t) => when(t.fireAt) },
  { header: 'Fired', cell: (t) => when(t.firedAt) },
  { header: 'Mailbox', cell: (t) => <code class="id">{t.mailboxId}</code> },
];

/** Barriers with their epochs, and timers: what waits for whom, and for when. */
export function BarriersAndTimers() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  return (
    <section>
      <PageTitle>Barriers and timers</PageTitle>
      <Needs permission="coordination_read">
        <h2>Barriers</h2>
        <PagedTable
          deps={[spaceId]}
          load={(cursor) => api.GET('/v1/spaces/{spaceId}/barriers', { params: { path: { spaceId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } }).then(unwrap)}
          columns={barrierColumns}
          caption="Barriers with their epoch and arrivals, 50 a page."
          empty="This space has no barrier."
          rowKey={(b) => b.id}
        />
        <h2>Timers</h2>
        <PagedTable
          deps={[spaceId]}
          load={(cursor) => api.GET('/v1/spaces/{spaceId}/timers', { params: { path: { spaceId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } }).then(unwrap)}
          columns={timerColumns}
          caption="Timers, 50 a page."
          empty="This space has no timer."
          rowKey={(t) => t.id}
        />
      </Needs>
    </section>
  );
}
