import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { MemoryStore, SystemClock, type Store } from '@baton/core';
import { createBaton, openStore, type Baton } from '@baton-coordination/server';
import { ConfigError, loadConfig } from '@baton-coordination/server/config';
import axe from 'axe-core';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The operator console (docs/console.md) in a real browser: Debian's chromium driven by
 * playwright-core, against a live server on embedded PGlite with seeded data. Each view's
 * screenshot is written to docs/console/, which docs/console.md shows. Needs the console built
 * (npm test builds first) and chromium at /usr/bin/chromium (.ci/run installs it). Every view
 * screenshot is also audited by axe-core: a serious or critical violation fails the test.
 */
const chromiumPath = process.env.BATON_CHROMIUM ?? '/usr/bin/chromium';
const shots = new URL('../docs/console/', import.meta.url).pathname;
const adminToken = 'console-test-admin';

interface Tenant {
  orgId: string;
  spaceId: string;
  key: string;
}

let baton: Baton;
let store: Store;
let baseUrl: string;
let browser: Browser;
let a: Tenant & { readKey: string; mailboxId: string; scopeId: string; pendingTaskId: string; otherTaskId: string };
let b: Tenant;

async function call(method: string, path: string, key: string, body?: unknown): Promise<any> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': randomUUID() }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const admin = (path: string, body: unknown): Promise<any> => call('POST', `/admin/v1${path}`, adminToken, body);

async function tenant(name: string, plan: string): Promise<Tenant & { readKey: string }> {
  const org = await admin('/orgs', { name, plan });
  const space = await admin(`/orgs/${org.id}/spaces`, { name: `${name}-main` });
  const key = (await admin(`/orgs/${org.id}/keys`, { name: 'operator' })).secret as string;
  const readKey = (await admin(`/orgs/${org.id}/keys`, { name: 'watcher', permissions: ['coordination_read', 'usage_read'] })).secret as string;
  return { orgId: org.id, spaceId: space.id, key, readKey };
}

/** What an operator would find: a backlog, a task done, two waiting, resources in use, a claim, a webhook. */
async function seed(t: Tenant): Promise<{ mailboxId: string; scopeId: string; pendingTaskId: string; otherTaskId: string }> {
  const v1 = (path: string, body?: unknown): Promise<any> => call(body === undefined ? 'GET' : 'POST', `/v1/spaces/${t.spaceId}${path}`, t.key, body);
  const scopeId = randomUUID();
  const worker = { holder: 'agent-7', holderSession: randomUUID() };
  await v1('/runs', { scopeId, name: 'nightly-build' });
  await v1('/runs', { scopeId: randomUUID(), parentScopeId: scopeId, name: 'shard-a' });
  const mailbox = await v1('/mailboxes', { name: 'build-jobs' });
  await v1('/mailboxes', { name: 'reviews' });
  await v1('/pools', { name: 'gpu', capacity: 1 });
  const allowance = await v1('/allowances', { name: 'llm-tokens', unitsLimit: 10, windowSeconds: 3600 });
  const budget = await v1('/budgets', { name: 'usd', currency: 'USD', scale: 2, limitMinor: '100000' });
  await v1(`/budgets/${budget.id}/reserve`, { scopeId, holder: worker.holder, amountMinor: '2500' });
  await v1(`/allowances/${allowance.id}/consume`, { scopeId, units: 3, holder: worker.holder });
  await v1('/claims', { claimKey: 'deploy-lock', scopeId, ...worker, leaseSeconds: 600 });
  await v1('/destinations', { url: 'https://hooks.invalid/baton' });
  await v1('/tasks', { scopeId, mailboxId: mailbox.id, taskKey: 'compile', input: { step: 1 } });
  const admitted = await v1('/tasks/admit', { scopeId, mailboxId: mailbox.id, ...worker });
  await call('POST', `/v1/spaces/${t.spaceId}/messages/${admitted.messageId}/complete`, t.key, { token: admitted.token, result: { payload: { ok: true } } });
  // 'train' holds the one GPU while it runs, so 'link' is blocked at admission on the pool.
  await v1('/tasks', { scopeId, mailboxId: mailbox.id, taskKey: 'train', input: { step: 2 }, requirements: { pools: [{ name: 'gpu', units: 1 }] } });
  await v1('/tasks/admit', { scopeId, mailboxId: mailbox.id, ...worker });
  const pending = await v1('/tasks', { scopeId, mailboxId: mailbox.id, taskKey: 'link', input: { step: 3 }, requirements: { pools: [{ name: 'gpu', units: 1 }] } });
  const other = await v1('/tasks', { scopeId, mailboxId: mailbox.id, taskKey: 'package', input: { step: 4 } });
  for (const n of [1, 2, 3]) await v1(`/mailboxes/${mailbox.id}/messages`, { scopeId, payload: { n } });
  const reviews = await v1('/mailboxes', { name: 'review-votes' });
  const group = await v1('/task-groups', { mailboxId: reviews.id, condition: 'ALL_TERMINAL', parentScopeId: scopeId });
  await v1(`/task-groups/${group.groupId}/tasks`, { taskKey: 'review-1', input: { reviewer: 1 } });
  const barrier = await v1('/barriers', { scopeId, target: 3 });
  await call('POST', `/v1/spaces/${t.spaceId}/barriers/${barrier.id}/arrive`, t.key, { arrivalKey: 'shard-1' });
  await v1('/timers', { timerKey: 'nightly-tick', scopeId, delaySeconds: 3600, mailboxId: mailbox.id, payload: { tick: true } });
  await v1('/work-limits', { name: 'build-slots', maxConcurrent: 2 });
  return { mailboxId: mailbox.id, scopeId, pendingTaskId: pending.taskId, otherTaskId: other.taskId };
}

