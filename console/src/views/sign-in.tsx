import { useState } from 'preact/hooks';

/**
 * The key is typed into a password field and kept in session storage (api/session.ts); the form
 * never submits natively (the CSP's form-action 'none' would refuse it anyway), so the key cannot
 * land in a URL.
 */
export function SignIn({ onSignIn, failure }: { onSignIn: (key: string) => Promise<void>; failure: string | undefined }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(failure);
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await onSignIn(key.trim());
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
      setBusy(false);
    }
  };
  return (
    <main class="sign-in">
      <h1>Baton console</h1>
      <form onSubmit={(e) => void submit(e)}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-describedby="api-key-help"
        />
        <p id="api-key-help" class="note">
          The key printed at the server's first start (BATON_KEY), or one from <code>baton-server keys create</code>. It is kept in this tab only and
          forgotten when the tab closes.
        </p>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
      <p>
        <a href="/console/operator">Operator? Sign in with BATON_ADMIN_TOKEN</a>
      </p>
    </main>
  );
}
