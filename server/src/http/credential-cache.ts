import type { Clock, KeyWithTenant, Notifier } from '@baton/core';

/** A key as authentication read it, with its organization and the space the request named. */
export type Credential = KeyWithTenant;

/** Notified after every change to keys, organizations, plans or space limits (admin routes, PUT /limits). */
export const credentialsTopic = 'credentials:changed';

/**
 * Verified keys, per server, for a few seconds: every request authenticates, and reading the
 * key, its organization and space cost a round trip of its own (a third of a budget reserve's
 * before issue 12). A change is announced on `credentialsTopic`; with the PgNotifier that
 * reaches every server through LISTEN/NOTIFY within milliseconds, and a server whose listener
 * was down wakes every wait when it reconnects, which clears this cache too. The TTL bounds
 * staleness should both fail at once.
 *
 * Only complete look-ups are kept (a key, its organization and the space), never a miss: a
 * stranger's guesses always reach the store. A look-up that raced a change is not kept either:
 * `generation` moves on every clear, and put() drops what was read before the last one.
 *
 * Entries expire on `realTime`, the wall clock, not the service clock (docs/design/0023-service-clock.md: caches
 * expire on real time), so a manual clock that never moves does not keep them forever.
 */
export class CredentialCache {
  private readonly entries = new Map<string, { credential: Credential; expiresAtMs: number }>();
  private generationCount = 0;

  constructor(
    private readonly realTime: Clock,
    private readonly ttlMs = 5_000,
  ) {}

  /** Read before the store look-up and hand to put(): a clear in between voids the put. */
  get generation(): number {
    return this.generationCount;
  }

  get(keyId: string, spaceId: string): Credential | undefined {
    const entry = this.entries.get(cacheKey(keyId, spaceId));
    if (!entry) return undefined;
    if (entry.expiresAtMs <= this.realTime.now()) {
      this.entries.delete(cacheKey(keyId, spaceId));
      return undefined;
    }
    return entry.credential;
  }

  put(keyId: string, spaceId: string, credential: Credential, generation: number): void {
    if (generation !== this.generationCount || !credential.org || !credential.space) return;
    // Bounded by the keys and spaces that really exist; a fleet has few. Expired entries go on read.
    this.entries.set(cacheKey(keyId, spaceId), { credential, expiresAtMs: this.realTime.now() + this.ttlMs });
  }

  clear(): void {
    this.generationCount += 1;
    this.entries.clear();
  }

  /** Clears on every notification of `credentialsTopic`; returns the unsubscribe. */
  follow(notifier: Notifier): () => void {
    return notifier.subscribe(credentialsTopic, () => this.clear());
  }
}

const cacheKey = (keyId: string, spaceId: string): string => `${keyId} ${spaceId}`;
