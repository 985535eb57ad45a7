import { BatonError, type ApiKey, type Org, type Permission, type Space, type Store } from '@baton/core';
import type { FastifyRequest } from 'fastify';
import type { Credential, CredentialCache } from './credential-cache';
import { keyIdOf, secretMatches } from '../host/secrets';

export interface Principal {
  key: ApiKey;
  org: Org;
  space: Space;
}

/** What a /v1 route needs from its caller; set as the route's `config.access`. */
export interface RouteAccess {
  /** Any one of these permissions admits the call. */
  anyOf: Permission[];
  /**
   * A create route under the repeat-create rule (docs/api.md "Authentication and permissions"): a key without the permission may still repeat
   * the create of an identical existing resource, so the handler makes the final decision.
   */
  repeatCreate?: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
  interface FastifyRequest {
    principal?: Principal;
  }
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const unauthenticated = (): BatonError => new BatonError('UNAUTHENTICATED', 'send Authorization: Bearer <API key>; the key given is missing, unknown or revoked');

/**
 * Authenticates the bearer key and binds the request to its space, in the order a client can
 * act on: 401 unknown key, 404 space not in the key's organization, 403 key not allowed there,
 * 403 permission missing. Runs before validation, so a stranger learns nothing from a 400.
 */
export async function authenticate(store: Store, cache: CredentialCache, request: FastifyRequest, spaceId: string, access: RouteAccess): Promise<Principal> {
  const secret = bearer(request.headers.authorization);
  const keyId = secret === undefined ? undefined : keyIdOf(secret);
  if (secret === undefined || keyId === undefined) throw unauthenticated();
  const found = await lookUp(store, cache, keyId, uuidPattern.test(spaceId) ? spaceId.toLowerCase() : '');
  if (!found || found.key.revokedAt !== null || !secretMatches(secret, found.key.secretHash) || !found.org) throw unauthenticated();
  const { key, org, space } = found;
  if (!space || space.orgId !== key.orgId) throw new BatonError('NOT_FOUND', 'space not found');
  if (key.spaceIds !== null && !key.spaceIds.includes(space.id)) throw new BatonError('FORBIDDEN', 'credential is not allowed in this space');
  if (!access.repeatCreate && !access.anyOf.some((p) => key.permissions.includes(p))) {
    throw new BatonError('FORBIDDEN', `credential lacks ${access.anyOf[0]}`);
  }
  return { key, org, space };
}

/** The key, its organization and the space: from the cache when it has them, else one round trip. */
async function lookUp(store: Store, cache: CredentialCache, keyId: string, spaceId: string): Promise<Credential | undefined> {
  const cached = cache.get(keyId, spaceId);
  if (cached) return cached;
  const generation = cache.generation;
  const found = await store.read((tx) => tx.apiKeys.getWithTenant(keyId, spaceId));
  if (found) cache.put(keyId, spaceId, found, generation);
  return found;
}

export function hasPermission(principal: Principal, permission: Permission): boolean {
  return principal.key.permissions.includes(permission);
}

function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}
