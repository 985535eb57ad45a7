import { BatonError, type Permission, type Store } from '@baton/core';
import { keyIdOf, secretMatches } from '../host/secrets';

/** What the console shows of its own key: the spaces it can open and what it may do there. */
export interface ConsoleSession {
  org: { id: string; name: string; plan: string };
  permissions: Permission[];
  /** Every space of the organization the key may use (all of them when the key names none). */
  spaces: Array<{ id: string; name: string }>;
}

/** The console lists at most this many spaces; an organization with more opens the rest by id. */
export const consoleSpacesShown = 200;

const unauthenticated = (): BatonError => new BatonError('UNAUTHENTICATED', 'send Authorization: Bearer <API key>; the key given is missing, unknown or revoked');

/**
 * The key's session, as the /v1 routes would judge the same key (auth.ts): unknown, revoked or
 * mismatched secrets are refused alike, and a key limited to some spaces sees only those. The
 * API has no route that lists a key's spaces (spaces are managed by the operator), so the console
 * asks this one; it reveals nothing a key could not learn by calling /v1 on each space.
 */
export async function consoleSession(store: Store, authorization: string | undefined): Promise<ConsoleSession> {
  const secret = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
  const keyId = secret === undefined ? undefined : keyIdOf(secret);
  if (secret === undefined || keyId === undefined) throw unauthenticated();
  return store.read(async (tx) => {
    const key = await tx.apiKeys.get(keyId);
    if (!key || key.revokedAt !== null || !secretMatches(secret, key.secretHash)) throw unauthenticated();
    const org = await tx.orgs.get(key.orgId);
    if (!org) throw unauthenticated();
    const spaces =
      key.spaceIds === null
        ? await tx.spaces.listByOrg(org.id, null, consoleSpacesShown)
        : (await Promise.all(key.spaceIds.slice(0, consoleSpacesShown).map((id) => tx.spaces.get(id)))).filter((s) => s !== undefined && s.orgId === org.id);
    return {
      org: { id: org.id, name: org.name, plan: org.plan },
      permissions: [...key.permissions],
      spaces: spaces.map((s) => ({ id: s!.id, name: s!.name })),
    };
  });
}
