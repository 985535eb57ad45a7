import { useMemo, useState } from 'preact/hooks';
import { apiClient, unwrap, type Api } from '../api/client';
import type { Permission } from '../api/session';
import { ConfirmButton } from '../components/confirm';
import { LiveBadge, usePoll } from '../components/poll';
import { ErrorNote, when } from '../components/ui';

/**
 * The operator view (/console/operator): organizations, their spaces and keys, creating and
 * revoking keys, and the clock, through /admin/v1 with BATON_ADMIN_TOKEN. The token is kept in
 * session storage under its own name, apart from any API key.
 */
const tokenStorageKey = 'baton.console.adminToken';
const allPermissions: Permission[] = ['coordination_read', 'coordination_write', 'resource_config', 'usage_read'];

export function OperatorConsole() {
  const [token, setToken] = useState<string | undefined>(() => sessionStorage.getItem(tokenStorageKey) ?? undefined);
  const api = useMemo(() => (token ? apiClient(token) : undefined), [token]);
  if (!api) {
    return (
      <OperatorSignIn
        onSignIn={async (given) => {
          const probe = await apiClient(given).GET('/admin/v1/orgs', { params: { query: { limit: 1 } } });
          if (probe.response.status === 401) throw new Error('The operator token is wrong.');
          if (probe.response.status === 404) throw new Error('This server has no operator API (it was started without BATON_ADMIN_TOKEN).');
          unwrap(probe);
          sessionStorage.setItem(tokenStorageKey, given);
          setToken(given);
        }}
      />
    );
  }
  return (
    <div class="frame">
      <header class="top">
        <a class="brand" href="/console/operator">
          Baton console · operator
        </a>
        <span class="who">/admin/v1 with the operator token</span>
        <button
          type="button"
          class="quiet"
          onClick={() => {
            sessionStorage.removeItem(tokenStorageKey);
            setToken(undefined);
          }}
        >
          Sign out
        </button>
      </header>
      <main class="content">
        <h1>Operator</h1>
        <Clock api={api} />
        <Orgs api={api} />
      </main>
    </div>
  );
}

function OperatorSignIn({ onSignIn }: { onSignIn: (token: string) => Promise<void> }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  return (
    <main class="sign-in">
      <h1>Baton console · operator</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setError(undefined);
          onSignIn(token.trim()).catch((caught: Error) => setError(caught.message));
        }}
      >
        <label for="admin-token">Operator token</label>
        <input id="admin-token" type="password" autocomplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} aria-describedby="admin-token-help" />
        <p id="admin-token-help" class="note">
          The server's BATON_ADMIN_TOKEN. Kept in this tab only. <a href="/console">Sign in with an API key instead</a>.
        </p>
        <button type="submit">Sign in</button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

function Clock({ api }: { api: Api }) {
  const polled = usePoll(() => api.GET('/admin/v1/clock').then(unwrap), [api]);
  return (
    <section class="panel" aria-labelledby="clock-title">
      <h2 id="clock-title">Clock</h2>
      <LiveBadge updatedAt={polled.updatedAt} error={polled.error} />
      {polled.data && (
        <p>
          {polled.data.mode} clock, now {when(polled.data.now)}
        </p>
      )}
    </section>
  );
}

