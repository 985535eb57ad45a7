import { describe, expect, expectTypeOf, it } from 'vitest';
import type { AdmitBody, CompleteBody, MailboxCreateBody, MailboxView, MessageView, SendBody, TaskSubmitBody, TaskSubmitReply, TaskView, UsageView } from './api-types';
import { createClient, type BatonClient } from './client';
import type { ErrorEnvelope } from './contract';
import { BatonApiError, errorFromReply, hasCode, type ApiErrorCode } from './errors';
import { runGroup, type EndedMember, type GroupRun } from './groups';
import { submitAndAwait, submitMany } from './helpers';
import { sleepUntil } from './timers';
import { createWorker, type DeliveryHandler, type HandlerContext, type WorkerDelivery } from './worker';

/**
 * Typed work: a task's input and outcome and a message's payload travel as the caller's types
 * through submit, the worker's handler, the awaited outcome and the group helpers; request and
 * reply bodies are exported by name; an error's code is a union. The expectTypeOf lines are
 * checked by the compiler (`npm run lint` type-checks this file); a failing one does not compile.
 */

interface Resize {
  url: string;
  width: number;
}
interface Resized {
  url: string;
  bytes: number;
}

const client: BatonClient = createClient({
  baseUrl: 'http://127.0.0.1:9',
  apiKey: 'bk_test',
  spaceId: '00000000-0000-4000-8000-000000000001',
  transport: async () => ({ status: 500, headers: {}, body: '' }),
});
const ids = { scopeId: '00000000-0000-4000-8000-0000000000aa', mailboxId: '00000000-0000-4000-8000-0000000000bb' };

describe('typed tasks', () => {
  it('submit takes the input type and refuses another', () => {
    expectTypeOf(client.submitTask<Resize>).parameter(0).toEqualTypeOf<TaskSubmitBody<Resize>>();
    expectTypeOf<TaskSubmitBody<Resize>['input']>().toEqualTypeOf<Resize | undefined>();
    const submit = () => {
      void client.submitTask<Resize>({ ...ids, taskKey: 'k', input: { url: 'a', width: 1 } });
      // @ts-expect-error width must be a number
      void client.submitTask<Resize>({ ...ids, taskKey: 'k', input: { url: 'a', width: '1' } });
    };
    expect(submit).toBeTypeOf('function');
  });

  it('getTask answers the outcome type, null until there is one', () => {
    expectTypeOf(client.getTask<Resize, Resized>).returns.resolves.toEqualTypeOf<TaskView<Resize, Resized>>();
    expectTypeOf<TaskView<Resize, Resized>['outcome']>().toEqualTypeOf<Resized | null>();
    expectTypeOf<TaskView<Resize, Resized>['input']>().toEqualTypeOf<Resize | null>();
    expectTypeOf<TaskView<Resize, Resized>['state']>().toEqualTypeOf<'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'EXPIRED'>();
    // Without type arguments nothing is claimed about them.
    expectTypeOf(client.getTask).returns.resolves.toHaveProperty('outcome').toEqualTypeOf<unknown>();
  });

  it("the worker's handler sees the input type and must return the outcome type", () => {
    const make = () => {
      createWorker<Resize, Resized>({
        client, ...ids, holder: 'w', concurrency: 1, leaseSeconds: 30,
        handler: async ({ delivery }) => {
          expectTypeOf(delivery).toEqualTypeOf<WorkerDelivery<Resize>>();
          expectTypeOf(delivery.input).toEqualTypeOf<Resize>();
          expectTypeOf(delivery.payload).toEqualTypeOf<{ taskId: string; input: Resize }>();
          return { url: delivery.input.url, bytes: delivery.input.width * 100 };
        },
      });
      createWorker<Resize, Resized>({
        client, ...ids, holder: 'w', concurrency: 1, leaseSeconds: 30,
        // @ts-expect-error the outcome must be a Resized
        handler: async ({ delivery }) => ({ url: delivery.input.url }),
      });
      // Inferred from an annotated handler, as one shared between producer and worker would be.
      const handler: DeliveryHandler<Resize, Resized> = ({ delivery }) => ({ url: delivery.input.url, bytes: 1 });
      createWorker({ client, ...ids, holder: 'w', concurrency: 1, leaseSeconds: 30, handler, onEvent: (event) => {
        if (event.type === 'admitted') expectTypeOf(event.delivery.input).toEqualTypeOf<Resize>();
      } });
    };
    expectTypeOf<HandlerContext<Resize>['delivery']['input']>().toEqualTypeOf<Resize>();
    expect(make).toBeTypeOf('function');
  });

  it('submitAndAwait and submitMany carry the types end to end', () => {
    expectTypeOf(submitAndAwait<Resize, Resized>).returns.resolves.toEqualTypeOf<TaskView<Resize, Resized>>();
    expectTypeOf(submitAndAwait<Resize, Resized>).parameter(1).toEqualTypeOf<TaskSubmitBody<Resize>>();
    const calls = () => {
      // @ts-expect-error an input that is not a Resize
      void submitMany<Resize>(client, [{ ...ids, taskKey: 'k', input: { url: 1 } }]);
      void submitMany<Resize>(client, [{ ...ids, taskKey: 'k', input: { url: 'a', width: 2 } }]);
    };
    expect(calls).toBeTypeOf('function');
  });

  it("runGroup hands its verifier and its answer the members' outcome type", () => {
    const run = () =>
      runGroup<Resize, Resized>(client, {
        mailboxId: ids.mailboxId, condition: 'FIRST_ACCEPTED',
        members: [{ key: 'a', input: { url: 'a', width: 1 } }],
        verify: (member) => {
          expectTypeOf(member).toEqualTypeOf<EndedMember<Resized>>();
          return (member.outcome?.bytes ?? 0) > 0 ? 'ACCEPT' : 'REJECT';
        },
      });
    expectTypeOf(run).returns.resolves.toEqualTypeOf<GroupRun<Resized>>();
    expectTypeOf<GroupRun<Resized>['accepted'][number]['outcome']>().toEqualTypeOf<Resized | null>();
    expect(run).toBeTypeOf('function');
  });
});

