import { randomUUID } from 'node:crypto';
import { SystemClock } from '@baton/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startLiveServer, type LiveServer } from '../support/live-server';
import { createClient, type BatonClient, type ClientOptions, runGroup, type EndedMember, type MemberVerdict, type RunGroupOptions, fetchTransport, type Transport, type TransportResponse, createWorker, PermanentError, type DeliveryHandler, type Worker } from '@baton-coordination/runtime';

/**
 * runGroup against a live server on embedded PGlite, with real workers completing the members:
 * each worker admits on the group's parentScopeId, and so receives the members, which run in the
 * group's gate scope below it. The server runs on the system clock (the group long poll waits in
 * real time) without its background sweep: the deadline test runs the sweep itself, once the
 * deadline has passed.
 */

let server: LiveServer;

const clientWith = (options: Partial<ClientOptions> = {}): BatonClient =>
  createClient({ baseUrl: server.baseUrl, apiKey: server.apiKey, spaceId: server.spaceId, timeoutMs: 5_000, retry: { baseDelayMs: 10, maxDelayMs: 50 }, ...options });

beforeAll(async () => {
  server = await startLiveServer({ clock: new SystemClock(), plan: 'SCALE', name: 'groups-e2e' });
});

afterAll(async () => server?.close());

const workers: Worker[] = [];
afterEach(async () => {
  // A member handler may still hang (its task cancelled by the decision): stop aborts it.
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ deadlineMs: 0 })));
});

/** A mailbox and a parent scope of its own per test, with a worker admitting on that scope. */
async function coordinatorSetup(name: string, handler: DeliveryHandler, concurrency = 1) {
  const client = clientWith();
  const mailboxId = (await client.createMailbox({ name: `${name}-${randomUUID().slice(0, 8)}` })).id;
  const parentScopeId = randomUUID();
  const worker = createWorker({ client, mailboxId, scopeId: parentScopeId, holder: `${name}-worker`, concurrency, leaseSeconds: 30, waitMs: 1_000, handler });
  workers.push(worker);
  worker.start();
  const base = { mailboxId, parentScopeId, groupKey: `${name}-${randomUUID()}` } satisfies Partial<RunGroupOptions>;
  return { client, base, worker };
}

/** A verifier answering in turn from `answers`, recording each member it was shown. */
function scripted(...answers: MemberVerdict[]) {
  const asked: EndedMember[] = [];
  const verify = (member: EndedMember): MemberVerdict => {
    asked.push(member);
    const answer = answers[asked.length - 1];
    if (answer === undefined) throw new Error(`verifier asked about ${member.key} beyond its script`);
    return answer;
  };
  return { asked, verify };
}

/** Resolves when the signal aborts: a member that never finishes on its own. */
const hangUntilAborted = (signal: AbortSignal): Promise<never> =>
  new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));

const inputOf = (input: unknown) => input as { key: string; hang?: boolean; fail?: boolean };