function Orgs({ api }: { api: Api }) {
  const polled = usePoll(() => api.GET('/admin/v1/orgs', { params: { query: { limit: 100 } } }).then(unwrap), [api]);
  const [selected, setSelected] = useState<string | undefined>(undefined);
  const org = polled.data?.items.find((o) => o.id === selected);
  return (
    <section aria-labelledby="orgs-title">
      <h2 id="orgs-title">Organizations</h2>
      <ErrorNote error={polled.error} />
      {polled.data && (
        <table>
          <caption>Organizations, oldest first (the first 100)</caption>
          <thead>
            <tr>
              <th scope="col">Organization</th>
              <th scope="col">Plan</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {polled.data.items.map((o) => (
              <tr key={o.id} data-org={o.name}>
                <th scope="row">
                  <button type="button" class="link" aria-pressed={o.id === selected} onClick={() => setSelected(o.id)}>
                    {o.name}
                  </button>
                </th>
                <td>{o.plan}</td>
                <td>{when(o.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {org && <OrgDetail api={api} orgId={org.id} name={org.name} />}
    </section>
  );
}

function OrgDetail({ api, orgId, name }: { api: Api; orgId: string; name: string }) {
  const path = { orgId };
  const polled = usePoll(async () => {
    const [spaces, keys] = await Promise.all([
      api.GET('/admin/v1/orgs/{orgId}/spaces', { params: { path, query: { limit: 100 } } }).then(unwrap),
      api.GET('/admin/v1/orgs/{orgId}/keys', { params: { path, query: { limit: 100 } } }).then(unwrap),
    ]);
    return { spaces, keys };
  }, [api, orgId]);
  const [keyName, setKeyName] = useState('');
  const [permissions, setPermissions] = useState<Permission[]>(allPermissions);
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const create = async (event: Event): Promise<void> => {
    event.preventDefault();
    setError(undefined);
    try {
      const created = await api.POST('/admin/v1/orgs/{orgId}/keys', { params: { path }, body: { name: keyName.trim() || 'console', permissions } }).then(unwrap);
      setSecret(created.secret);
      polled.refresh();
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  };
  const revoke = (keyId: string) => async (): Promise<void> => {
    await api.POST('/admin/v1/keys/{keyId}/revoke', { params: { path: { keyId } } }).then(unwrap);
    polled.refresh();
  };
  return (
    <section class="panel" aria-labelledby="org-title">
      <h2 id="org-title">Organization {name}</h2>
      <ErrorNote error={polled.error} />
      {polled.data && (
        <>
          <table>
            <caption>Spaces</caption>
            <thead>
              <tr>
                <th scope="col">Space</th>
                <th scope="col">Id</th>
              </tr>
            </thead>
            <tbody>
              {polled.data.spaces.items.map((s) => (
                <tr key={s.id}>
                  <th scope="row">{s.name}</th>
                  <td>
                    <code class="id">{s.id}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <table>
            <caption>API keys (secrets are never shown again)</caption>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Permissions</th>
                <th scope="col">Spaces</th>
                <th scope="col">Revoked</th>
                <th scope="col">Action</th>
              </tr>
            </thead>
            <tbody>
              {polled.data.keys.items.map((k) => (
                <tr key={k.id} data-key={k.name}>
                  <th scope="row">{k.name}</th>
                  <td>{k.permissions.join(', ')}</td>
                  <td>{k.spaceIds === null ? 'all' : k.spaceIds.length}</td>
                  <td>{when(k.revokedAt)}</td>
                  <td>
                    {k.revokedAt === null ? (
                      <ConfirmButton label="Revoke" question={`Revoke key ${k.name}? Every call made with it is refused from now on.`} confirmLabel="Yes, revoke it" onConfirm={revoke(k.id)} />
                    ) : (
                      '—'
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <form class="filters" onSubmit={(e) => void create(e)} aria-label="Create a key">
        <label>
          New key's name
          <input value={keyName} onInput={(e) => setKeyName(e.currentTarget.value)} />
        </label>
        <fieldset>
          <legend>Permissions</legend>
          {allPermissions.map((p) => (
            <label key={p} class="check">
              <input
                type="checkbox"
                checked={permissions.includes(p)}
                onChange={(e) => setPermissions(e.currentTarget.checked ? [...permissions, p] : permissions.filter((q) => q !== p))}
              />
              {p}
            </label>
          ))}
        </fieldset>
        <button type="submit">Create key</button>
      </form>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {secret && (
        <p role="status">
          The new key, shown only this once: <output class="secret">{secret}</output>
        </p>
      )}
    </section>
  );
}
