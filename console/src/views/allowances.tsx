import { unwrap } from '../api/client';
import type { Allowance } from '../api/types';
import { useSignedIn } from '../console-context';
import { useSpaceId } from '../components/layout';
import { PagedTable, type Column } from '../components/paged-table';
import { Needs, PageTitle, when } from '../components/ui';

const columns = (spaceId: string): Array<Column<Allowance>> => [
  { header: 'Allowance', cell: (a) => <a href={`/console/spaces/${spaceId}/allowances/${a.id}`}>{a.name}</a> },
  { header: 'Used', cell: (a) => `${a.usedUnits} of ${a.unitsLimit}`, numeric: true },
  { header: 'Available', cell: (a) => a.availableUnits, numeric: true },
  { header: 'Window', cell: (a) => `${a.windowSeconds} s from ${when(a.windowStartsAt)}` },
  { header: 'Cooldown', cell: (a) => (a.cooldownUntil ? `until ${when(a.cooldownUntil)}${a.cooldownReason ? ` (${a.cooldownReason})` : ''}` : 'none') },
  { header: 'Waiting', cell: (a) => a.waiting, numeric: true },
];

/** Shared quotas: the window, the cooldown and the length of the wait line. */
export function Allowances() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  return (
    <section>
      <PageTitle>Allowances</PageTitle>
      <Needs permission="coordination_read">
        <PagedTable
          deps={[spaceId]}
          load={(cursor) => api.GET('/v1/spaces/{spaceId}/allowances', { params: { path: { spaceId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } }).then(unwrap)}
          columns={columns(spaceId)}
          caption="Allowances with their window, cooldown and wait line, 50 a page."
          empty="This space has no allowance."
          rowKey={(a) => a.name}
        />
      </Needs>
    </section>
  );
}