async function signIn(key: string, path = '/console'): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on('console', (message) => {
    // A CSP violation or a script error would show here: the console must have none.
    if (message.type() === 'error' && !/Failed to load resource/.test(message.text())) throw new Error(`browser console: ${message.text()}`);
  });
  await page.goto(`${baseUrl}${path}`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  if (path === '/console') await page.getByRole('heading', { name: 'Spaces' }).waitFor();
  return page;
}

/**
 * axe-core's audit of what the page shows now: its serious and critical violations (WCAG A and AA
 * rules and axe's best practices). The script is evaluated over the DevTools protocol, which the
 * page's CSP does not govern: the console's own CSP stays as served.
 */
async function graveViolations(page: Page, view: string): Promise<string[]> {
  if (!(await page.evaluate("typeof window.axe === 'object'"))) await page.evaluate(axe.source);
  const result = (await page.evaluate('window.axe.run(document)')) as axe.AxeResults;
  if (process.env.AXE_LOG) console.info(`axe ${view}: ${result.passes.length} rules pass; violations: ${result.violations.map((v) => `${v.id} (${v.impact})`).join(', ') || 'none'}; to review: ${result.incomplete.map((v) => v.id).join(', ') || 'none'}`);
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help}; at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** Fails on any serious or critical violation, naming the view. */
async function audit(page: Page, view: string): Promise<void> {
  expect({ view, violations: await graveViolations(page, view) }).toEqual({ view, violations: [] });
}

/** The view's screenshot for docs/console/, after its accessibility audit. */
async function shot(page: Page, name: string): Promise<void> {
  await audit(page, name);
  await page.screenshot({ path: `${shots}${name}.png`, fullPage: true });
}

beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  store = await openStore({ kind: 'pglite' });
  baton = await createBaton({ store, clock: new SystemClock(), adminToken, webhooks: { secretKey: randomBytes(32) } });
  await baton.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(baton.app.server.address() as AddressInfo).port}`;
  const acme = await tenant('acme', 'TEAM');
  a = { ...acme, ...(await seed(acme)) };
  b = await tenant('globex', 'TEAM');
  await seed(b);
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await baton?.drainAndClose();
  await store?.close();
});

// A browser step waits on a busy CI machine (the whole suite runs beside it): room to spare.
describe('the console in a browser', { timeout: 90_000 }, () => {
  it('is served with a strict CSP, an uncached page and immutable hashed assets, outside the OpenAPI document', async () => {
    const page = await fetch(`${baseUrl}/console/spaces/x/tasks`);
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    const html = await page.text();
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    expect(html).not.toMatch(/<script>(?!<\/script>)|<script(?![^>]*\bsrc=)[^>]*>/);
    const asset = await fetch(`${baseUrl}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${baseUrl}/console/assets/missing-000.js`)).status).toBe(404);
    const doc = (await (await fetch(`${baseUrl}/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/console'))).toEqual([]);
  });

  it('signs in with a key kept in session storage only, and shows the space overview', async () => {
    const page = await signIn(a.key);
    expect(page.url()).not.toContain(a.key);
    expect(await page.evaluate("sessionStorage.getItem('baton.console.key')")).toBe(a.key);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    await shot(page, 'spaces');
    await page.getByRole('link', { name: 'acme-main' }).click();
    await page.getByRole('heading', { name: /^Usage in/ }).waitFor();
    const tasksRow = page.locator('tr[data-resource="tasks"]');
    await expect.poll(() => tasksRow.textContent()).toMatch(/^tasks5/);
    expect(await tasksRow.textContent()).toMatch(/SUCCEEDED 1/);
    expect(await page.getByText('Active tasks').count()).toBe(1);
    // The request rate needs two readings of GET /usage, one refresh (5 s) apart.
    const rate = page.getByRole('img', { name: /^Requests a minute, read every 5 s: now \d[\d,]* a minute; lowest \d[\d,]* a minute, highest \d[\d,]* a minute over the last \d+ readings$/ });
    await rate.waitFor({ timeout: 15_000 });
    // A third reading draws a line between two rates: what the screenshot shows.
    await expect.poll(async () => Number(await rate.getAttribute('data-points')), { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
    await shot(page, 'overview');
    // A reload keeps the tab signed in: the key is still in its session storage.
    await page.reload();
    await page.getByRole('heading', { name: /^Usage in/ }).waitFor();
    await page.context().close();
  });

  it('is usable by keyboard alone: sign in, open a space, move between sections', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${baseUrl}/console`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.id')).toBe('api-key');
    await page.keyboard.type(a.key);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Spaces' }).waitFor();
    await page.getByRole('link', { name: 'acme-main' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: /^Usage in/ }).waitFor();
    // Tab order: brand, Sign out, then the sections in order.
    const tabs: string[] = [];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      tabs.push(String(await page.evaluate('document.activeElement.textContent.trim()')));
    }
    expect(tabs).toEqual(['Baton console', 'Sign out', 'Overview', 'Mailboxes']);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Mailboxes' }).waitFor();
    expect(await page.getByRole('link', { name: 'Mailboxes' }).getAttribute('aria-current')).toBe('page');
    await context.close();
  });

  it("opens the banner's link to a space at that space once signed in", async () => {
    const page = await signIn(a.key, `/console/spaces/${a.spaceId}`);
    await page.getByRole('heading', { name: /^Usage in/ }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/console/spaces/${a.spaceId}`);
    await page.context().close();
  });

  it('shows the mailboxes backlog, the tasks with filters, and the resource views', async () => {
    const page = await signIn(a.key);
    const base = `${baseUrl}/console/spaces/${a.spaceId}`;
    await page.goto(`${base}/mailboxes`);
    const jobs = page.locator('tr[data-mailbox="build-jobs"]');
    await jobs.waitFor();
    // Three sent messages and two task deliveries wait READY.
    expect(await jobs.locator('td').first().textContent()).toBe('5');
    await page.locator('tr[data-mailbox="reviews"]').waitFor();
    expect(await page.locator('tr[data-mailbox="review-votes"] td').first().textContent()).toBe('1');
    await shot(page, 'mailboxes');

    await page.getByRole('link', { name: 'Tasks' }).click();
    await page.locator('tr[data-task="compile"]').waitFor();
    // Four in the run, one in the task group.
    expect(await page.locator('tbody tr').count()).toBe(5);
    await page.getByLabel('State').selectOption('SUCCEEDED');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    expect(await page.locator('tr[data-task="compile"]').count()).toBe(1);
    await page.getByLabel('State').selectOption('');
    await page.getByLabel('Scope id').fill(randomUUID());
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No task matches.').waitFor();
    await page.getByLabel('Scope id').fill(a.scopeId);
    await page.getByRole('button', { name: 'Filter' }).click();
    const inScope = (await call('GET', `/v1/spaces/${a.spaceId}/tasks?scopeId=${a.scopeId}`, a.key)).items.length;
    expect(inScope).toBeGreaterThanOrEqual(4);
    await expect.poll(() => page.locator('tbody tr').count()).toBe(inScope);
    await shot(page, 'tasks');

    await page.getByRole('link', { name: 'link', exact: true }).click();
    await page.getByRole('heading', { name: 'Task link' }).waitFor();
    await page.getByRole('heading', { name: 'Why it waits: RESOURCES' }).waitFor();
    expect(await page.getByText(/pool gpu: UNITS_IN_USE/).count()).toBe(1);
    await shot(page, 'task');

    const views: Array<[string, string, string | RegExp]> = [
      ['Task groups', 'task-groups', 'PENDING 1'],
      ['Barriers and timers', 'barriers', '1 of 3'],
      ['Budgets', 'budgets', 'usd'],
      ['Allowances', 'allowances', 'llm-tokens'],
      ['Pools', 'pools', 'gpu'],
      ['Claims', 'claims', 'deploy-lock'],
      ['Webhooks', 'destinations', 'https://hooks.invalid/baton'],
    ];
    for (const [link, name, text] of views) {
      await page.getByRole('navigation', { name: 'Space sections' }).getByRole('link', { name: link }).click();
      await page.locator('tbody').getByText(text, { exact: true }).first().waitFor();
      await shot(page, name);
    }
    await page.getByRole('navigation', { name: 'Space sections' }).getByRole('link', { name: 'Barriers and timers' }).click();
    await page.locator('tbody').getByText('nightly-tick', { exact: true }).waitFor();
    await page.getByRole('navigation', { name: 'Space sections' }).getByRole('link', { name: 'Pools' }).click();
    await page.locator('tbody').getByText('build-slots', { exact: true }).waitFor();

    // Runs: found by scopeId, then walked as a tree through child and parent links.
    await page.getByRole('navigation', { name: 'Space sections' }).getByRole('link', { name: 'Runs' }).click();
    await page.getByLabel('Scope id').fill(a.scopeId);
    await page.getByRole('button', { name: 'Open run' }).click();
    await page.getByRole('heading', { name: 'Run nightly-build' }).waitFor();
    await page.getByRole('link', { name: 'link', exact: true }).waitFor();
    expect(await page.locator('tr[data-resource="tasks"] td').first().textContent()).toBe('4');
    await shot(page, 'runs');
    await page.getByRole('link', { name: 'shard-a' }).click();
    await page.getByRole('heading', { name: 'Run shard-a' }).waitFor();
    await page.getByRole('link', { name: a.scopeId }).click();
    await page.getByRole('heading', { name: 'Run nightly-build' }).waitFor();
    await page.context().close();
  });

  it('shows a new event on the live stream within a second', async () => {
    const page = await signIn(a.key);
    await page.goto(`${baseUrl}/console/spaces/${a.spaceId}/events`);
    await page.locator('[data-live="yes"]').waitFor();
    const before = await page.locator('tr[data-event-type="message.sent"]').count();
    expect(before).toBeGreaterThanOrEqual(3);
    const sentAt = Date.now();
    await call('POST', `/v1/spaces/${a.spaceId}/mailboxes/${a.mailboxId}/messages`, a.key, { scopeId: a.scopeId, payload: { n: 4 } });
    await page.locator('tr[data-event-type="message.sent"]').nth(before).waitFor({ timeout: 5000 });
    const shownMs = Date.now() - sentAt;
    expect(shownMs).toBeLessThan(1000);
    console.info(`console: a new event was on the live stream ${shownMs} ms after its write was acknowledged`);
    await shot(page, 'events');
    await page.context().close();
  });

  it('cancels a task after a confirmation, through the API', async () => {
    const page = await signIn(a.key);
    await page.goto(`${baseUrl}/console/spaces/${a.spaceId}/tasks/${a.otherTaskId}`);
    await page.getByRole('button', { name: 'Cancel task' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    // Keep it: nothing happens.
    await dialog.getByRole('button', { name: 'Keep it' }).click();
    expect((await call('GET', `/v1/spaces/${a.spaceId}/tasks/${a.otherTaskId}`, a.key)).state).toBe('PENDING');
    await page.getByRole('button', { name: 'Cancel task' }).click();
    await shot(page, 'cancel-confirmation');
    await dialog.getByRole('button', { name: 'Yes, cancel it' }).click();
    await page.locator('.task-head .state-cancelled').waitFor();
    expect((await call('GET', `/v1/spaces/${a.spaceId}/tasks/${a.otherTaskId}`, a.key)).state).toBe('CANCELLED');
    expect(await page.getByRole('button', { name: 'Cancel task' }).count()).toBe(0);
    await page.context().close();
  });

  it('shows a read-only key no action button', async () => {
    const page = await signIn(a.readKey);
    await page.goto(`${baseUrl}/console/spaces/${a.spaceId}/tasks/${a.pendingTaskId}`);
    await page.getByRole('heading', { name: 'Task link' }).waitFor();
    await page.locator('.task-head .state-pending').waitFor();
    expect(await page.getByRole('button', { name: /cancel/i }).count()).toBe(0);
    expect(await page.locator('button.danger').count()).toBe(0);
    // An OPEN group and an ACTIVE run: a write key would see Close group and Cancel run here.
    for (const path of ['task-groups', 'destinations', `runs/${a.scopeId}`]) {
      await page.goto(`${baseUrl}/console/spaces/${a.spaceId}/${path}`);
      await page.locator('tbody tr').first().waitFor();
      expect({ path, actions: await page.locator('button.danger').count() }).toEqual({ path, actions: 0 });
    }
    await page.context().close();
  });

  it('closes a task group after a confirmation, through the API', async () => {
    const page = await signIn(a.key);
    await page.goto(`${baseUrl}/console/spaces/${a.spaceId}/task-groups`);
    await page.getByRole('button', { name: 'Close group' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Yes, close it' }).click();
    await page.locator('tbody .state-sealed, tbody .state-decided').first().waitFor();
    const groups = (await call('GET', `/v1/spaces/${a.spaceId}/task-groups`, a.key)).items as Array<{ state: string }>;
    expect(groups.map((g) => g.state)).not.toContain('OPEN');
    expect(await page.getByRole('button', { name: 'Close group' }).count()).toBe(0);
    await page.context().close();
  });

  it("shows a task group's page: members with their verdicts, the decision, and Close there", async () => {
    const v1 = (path: string, body?: unknown): Promise<any> => call(body === undefined ? 'GET' : 'POST', `/v1/spaces/${a.spaceId}${path}`, a.key, body);
    const votes = await v1('/mailboxes', { name: 'release-votes' });
    const group = await v1('/task-groups', { mailboxId: votes.id, condition: 'N_ACCEPTED', threshold: 2, parentScopeId: a.scopeId });
    const first = await v1(`/task-groups/${group.groupId}/tasks`, { taskKey: 'vote-a', input: { voter: 'a' } });
    await v1(`/task-groups/${group.groupId}/tasks`, { taskKey: 'vote-b', input: { voter: 'b' } });
    const worker = { holder: 'agent-8', holderSession: randomUUID() };
    const admitted = await v1('/tasks/admit', { scopeId: group.scopeId, mailboxId: votes.id, ...worker });
    await v1(`/messages/${admitted.messageId}/complete`, { token: admitted.token, result: { payload: { vote: 'yes' } } });
    await v1(`/task-groups/${group.groupId}/tasks/${first.taskId}/accept`, {});

    const reader = await signIn(a.readKey);
    await reader.goto(`${baseUrl}/console/spaces/${a.spaceId}/task-groups/${group.groupId}`);
    await reader.locator('tr[data-member="vote-a"]').waitFor();
    expect(await reader.locator('button.danger').count()).toBe(0);
    await reader.context().close();

    const page = await signIn(a.key);
    await page.goto(`${baseUrl}/console/spaces/${a.spaceId}/task-groups`);
    await page.getByRole('link', { name: group.groupId }).click();
    await page.getByRole('heading', { name: 'Task group' }).waitFor();
    const voteA = page.locator('tr[data-member="vote-a"]');
    await voteA.waitFor();
    expect(await voteA.locator('td').allTextContents()).toEqual(['SUCCEEDED', 'ACCEPTED', expect.any(String)]);
    expect((await page.locator('tr[data-member="vote-b"] td').allTextContents()).slice(0, 2)).toEqual(['PENDING', 'PENDING']);
    expect(await page.locator('[data-decision]').getAttribute('data-decision')).toBe('none');
    expect(await page.getByText('N_ACCEPTED (threshold 2)').count()).toBe(1);
    await shot(page, 'task-group');
    await page.getByRole('button', { name: 'Close group' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Yes, close it' }).click();
    await page.locator('.task-head .state-sealed').waitFor();
    expect((await v1(`/task-groups/${group.groupId}`)).state).toBe('SEALED');
    expect(await page.getByRole('button', { name: 'Close group' }).count()).toBe(0);
    // A member's link opens its task page.
    await voteA.getByRole('link', { name: 'vote-a' }).click();
    await page.getByRole('heading', { name: 'Task vote-a' }).waitFor();
    await page.context().close();
  });

  it("voids a budget's reservation after a confirmation, through the API; a read-only key sees no Void", async () => {
    const v1 = (path: string, body?: unknown): Promise<any> => call(body === undefined ? 'GET' : 'POST', `/v1/spaces/${a.spaceId}${path}`, a.key, body);
    const usd = ((await v1('/budgets')).items as Array<{ id: string; name: string }>).find((x) => x.name === 'usd')!;
    const reservation = await v1(`/budgets/${usd.id}/reserve`, { scopeId: a.scopeId, holder: 'agent-9', amountMinor: '1200' });

    const reader = await signIn(a.readKey);
    await reader.goto(`${baseUrl}/console/spaces/${a.spaceId}/budgets/${usd.id}`);
    await reader.locator(`tr[data-row="${reservation.id}"]`).waitFor();
    expect(await reader.locator('button.danger').count()).toBe(0);
    await reader.context().close();

    const page = await signIn(a.key);
    await page.goto(`${baseUrl}/console/spaces/${a.spaceId}/budgets`);
    await page.getByRole('link', { name: 'usd' }).click();
    await page.getByRole('heading', { name: 'Budget usd' }).waitFor();
    const row = page.locator(`tr[data-row="${reservation.id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('12.00 USD');
    await shot(page, 'budget');
    await row.getByRole('button', { name: 'Void reservation' }).click();
    const dialog = row.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Keep it' }).click();
    expect((await v1(`/budgets/${usd.id}/reservations/${reservation.id}`)).state).toBe('ACTIVE');
    await row.getByRole('button', { name: 'Void reservation' }).click();
    expect(await dialog.textContent()).toContain("Void the unspent 12.00 USD of agent-9's reservation?");
    await dialog.getByRole('button', { name: 'Yes, void it' }).click();
    // The list shows ACTIVE reservations: the voided one leaves it, the seeded one stays.
    await row.waitFor({ state: 'detached' });
    expect(await page.locator('tbody tr').count()).toBe(1);
    const voided = await v1(`/budgets/${usd.id}/reservations/${reservation.id}`);
    expect({ state: voided.state, remainingMinor: voided.remainingMinor }).toEqual({ state: 'VOIDED', remainingMinor: '0' });
    await page.getByLabel('State').selectOption('SETTLED,VOIDED');
    await page.locator(`tr[data-row="${reservation.id}"] .state-voided`).waitFor();
    await page.context().close();
  });

  it("cancels an allowance waiter after a confirmation, through the API; a read-only key sees no Cancel", async () => {
    const v1 = (path: string, body?: unknown): Promise<any> => call(body === undefined ? 'GET' : 'POST', `/v1/spaces/${a.spaceId}${path}`, a.key, body);
    const tokens = ((await v1('/allowances')).items as Array<{ id: string; name: string; availableUnits: number }>).find((x) => x.name === 'llm-tokens')!;
    // More units than the window has left: the waiter stays in line.
    const waiter = await v1(`/allowances/${tokens.id}/wait`, { scopeId: a.scopeId, units: tokens.availableUnits + 1, holder: 'agent-9' });
    expect(waiter.state).toBe('WAITING');

    const reader = await signIn(a.readKey);
    await reader.goto(`${baseUrl}/console/spaces/${a.spaceId}/allowances/${tokens.id}`);
    await reader.locator(`tr[data-waiter="${waiter.id}"]`).waitFor();
    expect(await reader.locator('button.danger').count()).toBe(0);
    await reader.context().close();

    const page = await signIn(a.key);
    await page.goto(`${baseUrl}/console/spaces/${a.spaceId}/allowances`);
    await page.getByRole('link', { name: 'llm-tokens' }).click();
    await page.getByRole('heading', { name: 'Allowance llm-tokens' }).waitFor();
    const row = page.locator(`tr[data-waiter="${waiter.id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('agent-9');
    expect(await page.locator('[data-fact="waiting"]').textContent()).toBe('1');
    await shot(page, 'allowance');
    await row.getByRole('button', { name: 'Cancel waiter' }).click();
    await row.getByRole('dialog').getByRole('button', { name: 'Keep it' }).click();
    expect((await v1(`/allowance-waiters/${waiter.id}`)).state).toBe('WAITING');
    await row.getByRole('button', { name: 'Cancel waiter' }).click();
    await row.getByRole('dialog').getByRole('button', { name: 'Yes, cancel the wait' }).click();
    await page.getByText('Nobody waits in line.').waitFor();
    expect((await v1(`/allowance-waiters/${waiter.id}`)).state).toBe('CANCELLED');
    expect(await page.locator('[data-fact="waiting"]').textContent()).toBe('0');
    await page.context().close();
  });

  it('fails the accessibility audit on a page with a violation (the audit is not blind)', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${baseUrl}/console`);
    await page.getByLabel('API key').waitFor();
    // An input with no label: axe's "label" rule, critical.
    await page.evaluate("document.querySelector('form').append(document.createElement('input'))");
    expect(await graveViolations(page, 'sign-in with an unlabelled input')).toEqual([expect.stringMatching(/^label \(critical\): Form elements must have labels; at input:nth-child\(\d+\)$/)]);
    await context.close();
  });

  it('shows a key of another organization nothing of this one', async () => {
    const page = await signIn(b.key);
    expect(await page.getByRole('link', { name: 'acme-main' }).count()).toBe(0);
    await page.getByRole('link', { name: 'globex-main' }).waitFor();
    await page.goto(`${baseUrl}/console/spaces/${a.spaceId}/tasks`);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/space not found/);
    expect(await page.locator('tbody tr').count()).toBe(0);
    await page.goto(`${baseUrl}/console/spaces/${a.spaceId}`);
    await page.getByRole('alert').waitFor();
    expect(await page.getByText('acme').count()).toBe(0);
    await page.context().close();
  });

  it('lets the operator create and revoke a key with the operator token', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${baseUrl}/console`);
    await page.getByRole('link', { name: /Operator\?/ }).click();
    await page.getByLabel('Operator token').fill('wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    await page.getByLabel('Operator token').fill(adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'acme', exact: true }).click();
    await page.getByRole('heading', { name: 'Organization acme' }).waitFor();
    await page.getByLabel("New key's name").fill('temporary');
    await page.getByLabel('coordination_write').uncheck();
    // Before the key exists: the screenshot in the docs shows no secret.
    await shot(page, 'operator');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.locator('output.secret').textContent())!;
    expect(secret).toMatch(/^bk_/);
    const tasks = `${baseUrl}/v1/spaces/${a.spaceId}/tasks`;
    expect((await fetch(tasks, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
    await page.locator('tr[data-key="temporary"]').waitFor();
    expect(await page.locator('tr[data-key="temporary"]').textContent()).not.toContain('coordination_write');
    await page.locator('tr[data-key="temporary"]').getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Yes, revoke it' }).click();
    await expect.poll(async () => (await fetch(tasks, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(401);
    await context.close();
  });

  it('refuses a wrong key at sign-in', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${baseUrl}/console`);
    await page.getByLabel('API key').fill('bk_not_a_real_key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/unknown or revoked/);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await audit(page, 'sign-in');
    await context.close();
  });
});

describe('BATON_CONSOLE', () => {
  it('is on by default, and takes only on or off', () => {
    expect(loadConfig({}).console).toBe(true);
    expect(loadConfig({ BATON_CONSOLE: 'off' }).console).toBe(false);
    expect(() => loadConfig({ BATON_CONSOLE: 'no' })).toThrow(ConfigError);
  });

  it('serves nothing at /console', async () => {
    const off = await createBaton({ store: new MemoryStore(), clock: new SystemClock(), console: false });
    try {
      expect((await off.app.inject({ method: 'GET', url: '/console' })).statusCode).toBe(404);
      expect((await off.app.inject({ method: 'GET', url: '/console/session' })).statusCode).toBe(404);
    } finally {
      await off.drainAndClose();
    }
  });
});
