import { unwrap } from '../api/client';
import { useSignedIn } from '../console-context';
import { useSpaceId } from '../components/layout';
import { Pager, useCursorPages } from '../components/pager';
import { LiveBadge, usePoll } from '../components/poll';
import { ageInWords, ErrorNote, Needs, PageTitle, when } from '../components/ui';

/** Which mailbox is backing up: READY, CLAIMED and DEAD counts, and the oldest READY message's age. */
export function Mailboxes() {
  return (
    <section>
      <PageTitle>Mailboxes</PageTitle>
      <Needs permission="usage_read">
        <Backlog />
      </Needs>
    </section>
  );
}

function Backlog() {
  const { api } = useSignedIn();
  const spaceId = useSpaceId();
  const pages = useCursorPages();
  const polled = usePoll(
    () => api.GET('/v1/spaces/{spaceId}/diagnostics/backlog', { params: { path: { spaceId }, query: { limit: 50, ...(pages.cursor ? { cursor: pages.cursor } : {}) } } }).then(unwrap),
    [spaceId, pages.cursor],
  );
  const page = polled.data;
  return (
    <>
      <LiveBadge updatedAt={polled.updatedAt} error={polled.error} />
      <ErrorNote error={page ? undefined : polled.error} />
      {page && page.items.length === 0 && <p>This space has no mailbox yet.</p>}
      {page && page.items.length > 0 && (
        <table>
          <caption>Mailboxes in name order, 50 a page.</caption>
          <thead>
            <tr>
              <th scope="col">Mailbox</th>
              <th scope="col">READY</th>
              <th scope="col">CLAIMED</th>
              <th scope="col">DEAD</th>
              <th scope="col">Oldest READY</th>
            </tr>
          </thead>
          <tbody>
            {page.items.map((m) => (
              <tr key={m.mailboxId} data-mailbox={m.name}>
                <th scope="row">
                  {m.name} <code class="id">{m.mailboxId}</code>
                </th>
                <td class="number">
                  {m.ready}
                  {m.capped ? '+' : ''}
                </td>
                <td class="number">{m.claimed}</td>
                <td class={m.dead > 0 ? 'number alarm' : 'number'}>{m.dead}</td>
                <td title={when(m.oldestReadyAt)}>{ageInWords(m.oldestReadyAgeSeconds)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager page={pages.page} nextCursor={page?.nextCursor} onNext={pages.next} onBack={pages.back} />
    </>
  );
}
