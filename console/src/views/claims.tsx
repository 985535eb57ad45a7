import { unwrap } from '../api/client';
import type { Claim } from '../api/types';
import { useSignedIn } from '../console-context';
import { useSpaceId } from '../components/layout';
import { PagedTable, type Column } from '../components/paged-table';
import { Needs, PageTitle, StateBadge, when } from '../components/ui';

const columns: Array<Column<Claim>> = [
  { header: 'Claim key', cell: (c) => c.claimKey },
  { header: 'State', cell: (c) => <StateBadge state={c.state} /> },
  { header: 'Holder', cell: (c) => c.holder },
  { header: 'Lease until', cell: (c) => when(c.leaseExpiresAt) },
  { header: 'Fencing token', cell: (c) => c.fencingToken, numeric: true },
  { header: 'Scope', cell: (c) => <code class="id">{c.scopeId}</code> },
];

/** Claims with holder, lease and fencing token. */
export function Claims() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  return (
    <section>
      <PageTitle>Claims</PageTitle>
      <Needs permission="coordination_read">
        <PagedTable
          deps={[spaceId]}
          load={(cursor) => api.GET('/v1/spaces/{spaceId}/claims', { params: { path: { spaceId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } }).then(unwrap)}
          columns={columns}
          caption="Claims, 50 a page."
          empty="This space has no claim."
          rowKey={(c) => c.id}
        />
      </Needs>
    </section>
  );
}
