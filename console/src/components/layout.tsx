import type { ComponentChildren } from 'preact';
import { useLocation, useRoute } from 'preact-iso';
import { useSignedIn } from '../console-context';

const sections: Array<{ path: string; label: string }> = [
  { path: '', label: 'Overview' },
  { path: '/mailboxes', label: 'Mailboxes' },
  { path: '/tasks', label: 'Tasks' },
  { path: '/task-groups', label: 'Task groups' },
  { path: '/runs', label: 'Runs' },
  { path: '/events', label: 'Live events' },
  { path: '/budgets', label: 'Budgets' },
  { path: '/allowances', label: 'Allowances' },
  { path: '/pools', label: 'Pools' },
  { path: '/claims', label: 'Claims' },
  { path: '/barriers', label: 'Barriers and timers' },
  { path: '/destinations', label: 'Webhooks' },
];

/** The frame of every signed-in page: who is signed in, the space, its sections. */
export function Layout({ children }: { children: ComponentChildren }) {
  const { session, signOut } = useSignedIn();
  const { path } = useLocation();
  const spaceId = /^\/console\/spaces\/([^/]+)/.exec(path)?.[1];
  const space = session.spaces.find((s) => s.id === spaceId);
  const base = spaceId ? `/console/spaces/${spaceId}` : undefined;
  return (
    <div class="frame">
      <header class="top">
        <a class="brand" href="/console">
          Baton console
        </a>
        <span class="who">
          {session.org.name} · plan {session.org.plan}
          {space ? ` · space ${space.name}` : ''}
        </span>
        <button type="button" class="quiet" onClick={signOut}>
          Sign out
        </button>
      </header>
      {base && (
        <nav class="sections" aria-label="Space sections">
          <ul>
            {sections.map((s) => {
              const href = `${base}${s.path}`;
              const current = s.path === '' ? path === base : path === href || path.startsWith(`${href}/`);
              return (
                <li key={s.path}>
                  <a href={href} aria-current={current ? 'page' : undefined}>
                    {s.label}
                  </a>
                </li>
              );
            })}
          </ul>
        </nav>
      )}
      <main class="content">{children}</main>
    </div>
  );
}

/** The route's space id; only used under /console/spaces/:spaceId. */
export function useSpaceId(): string {
  return useRoute().params.spaceId!;
}
