import { unwrap } from '../api/client';
import type { Pool, WorkLimit } from '../api/types';
import { useSignedIn } from '../console-context';
import { useSpaceId } from '../components/layout';
import { PagedTable, type Column } from '../components/paged-table';
import { Needs, PageTitle } from '../components/ui';

const columns: Array<Column<Pool>> = [
  { header: 'Pool', cell: (p) => p.name },
  { header: 'In use', cell: (p) => `${p.inUse} of ${p.capacity}`, numeric: true },
  { header: 'Available', cell: (p) => p.available, numeric: true },
  { header: 'Use', cell: (p) => <meter min={0} max={p.capacity} value={p.inUse} aria-label={`${p.name}: ${p.inUse} of ${p.capacity} in use`} /> },
];

const workLimitColumns: Array<Column<WorkLimit>> = [
  { header: 'Work limit', cell: (w) => w.name },
  { header: 'In use', cell: (w) => `${w.inUse} of ${w.maxConcurrent}`, numeric: true },
  { header: 'Available', cell: (w) => w.available, numeric: true },
];

/** Who holds the pool: units in use against capacity. */
export function Pools() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  return (
    <section>
      <PageTitle>Pools and work limits</PageTitle>
      <Needs permission="coordination_read">
        <PagedTable
          deps={[spaceId]}
          load={(cursor) => api.GET('/v1/spaces/{spaceId}/pools', { params: { path: { spaceId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } }).then(unwrap)}
          columns={columns}
          caption="Pools with their units in use, 50 a page."
          empty="This space has no pool."
          rowKey={(p) => p.name}
        />
        <h2>Work limits</h2>
        <PagedTable
          deps={[spaceId]}
          load={(cursor) => api.GET('/v1/spaces/{spaceId}/work-limits', { params: { path: { spaceId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } }).then(unwrap)}
          columns={workLimitColumns}
          caption="Work limits with their slots in use, 50 a page."
          empty="This space has no work limit."
          rowKey={(w) => w.name}
        />
      </Needs>
    </section>
  );
}
