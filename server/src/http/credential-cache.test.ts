import { describe, expect, it } from 'vitest';
import { LocalNotifier, ManualClock, type ApiKey, type Org, type Space } from '@baton/core';
import { CredentialCache, credentialsTopic, type Credential } from './credential-cache';

const T0 = Date.UTC(2026, 0, 1);
const org: Org = { id: 'o', name: 'o', plan: 'TEAM', limits: null, createdAt: T0, updatedAt: T0 };
const space: Space = { id: 's', orgId: 'o', name: 's', limits: null, createdAt: T0, updatedAt: T0 };
const key: ApiKey = { id: 'k', orgId: 'o', name: 'k', secretHash: 'h', permissions: ['coordination_write'], spaceIds: null, createdAt: T0, revokedAt: null };
const credential: Credential = { key, org, space };

describe('CredentialCache', () => {
  it('keeps a complete look-up for its TTL on the injected clock, then forgets it', () => {
    const clock = new ManualClock(T0);
    const cache = new CredentialCache(clock, 5_000);
    cache.put('k', 's', credential, cache.generation);
    expect(cache.get('k', 's')).toBe(credential);
    clock.advance(4_999);
    expect(cache.get('k', 's')).toBe(credential);
    clock.advance(1);
    expect(cache.get('k', 's')).toBeUndefined();
  });

  it('never keeps a miss: a key without its organization or space is looked up every time', () => {
    const cache = new CredentialCache(new ManualClock(T0));
    cache.put('k', 's', { key, org, space: undefined }, cache.generation);
    cache.put('k', 'x', { key, org: undefined, space }, cache.generation);
    expect(cache.get('k', 's')).toBeUndefined();
    expect(cache.get('k', 'x')).toBeUndefined();
  });

  it('a notification of the credentials topic clears it, and a look-up that raced the change is not kept', () => {
    const clock = new ManualClock(T0);
    const notifier = new LocalNotifier(clock);
    const cache = new CredentialCache(clock);
    const unfollow = cache.follow(notifier);
    cache.put('k', 's', credential, cache.generation);
    const before = cache.generation; // a request starts its store read here...
    notifier.notify(credentialsTopic); // ...the key is revoked and the change announced...
    expect(cache.get('k', 's')).toBeUndefined();
    cache.put('k', 's', credential, before); // ...and the stale read it got must not come back.
    expect(cache.get('k', 's')).toBeUndefined();
    unfollow();
    cache.put('k', 's', credential, cache.generation);
    notifier.notify(credentialsTopic);
    expect(cache.get('k', 's')).toBe(credential);
  });

  it('a missed-notification wake (wakeAll, as after a listener reconnect) clears it too', () => {
    const clock = new ManualClock(T0);
    const notifier = new LocalNotifier(clock);
    const cache = new CredentialCache(clock);
    cache.follow(notifier);
    cache.put('k', 's', credential, cache.generation);
    notifier.wakeAll();
    expect(cache.get('k', 's')).toBeUndefined();
  });
});
