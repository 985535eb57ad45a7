/**
 * The signed-in key. It lives in this tab's sessionStorage only: never in a URL, a cookie, local
 * storage or a log, and it is gone when the tab closes.
 */
const storageKey = 'baton.console.key';

export function storedKey(): string | undefined {
  return sessionStorage.getItem(storageKey) ?? undefined;
}

export function storeKey(key: string): void {
  sessionStorage.setItem(storageKey, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(storageKey);
}

export type Permission = 'coordination_read' | 'coordination_write' | 'resource_config' | 'usage_read';

/** GET /console/session (server/src/http/console-session.ts): not part of the API, so typed here. */
export interface ConsoleSession {
  org: { id: string; name: string; plan: string };
  permissions: Permission[];
  spaces: Array<{ id: string; name: string }>;
}

export class SignInError extends Error {
  override name = 'SignInError';
}

export async function fetchSession(key: string): Promise<ConsoleSession> {
  const reply = await fetch('/console/session', { headers: { authorization: `Bearer ${key}` } });
  if (reply.status === 401) throw new SignInError('The key is unknown or revoked.');
  if (!reply.ok) throw new SignInError(`The server answered ${reply.status}.`);
  return (await reply.json()) as ConsoleSession;
}
