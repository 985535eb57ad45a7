import { effectiveLimits, MemoryStore, planLimits, SeededRandom } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { capsInWords, startBanner, type BannerFacts } from './banner';
import { bootstrapDev, firstTenant } from './bootstrap';

const address = 'http://127.0.0.1:8080';
const scopeId = '0b7c3a52-7d1e-4a8e-9f0a-3c1d2e4f5a6b';
const base: Omit<BannerFacts, 'created' | 'existing'> = { address, bootstrap: true, adminEnabled: false, scopeId };

/** The `export NAME=value` lines of a banner, as a shell would set them. */
const exported = (banner: string): Record<string, string> =>
  Object.fromEntries([...banner.matchAll(/^ {2}export (BATON_\w+)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]));

describe('the start-up banner', () => {
  it('on a first start, prints every variable a snippet reads (URL, space, key, scope) and says the plan has no caps', async () => {
    const created = await bootstrapDev(new MemoryStore(), 0, new SeededRandom(3));
    const banner = startBanner({ ...base, created, existing: undefined });
    expect(exported(banner)).toEqual({ BATON_URL: address, BATON_SPACE: created!.spaceId, BATON_KEY: created!.secret, BATON_SCOPE: scopeId });
    expect(banner).toContain(`Organization "dev" (${created!.orgId}) is on plan ENTERPRISE: no caps on operations, rate, agents, active runs or active tasks`);
    expect(banner).toContain('BATON_BOOTSTRAP_PLAN=FREE');
    expect(banner).toContain('shown only this once');
  });

  it('on a first start with BATON_BOOTSTRAP_PLAN=FREE, names the caps and how to lift them with the organization id', async () => {
    const created = await bootstrapDev(new MemoryStore(), 0, new SeededRandom(3), 'FREE');
    const banner = startBanner({ ...base, created, existing: undefined });
    expect(banner).toContain('is on plan FREE: capped at 100,000 operations a month, 600 requests a minute, 10 agents at once, 200 active runs, 1,000 active tasks');
    expect(banner).toContain(`npx baton-server orgs plan ${created!.orgId} --plan ENTERPRISE`);
    expect(exported(banner).BATON_KEY).toBe(created!.secret);
  });

  it('on a later start, prints URL and space but no key, and says how to make a key and a scope', async () => {
    const store = new MemoryStore();
    const created = await bootstrapDev(store, 0, new SeededRandom(3));
    const banner = startBanner({ ...base, adminEnabled: true, created: undefined, existing: await firstTenant(store) });
    expect(exported(banner)).toEqual({ BATON_URL: address, BATON_SPACE: created!.spaceId });
    expect(banner).not.toContain(created!.secret);
    expect(banner).toContain(`npx baton-server keys create ${created!.orgId}`);
    expect(banner).toContain('crypto.randomUUID()');
    expect(banner).toContain('no caps');
  });

  it('without bootstrap, says no organization is made and how to make one', () => {
    const off = startBanner({ ...base, bootstrap: false, created: undefined, existing: undefined });
    expect(exported(off)).toEqual({});
    expect(off).toContain('BATON_BOOTSTRAP=off');
    expect(off).toContain('BATON_ADMIN_TOKEN');
    expect(startBanner({ ...base, bootstrap: false, adminEnabled: true, created: undefined, existing: undefined })).toContain('npx baton-server orgs create --name NAME');
  });

  it('words every plan\'s caps from its limits', () => {
    expect(capsInWords(planLimits.TEAM)).toBe('capped at 15,000,000 operations a month, 3,000 requests a minute, 1,000 agents at once, 10,000 active runs, 100,000 active tasks');
    expect(capsInWords(effectiveLimits({ plan: 'LEGACY', limits: null }))).toBe('capped at 600 requests a minute, 200 active runs, 1,000 active tasks');
  });
});
