/** The tenancy repositories: organizations, spaces and API keys (every store implements them). */
import type { CreatedPosition } from '../paging';
import type { ApiKey, Org, Space } from './model';

export interface OrgRepository {
  insert(org: Org): Promise<void>;
  get(id: string): Promise<Org | undefined>;
  update(org: Org): Promise<void>;
  count(): Promise<number>;
  /** Oldest first by (createdAt, id), after `after`: the operator's list (GET /admin/v1/orgs). */
  list(after: CreatedPosition | null, limit: number): Promise<Org[]>;
}

export interface SpaceRepository {
  insert(space: Space): Promise<void>;
  get(id: string): Promise<Space | undefined>;
  update(space: Space): Promise<void>;
  countByOrg(orgId: string): Promise<number>;
  /** The organization's spaces, oldest first by (createdAt, id), after `after`. */
  listByOrg(orgId: string, after: CreatedPosition | null, limit: number): Promise<Space[]>;
}

export interface KeyWithTenant {
  key: ApiKey;
  org: Org | undefined;
  space: Space | undefined;
}

export interface ApiKeyRepository {
  insert(key: ApiKey): Promise<void>;
  get(id: string): Promise<ApiKey | undefined>;
  update(key: ApiKey): Promise<void>;
  countActiveByOrg(orgId: string): Promise<number>;
  /**
   * The organization's keys, revoked ones too, oldest first by (createdAt, id), after `after`;
   * with `spaceId`, only those that may use that space (every-space keys and keys naming it).
   */
  listByOrg(orgId: string, spaceId: string | null, after: CreatedPosition | null, limit: number): Promise<ApiKey[]>;
  /**
   * The key with its organization and the space a request names, in one round trip: every
   * request authenticates, so this is on every request's path (server/src/http/auth.ts).
   */
  getWithTenant(keyId: string, spaceId: string): Promise<KeyWithTenant | undefined>;
}
