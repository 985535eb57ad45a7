import { useMemo } from 'preact/hooks';
import { unwrap } from '../api/client';
import type { DeliveryAttempt, Destination } from '../api/types';
import { useCan, useSignedIn } from '../console-context';
import { ConfirmButton } from '../components/confirm';
import { useSpaceId } from '../components/layout';
import { PagedTable, type Column } from '../components/paged-table';
import { Needs, PageTitle, StateBadge, when } from '../components/ui';

const columns: Array<Column<Destination>> = [
  { header: 'URL', cell: (d) => d.url },
  { header: 'State', cell: (d) => <StateBadge state={d.state} /> },
  { header: 'Delivered', cell: (d) => d.deliveredCount, numeric: true },
  { header: 'Failed', cell: (d) => d.failedCount, numeric: true },
  { header: 'Failing since', cell: (d) => (d.failingSince ? `${when(d.failingSince)} (${d.consecutiveFailures} in a row)` : '—') },
  { header: 'Last error', cell: (d) => d.lastError ?? '—' },
];

const attemptColumns: Array<Column<DeliveryAttempt>> = [
  { header: 'Event', cell: (d) => d.eventId },
  { header: 'Destination', cell: (d) => <code class="id">{d.destinationId}</code> },
  { header: 'Attempt', cell: (d) => d.attempt, numeric: true },
  { header: 'Status', cell: (d) => <StateBadge state={d.status} /> },
  { header: 'HTTP', cell: (d) => d.httpStatus ?? '—', numeric: true },
  { header: 'Error', cell: (d) => d.error ?? '—' },
  { header: 'At', cell: (d) => when(d.attemptedAt) },
];

/** Which webhook destination is failing, and its delivery audit. */
export function Destinations() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  const canConfigure = useCan('resource_config');
  const shown = useMemo<Array<Column<Destination>>>(() => {
    if (!canConfigure) return columns;
    const resume = (d: Destination) => async (): Promise<void> => {
      await api.POST('/v1/spaces/{spaceId}/destinations/{id}/resume', { params: { path: { spaceId, id: d.id }, header: { 'Idempotency-Key': crypto.randomUUID() } } }).then(unwrap);
    };
    const action: Column<Destination> = {
      header: 'Action',
      cell: (d) =>
        d.state === 'PAUSED' ? (
          <ConfirmButton label="Resume" question={`Resume deliveries to ${d.url}? It is tried again from where it stopped.`} confirmLabel="Yes, resume" onConfirm={resume(d)} />
        ) : (
          '—'
        ),
    };
    return [...columns, action];
  }, [api, spaceId, canConfigure]);
  return (
    <section>
      <PageTitle>Webhook destinations</PageTitle>
      <Needs permission="coordination_read">
        <PagedTable
          deps={[spaceId]}
          load={(cursor) => api.GET('/v1/spaces/{spaceId}/destinations', { params: { path: { spaceId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } }).then(unwrap)}
          columns={shown}
          caption="Webhook destinations, 50 a page."
          empty="This space has no webhook destination."
          rowKey={(d) => d.id}
        />
      </Needs>
      <h2>Delivery audit</h2>
      <Needs permission="usage_read">
        <PagedTable
          deps={[spaceId]}
          load={(cursor) => api.GET('/v1/spaces/{spaceId}/deliveries', { params: { path: { spaceId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } }).then(unwrap)}
          columns={attemptColumns}
          caption="Every delivery attempt, 50 a page."
          empty="No delivery was attempted yet."
          rowKey={(d) => d.id}
        />
      </Needs>
    </section>
  );
}
