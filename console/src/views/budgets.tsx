import { unwrap } from '../api/client';
import type { Budget } from '../api/types';
import { useSignedIn } from '../console-context';
import { useSpaceId } from '../components/layout';
import { PagedTable, type Column } from '../components/paged-table';
import { money, Needs, PageTitle } from '../components/ui';

const columns = (spaceId: string): Array<Column<Budget>> => [
  { header: 'Budget', cell: (b) => <a href={`/console/spaces/${spaceId}/budgets/${b.id}`}>{b.name}</a> },
  { header: 'Limit', cell: (b) => money(b.limitMinor, b.scale, b.currency), numeric: true },
  { header: 'Reserved', cell: (b) => money(b.reservedMinor, b.scale, b.currency), numeric: true },
  { header: 'Settled', cell: (b) => money(b.settledMinor, b.scale, b.currency), numeric: true },
  { header: 'Available', cell: (b) => money(b.availableMinor, b.scale, b.currency), numeric: true },
  { header: 'Open reservations', cell: (b) => b.reservations.filter((r) => r.state === 'ACTIVE').length, numeric: true },
];

/** Which budget is about to run dry: balances and reservations. */
export function Budgets() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  return (
    <section>
      <PageTitle>Budgets</PageTitle>
      <Needs permission="coordination_read">
        <PagedTable
          deps={[spaceId]}
          load={(cursor) => api.GET('/v1/spaces/{spaceId}/budgets', { params: { path: { spaceId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } }).then(unwrap)}
          columns={columns(spaceId)}
          caption="Budgets with their balances, 50 a page."
          empty="This space has no budget."
          rowKey={(b) => b.name}
        />
      </Needs>
    </section>
  );
}