describe('typed messages', () => {
  it('send, recv and sleepUntil carry the payload type', () => {
    expectTypeOf(client.send<Resize>).parameter(1).toEqualTypeOf<SendBody<Resize>>();
    expectTypeOf(client.send<Resize>).returns.resolves.toEqualTypeOf<MessageView<Resize>>();
    expectTypeOf(client.recv<Resize>).returns.resolves.exclude<null>().toHaveProperty('payload').toEqualTypeOf<Resize>();
    expectTypeOf(client.recvBatch<Resize>).returns.resolves.items.toHaveProperty('payload').toEqualTypeOf<Resize>();
    expectTypeOf(sleepUntil<{ retry: number }>).returns.resolves.toEqualTypeOf<{ retry: number }>();
  });
});

describe('request and reply bodies by name', () => {
  it('are exported as the client takes and answers them', () => {
    expectTypeOf(client.createMailbox).parameter(0).toEqualTypeOf<MailboxCreateBody>();
    expectTypeOf(client.createMailbox).returns.resolves.toEqualTypeOf<MailboxView>();
    expectTypeOf(client.submitTask).returns.resolves.toEqualTypeOf<TaskSubmitReply>();
    expectTypeOf(client.admit).parameter(0).toEqualTypeOf<AdmitBody>();
    expectTypeOf(client.complete).parameter(1).toEqualTypeOf<CompleteBody>();
    expectTypeOf(client.getUsage).returns.resolves.toEqualTypeOf<UsageView>();
    expectTypeOf<MailboxCreateBody>().toHaveProperty('name').toEqualTypeOf<string>();
  });
});

describe('error codes', () => {
  it('BatonApiError.code is the union of docs/design/0004-error-codes.md and the client codes, checked for exhaustiveness', () => {
    expectTypeOf<BatonApiError['code']>().toEqualTypeOf<ApiErrorCode>();
    expectTypeOf<'LEASE_LOST'>().toExtend<ApiErrorCode>();
    expectTypeOf<'LEASE_LOST_'>().not.toExtend<ApiErrorCode>();
    expectTypeOf<ErrorEnvelope['error']['code']>().toEqualTypeOf<Exclude<ApiErrorCode, 'NETWORK' | 'BAD_REPLY' | 'UNKNOWN_CODE'>>();
    // @ts-expect-error a misspelt code does not compile
    hasCode(new Error(), 'LEASE_LOSS');
    const describeCode = (code: ApiErrorCode): string => {
      switch (code) {
        case 'NETWORK':
        case 'BAD_REPLY':
        case 'UNKNOWN_CODE':
          return 'client';
        case 'UNAUTHENTICATED': case 'FORBIDDEN': case 'ENTITLEMENT_EXCEEDED': case 'NOT_FOUND': case 'VALIDATION_FAILED':
        case 'IDEMPOTENCY_KEY_REQUIRED': case 'PAYLOAD_TOO_LARGE': case 'IDEMPOTENCY_KEY_REUSED': case 'CONFLICT':
        case 'INSUFFICIENT_BUDGET': case 'TASK_KEY_CONFLICT': case 'LEASE_LOST': case 'CLAIM_HELD': case 'IDEMPOTENCY_KEY_IN_FLIGHT':
        case 'QUOTA_EXHAUSTED': case 'RATE_LIMITED': case 'SERVICE_RATE_LIMITED': case 'CONCURRENCY_LIMITED':
        case 'OPERATIONS_EXHAUSTED': case 'BACKLOG_FULL': case 'PLAN_LIMIT_REACHED': case 'UNAVAILABLE': case 'INTERNAL':
          return 'server';
        default:
          // Every code is handled above: a new one in core fails the compile here.
          return code satisfies never;
      }
    };
    expect(describeCode('LEASE_LOST')).toBe('server');
  });

  it('keeps a code this runtime does not know as UNKNOWN_CODE, with the code as sent in serverCode', () => {
    const reply = (code: string) => ({ status: 409, headers: {}, body: JSON.stringify({ error: { code, message: 'm', requestId: 'r' } }) });
    const unknown = errorFromReply(reply('SOMETHING_NEW'), 0);
    expect({ code: unknown.code, serverCode: unknown.serverCode }).toEqual({ code: 'UNKNOWN_CODE', serverCode: 'SOMETHING_NEW' });
    const known = errorFromReply(reply('LEASE_LOST'), 0);
    expect({ code: known.code, serverCode: known.serverCode }).toEqual({ code: 'LEASE_LOST', serverCode: 'LEASE_LOST' });
  });
});
