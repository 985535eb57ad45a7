import { useMemo, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { unwrap } from '../api/client';
import type { Budget, Reservation } from '../api/types';
import { useCan, useSignedIn } from '../console-context';
import { ConfirmButton } from '../components/confirm';
import { useSpaceId } from '../components/layout';
import { PagedTable, type Column } from '../components/paged-table';
import { LiveBadge, usePoll } from '../components/poll';
import { ErrorNote, money, Needs, PageTitle, StateBadge, when } from '../components/ui';

/** The reservation list's state filter: the API's own (`state=ACTIVE` or a comma list). */
const stateChoices: Array<{ value: string; label: string }> = [
  { value: 'ACTIVE', label: 'ACTIVE (open)' },
  { value: 'SETTLED,VOIDED', label: 'SETTLED or VOIDED' },
  { value: '', label: 'any' },
];

/** One budget: its balances and its reservations, each open one voidable behind a confirmation. */
export function BudgetPage() {
  return (
    <Needs permission="coordination_read">
      <BudgetBody />
    </Needs>
  );
}

function BudgetBody() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  const budgetId = useRoute().params.budgetId!;
  // POST /budgets/{id}/void takes either permission: the button shows for either.
  const canWrite = useCan('coordination_write');
  const canConfigure = useCan('resource_config');
  const canVoid = canWrite || canConfigure;
  const [states, setStates] = useState('ACTIVE');
  const polled = usePoll(() => api.GET('/v1/spaces/{spaceId}/budgets/{id}', { params: { path: { spaceId, id: budgetId } } }).then(unwrap), [spaceId, budgetId]);
  const budget = polled.data;
  const columns = useMemo(() => (budget ? reservationColumns(budget, canVoid, async (r) => {
    await api
      .POST('/v1/spaces/{spaceId}/budgets/{id}/void', {
        params: { path: { spaceId, id: budgetId }, header: { 'Idempotency-Key': crypto.randomUUID() } },
        // One workKey per reservation: a second void of it (another tab, a retry) is a replay, not a second entry.
        body: { reservationId: r.id, workKey: `console-void-${r.id}` },
      })
      .then(unwrap);
    polled.refresh();
  }) : []), [api, spaceId, budgetId, budget?.scale, budget?.currency, canVoid]);
  return (
    <section>
      <PageTitle>Budget {budget ? budget.name : ''}</PageTitle>
      <LiveBadge updatedAt={polled.updatedAt} error={polled.error} />
      <ErrorNote error={budget ? undefined : polled.error} />
      {budget && (
        <>
          <dl class="facts">
            <dt>Id</dt>
            <dd>
              <code>{budget.id}</code>
            </dd>
            <dt>Limit</dt>
            <dd>{money(budget.limitMinor, budget.scale, budget.currency)}</dd>
            <dt>Reserved</dt>
            <dd>{money(budget.reservedMinor, budget.scale, budget.currency)}</dd>
            <dt>Settled</dt>
            <dd>{money(budget.settledMinor, budget.scale, budget.currency)}</dd>
            <dt>Available</dt>
            <dd data-fact="available">{money(budget.availableMinor, budget.scale, budget.currency)}</dd>
            <dt>Created</dt>
            <dd>{when(budget.createdAt)}</dd>
          </dl>
          <h2>Reservations</h2>
          <form class="filters" aria-label="Reservation filter" onSubmit={(e) => e.preventDefault()}>
            <label>
              State
              <select value={states} onChange={(e) => setStates(e.currentTarget.value)}>
                {stateChoices.map((c) => (
                  <option key={c.value} value={c.value}>
                    {c.label}
                  </option>
                ))}
              </select>
            </label>
          </form>
          <PagedTable
            deps={[spaceId, budgetId, states]}
            load={(cursor) =>
              api
                .GET('/v1/spaces/{spaceId}/budgets/{id}/reservations', {
                  params: { path: { spaceId, id: budgetId }, query: { limit: 50, ...(states ? { state: states } : {}), ...(cursor ? { cursor } : {}) } },
                })
                .then(unwrap)
            }
            columns={columns}
            caption="The budget's reservations, oldest first, 50 a page."
            empty="No reservation matches."
            rowKey={(r) => r.id}
          />
        </>
      )}
    </section>
  );
}

function reservationColumns(budget: Budget, canVoid: boolean, voidIt: (r: Reservation) => Promise<void>): Array<Column<Reservation>> {
  const amount = (minor: string): string => money(minor, budget.scale, budget.currency);
  const columns: Array<Column<Reservation>> = [
    { header: 'Reservation', cell: (r) => <code class="id">{r.id}</code> },
    { header: 'State', cell: (r) => <StateBadge state={r.state} /> },
    { header: 'Holder', cell: (r) => r.holder },
    { header: 'Reserved', cell: (r) => amount(r.amountMinor), numeric: true },
    { header: 'Settled', cell: (r) => amount(r.settledMinor), numeric: true },
    { header: 'Remaining', cell: (r) => amount(r.remainingMinor), numeric: true },
    { header: 'Settle by', cell: (r) => when(r.settleBy) },
  ];
  if (!canVoid) return columns;
  return [
    ...columns,
    {
      header: 'Action',
      cell: (r, refresh) =>
        r.state === 'ACTIVE' ? (
          <ConfirmButton
            label="Void reservation"
            question={`Void the unspent ${amount(r.remainingMinor)} of ${r.holder}'s reservation? It returns to the budget, and the holder can settle nothing more against it.`}
            confirmLabel="Yes, void it"
            onConfirm={async () => {
              await voidIt(r);
              refresh();
            }}
          />
        ) : (
          '—'
        ),
    },
  ];
}