async function waitFor(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const endMs = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > endMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('runGroup against a live server', () => {
  it('FIRST_ACCEPTED: the verifier rejects the first outcome and accepts the second; the decision cancels the third', async () => {
    const { client, base } = await coordinatorSetup('first', ({ delivery, signal }) => {
      const input = inputOf(delivery.input);
      return input.hang ? hangUntilAborted(signal) : { answer: `draft ${input.key}` };
    });
    const { asked, verify } = scripted('REJECT', 'ACCEPT');
    const members = [{ key: 'a', input: { key: 'a' } }, { key: 'b', input: { key: 'b' } }, { key: 'c', input: { key: 'c', hang: true } }];

    const run = await runGroup(client, { ...base, condition: 'FIRST_ACCEPTED', members, verify });

    expect(asked.map((m) => [m.key, m.taskState, m.outcome])).toEqual([
      ['a', 'SUCCEEDED', { answer: 'draft a' }],
      ['b', 'SUCCEEDED', { answer: 'draft b' }],
    ]);
    expect(run.group).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET', parentScopeId: base.parentScopeId, expectedMembers: 3 });
    expect(run.group.members.map((m) => [m.taskId, m.taskState, m.verdict])).toEqual([
      [run.members[0]!.taskId, 'SUCCEEDED', 'REJECTED'],
      [run.members[1]!.taskId, 'SUCCEEDED', 'ACCEPTED'],
      [run.members[2]!.taskId, 'CANCELLED', 'PENDING'],
    ]);
    expect(run.accepted).toEqual([asked[1]]);
    const cancelled = await client.getTask(run.members[2]!.taskId!);
    expect(cancelled).toMatchObject({ state: 'CANCELLED', scopeId: run.group.scopeId, taskKey: `${base.groupKey}:c` });
  });

  it('N_ACCEPTED: accepts two of four; a member create whose reply was lost is replayed, not duplicated', async () => {
    const { base } = await coordinatorSetup('n-accepted', ({ delivery }) => ({ n: Number(inputOf(delivery.input).key) }), 2);
    // The server applies the first member create; its reply is lost on the way back, once.
    const creates: { key: string; response: TransportResponse }[] = [];
    const lossy: Transport = async (request) => {
      const response = await fetchTransport(request);
      if (request.method === 'POST' && new URL(request.url).pathname.endsWith('/tasks') && new URL(request.url).pathname.includes('/task-groups/')) {
        creates.push({ key: request.headers['idempotency-key']!, response });
        if (creates.length === 1) throw new TypeError('socket hang up');
      }
      return response;
    };
    const asked: EndedMember[] = [];
    const members = ['1', '2', '3', '4'].map((key) => ({ key, input: { key } }));

    const run = await runGroup(clientWith({ transport: lossy }), {
      ...base,
      condition: 'N_ACCEPTED',
      threshold: 2,
      members,
      verify: (member) => (asked.push(member), (member.outcome as { n: number }).n % 2 === 0 ? 'ACCEPT' : 'REJECT'),
    });

    expect(run.group).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET', threshold: 2 });
    expect(run.accepted.map((m) => [m.key, m.outcome])).toEqual([
      ['2', { n: 2 }],
      ['4', { n: 4 }],
    ]);
    expect(asked.map((m) => m.key).sort()).toEqual(['1', '2', '3', '4']);
    expect(run.group.members.map((m) => m.verdict)).toEqual(['REJECTED', 'ACCEPTED', 'REJECTED', 'ACCEPTED']);
    expect(creates[1]!.key).toBe(creates[0]!.key);
    expect(creates[1]!.response.headers['idempotent-replayed']).toBe('true');
    const inGateScope = await clientWith().listTasks({ scopeId: run.group.scopeId });
    expect(inGateScope.items.map((t) => t.taskKey).sort()).toEqual(members.map((m) => `${base.groupKey}:${m.key}`));
  });

  it('ALL_TERMINAL: decides when every member ended; the failed one is rejected unasked; a rerun adds nothing', async () => {
    const { client, base } = await coordinatorSetup('all-terminal', ({ delivery }) => {
      const input = inputOf(delivery.input);
      if (input.fail) throw new PermanentError('cannot summarise this one');
      return `summary of ${input.key}`;
    }, 3);
    const { asked, verify } = scripted('ACCEPT', 'ACCEPT');
    const options = { ...base, condition: 'ALL_TERMINAL' as const, members: [{ key: 'x', input: { key: 'x' } }, { key: 'y', input: { key: 'y', fail: true } }, { key: 'z', input: { key: 'z' } }], verify };

    const run = await runGroup(client, options);

    expect(run.group).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'ALL_TERMINAL' });
    expect(run.group.members.map((m) => [m.taskState, m.verdict])).toEqual([
      ['SUCCEEDED', 'ACCEPTED'],
      ['FAILED', 'REJECTED'],
      ['SUCCEEDED', 'ACCEPTED'],
    ]);
    expect(asked.map((m) => m.key).sort()).toEqual(['x', 'z']);
    expect(run.accepted.map((m) => m.outcome)).toEqual(['summary of x', 'summary of z']);

    // The coordinator restarts with the same groupKey: same group and tasks, nobody asked again.
    const again = await runGroup(client, options);
    expect(again.group.id).toBe(run.group.id);
    expect(again.members).toEqual(run.members);
    expect(again.accepted).toEqual(run.accepted);
    expect(asked).toHaveLength(2);
    expect((await client.listTasks({ scopeId: run.group.scopeId })).items).toHaveLength(3);
    expect((await client.listGroups({ state: 'DECIDED' })).items.filter((g) => g.parentScopeId === base.parentScopeId)).toHaveLength(1);
  });

  it('deadline: the sweep decides FAILED DEADLINE_EXCEEDED, the long poll answers it, the live member is cancelled', async () => {
    const { client, base } = await coordinatorSetup('deadline', ({ delivery, signal }) => {
      const input = inputOf(delivery.input);
      return input.hang ? hangUntilAborted(signal) : `done ${input.key}`;
    }, 2);
    const { asked, verify } = scripted('ACCEPT');
    const deadlineMs = Date.now() + 1_500;
    const running = runGroup(client, {
      ...base,
      condition: 'N_ACCEPTED',
      threshold: 2,
      deadline: new Date(deadlineMs).toISOString(),
      members: [{ key: 'quick', input: { key: 'quick' } }, { key: 'stuck', input: { key: 'stuck', hang: true } }],
      verify,
    });
    await waitFor('the quick member to be judged', () => asked.length === 1);
    await waitFor('the deadline to pass', () => Date.now() > deadlineMs + 10);
    await server.baton.background.runDue();

    const run = await running;
    expect(run.group).toMatchObject({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED' });
    expect(run.group.members.map((m) => [m.taskState, m.verdict])).toEqual([
      ['SUCCEEDED', 'ACCEPTED'],
      ['CANCELLED', 'PENDING'],
    ]);
    expect(run.accepted.map((m) => m.outcome)).toEqual(['done quick']);
  });
});
