import type { ErrorCode } from '@baton/core';

/**
 * What the OpenAPI document says of each operation that a route's zod schema cannot: its
 * operationId, summary, whether Idempotency-Key is required, the error codes of its own, what its
 * success replies mean and a request a person would send. document.ts applies it; the statuses
 * every route of a kind can answer come from there, not from here.
 *
 * A new route needs an entry, keyed `METHOD path` as the document writes the path (below
 * /v1/spaces/{spaceId} for space routes, whole for /admin/v1): the contract test fails for an
 * operation without one. operationIds are camelCase verbs on the domain's nouns, stable once
 * published (generated clients name their methods after them).
 */
export interface OperationContract {
  operationId: string;
  /** One line, imperative, as a reference's sidebar shows it. */
  summary: string;
  /**
   * The handler refuses a call without Idempotency-Key (Idem in docs/api.md; the `required` argument
   * of runOperation, attemptOperation and pollClaim). Other writes take the header optionally.
   */
  idempotencyKeyRequired?: true;
  /** Error codes the operation raises beyond those of every route of its kind (responses.ts). */
  codes?: ErrorCode[];
  /** What its success replies mean, where the default (document.ts) does not say enough; a 204 only from here. */
  replies?: Partial<Record<200 | 201 | 204, string>>;
  /** A request body a person would send. */
  example?: unknown;
  /** Reply bodies as the server sends them, for the operations a newcomer calls first. */
  replyExamples?: Partial<Record<200 | 201, unknown>>;
}

// Ids the examples share, so one example's reply reads as the next one's input.
const scopeId = '7d3c2b1a-4e5f-4a6b-8c9d-0e1f2a3b4c5d';
const mailboxId = '3b1f6c9e-2d4a-4f8b-8c7e-5a6d9e0f1b2c';
const messageId = '9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d';
const taskId = '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
const reservationId = '6e5d4c3b-2a19-4f8e-8d7c-6b5a49382716';
const orgId = '0f1e2d3c-4b5a-4697-8877-665544332211';
const spaceId = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';
const worker = { holder: 'summarizer', holderSession: 'summarizer-host1-31337' };
const token = 'ls_4f9c2e7a1b8d3f6e0c5a9b2d7e1f4a8c';

const claimed = { pools: [{ name: 'gpu', units: 1 }], quotas: [{ name: 'openai-tokens', units: 1 }], budgets: [], workLimit: null };
const delivery = { messageId, mailboxId, token, leaseExpiresAt: '2026-11-27T17:02:00.000Z', attempt: 1, scopeId, workKey: null };

const created = 'Created.';
const existing = (what: string): string => `An existing ${what} with the same settings (create-or-join): answered as it is, nothing new is made.`;

export const operations: Record<string, OperationContract> = {
  // Tasks
  'GET /tasks': { operationId: 'listTasks', summary: 'List tasks' },
  'POST /tasks': {
    operationId: 'createTask',
    summary: 'Submit a task (create or join by taskKey)',
    idempotencyKeyRequired: true,
    codes: ['TASK_KEY_CONFLICT', 'PLAN_LIMIT_REACHED', 'BACKLOG_FULL'],
    replies: { 201: 'Created: the task is PENDING and its delivery is READY in the mailbox.', 200: 'Joined: a task with this taskKey and the same fingerprint exists; subscriberId (when given) now follows it.' },
    example: {
      scopeId,
      mailboxId,
      taskKey: 'summarize-report-2026-11',
      input: { documentUrl: 'https://example.com/reports/2026-11.pdf', maxWords: 300 },
      subscriberId: 'dashboard',
      requirements: { pools: [{ name: 'gpu', units: 1 }], quotas: [{ name: 'openai-tokens', units: 1 }] },
    },
    replyExamples: { 201: { taskId, state: 'PENDING', created: true }, 200: { taskId, state: 'RUNNING', created: false } },
  },
  'GET /tasks/{id}': { operationId: 'getTask', summary: 'Get a task and its outcome (long poll until it ends)' },
  'POST /tasks/{id}/cancel': { operationId: 'cancelTask', summary: 'Cancel a task', example: { reason: 'the report was withdrawn' } },
  'POST /tasks/{id}/join': { operationId: 'joinTask', summary: 'Subscribe to a task', example: { subscriberId: 'billing-dashboard', scopeId } },
  'POST /tasks/{id}/detach': { operationId: 'detachTask', summary: 'Unsubscribe from a task', example: { subscriberId: 'billing-dashboard' } },
  'GET /ops/tasks/{taskId}': { operationId: 'getTaskDebugView', summary: 'Debug a task: delivery, claims and events' },
  'POST /tasks/admit': {
    operationId: 'admitDelivery',
    summary: 'Admit the next task delivery with its resources',
    idempotencyKeyRequired: true,
    codes: ['CONCURRENCY_LIMITED'],
    replies: {
      200: 'Admitted: the delivery is CLAIMED under a lease (its token) and the resources its task requires are held.',
      204: 'Nothing was admissible before waitMs ran out. No body; nothing is stored under the Idempotency-Key, so retry with the same or a new one.',
    },
    example: { scopeId, mailboxId, ...worker, leaseSeconds: 120, waitMs: 20000 },
    replyExamples: { 200: { ...delivery, payload: { documentUrl: 'https://example.com/reports/2026-11.pdf', maxWords: 300 }, claimed, taskId } },
  },
  'POST /tasks/admit-batch': {
    operationId: 'admitDeliveries',
    summary: 'Admit up to maxTasks task deliveries',
    idempotencyKeyRequired: true,
    codes: ['CONCURRENCY_LIMITED'],
    replies: { 200: 'Admitted 1 to maxTasks deliveries, oldest first, each with its own token.', 204: 'Nothing was admissible before waitMs ran out. No body; nothing is stored under the Idempotency-Key.' },
    example: { scopeId, mailboxId, ...worker, maxTasks: 8, waitMs: 20000 },
  },
  'POST /tasks/submit-batch': {
    operationId: 'submitTasks',
    summary: 'Submit up to 100 tasks',
    idempotencyKeyRequired: true,
    codes: ['PLAN_LIMIT_REACHED'],
    replies: { 200: 'The batch was valid: each item has the status and body POST /tasks would have answered (201, 200 or its error).' },
    example: {
      tasks: [
        { scopeId, mailboxId, taskKey: 'summarize-chapter-1', input: { chapter: 1 } },
        { scopeId, mailboxId, taskKey: 'summarize-chapter-2', input: { chapter: 2 } },
      ],
    },
  },

  // Task groups
  'GET /task-groups': { operationId: 'listTaskGroups', summary: 'List task groups' },
  'POST /task-groups': {
    operationId: 'createTaskGroup',
    summary: 'Create a task group',
    idempotencyKeyRequired: true,
    example: { mailboxId, condition: 'N_ACCEPTED', threshold: 2, parentScopeId: scopeId, deadline: '2026-11-27T18:00:00Z' },
  },
  'GET /task-groups/{id}': { operationId: 'getTaskGroup', summary: 'Get a task group (long poll until it decides)' },
  'POST /task-groups/{id}/tasks': {
    operationId: 'addGroupTask',
    summary: 'Create a member task in a group',
    idempotencyKeyRequired: true,
    codes: ['TASK_KEY_CONFLICT', 'PLAN_LIMIT_REACHED'],
    replies: { 201: 'Created: the member task is PENDING in the group\'s gate scope.', 200: 'Joined: the member task with this taskKey and the same input exists.' },
    example: { taskKey: 'draft-headline-a', input: { style: 'short' } },
  },
  'POST /task-groups/{id}/join-task': { operationId: 'joinGroupTask', summary: 'Add an existing task to a group', example: { taskId } },
  'POST /task-groups/{id}/close': { operationId: 'closeTaskGroup', summary: 'Close a group\'s membership' },
  'POST /task-groups/{id}/seal': { operationId: 'sealTaskGroup', summary: 'Seal a group (former name of close)' },
  'POST /task-groups/{id}/tasks/{taskId}/accept': { operationId: 'acceptGroupTask', summary: 'Accept a member task\'s result' },
  'POST /task-groups/{id}/tasks/{taskId}/reject': { operationId: 'rejectGroupTask', summary: 'Reject a member task\'s result' },

  // Mailboxes and messages
  'GET /mailboxes': { operationId: 'listMailboxes', summary: 'List mailboxes' },
  'POST /mailboxes': {
    operationId: 'createMailbox',
    summary: 'Create a mailbox',
    idempotencyKeyRequired: true,
    replies: { 201: created, 200: existing('mailbox of that name') },
    example: { name: 'summaries', mode: 'WORK', backlogLimit: 5000 },
  },
  'GET /mailboxes/{id}/messages': { operationId: 'listMessages', summary: 'List a mailbox\'s messages' },
  'POST /mailboxes/{id}/messages': {
    operationId: 'sendMessage',
    summary: 'Send a message',
    idempotencyKeyRequired: true,
    codes: ['BACKLOG_FULL'],
    replies: { 201: 'Sent: the message is READY.', 200: 'A message with this workKey was already sent to the mailbox: the committed one.' },
    example: { scopeId, payload: { kind: 'reindex', documentId: 'doc-4471' }, workKey: 'reindex-doc-4471' },
  },
  'POST /mailboxes/{id}/recv': {
    operationId: 'receiveMessage',
    summary: 'Receive the next message under a lease',
    codes: ['CONCURRENCY_LIMITED'],
    replies: {
      200: 'Received: the message is CLAIMED by you until leaseExpiresAt; renew, complete or nack it with its token.',
      204: 'No message was READY before waitMs ran out. No body; nothing is stored under the Idempotency-Key.',
    },
    example: { scopeId, ...worker, leaseSeconds: 60, waitMs: 20000 },
    replyExamples: { 200: { ...delivery, payload: { kind: 'reindex', documentId: 'doc-4471' }, claimed: { pools: [], quotas: [], budgets: [], workLimit: null } } },
  },
  'POST /mailboxes/{id}/recv-batch': {
    operationId: 'receiveMessages',
    summary: 'Receive up to maxMessages messages',
    codes: ['CONCURRENCY_LIMITED'],
    replies: { 200: 'Received 1 to maxMessages messages in FIFO order, each with its own token.', 204: 'No message was READY before waitMs ran out. No body; nothing is stored under the Idempotency-Key.' },
    example: { scopeId, ...worker, maxMessages: 10, leaseSeconds: 60, waitMs: 20000 },
  },
  'POST /mailboxes/{id}/messages/send-batch': {
    operationId: 'sendMessages',
    summary: 'Send up to 100 messages',
    idempotencyKeyRequired: true,
    replies: { 200: 'The batch was valid: each item has the status and body the single send would have answered.' },
    example: { messages: [{ scopeId, payload: { documentId: 'doc-4471' } }, { scopeId, payload: { documentId: 'doc-4472' }, workKey: 'reindex-doc-4472' }] },
  },
  'POST /messages/{id}/renew': { operationId: 'renewMessageLease', summary: 'Extend a message\'s lease', codes: ['LEASE_LOST'], example: { token, leaseSeconds: 120 } },
  'POST /messages/{id}/complete': {
    operationId: 'completeMessage',
    summary: 'Complete a message (and its task)',
    codes: ['LEASE_LOST', 'BACKLOG_FULL'],
    example: { token, result: { payload: { summary: 'Revenue grew 4 % on the month; churn fell.', words: 212 } } },
    replyExamples: { 200: { state: 'ACKED', resultMessageId: null } },
  },
  'POST /messages/{id}/nack': { operationId: 'nackMessage', summary: 'Give a message back (retry or fail it)', codes: ['LEASE_LOST'], example: { token, retry: true } },
  'POST /messages/complete-batch': {
    operationId: 'completeMessages',
    summary: 'Complete up to 100 messages',
    replies: { 200: 'The batch was valid: each item has the status and body its single complete would have answered (a LEASE_LOST item does not fail the others).' },
    example: { items: [{ messageId, token, result: { payload: { words: 212 } } }] },
  },
  'POST /messages/nack-batch': {
    operationId: 'nackMessages',
    summary: 'Nack up to 100 messages',
    replies: { 200: 'The batch was valid: each item has the status and body its single nack would have answered.' },
    example: { items: [{ messageId, token, retry: false }] },
  },
  'POST /messages/renew-batch': {
    operationId: 'renewMessageLeases',
    summary: 'Renew up to 100 message leases',
    replies: { 200: 'The batch was valid: each item has the status and body its single renew would have answered.' },
    example: { items: [{ messageId, token, leaseSeconds: 120 }] },
  },

  // Claims, barriers, timers, runs
  'GET /claims': { operationId: 'listClaims', summary: 'List claims' },
  'POST /claims': {
    operationId: 'acquireClaim',
    summary: 'Acquire an exclusive claim on a key',
    idempotencyKeyRequired: true,
    codes: ['CLAIM_HELD', 'CONCURRENCY_LIMITED'],
    replies: { 201: 'Acquired: you hold the key until leaseExpiresAt; keep the token.', 200: 'You (same holder and holderSession) already hold the key: the live claim, same token.' },
    example: { claimKey: 'deploy-lock', scopeId, ...worker, leaseSeconds: 30 },
  },
  'GET /claims/{id}': { operationId: 'getClaim', summary: 'Get a claim' },
  'POST /claims/{id}/renew': { operationId: 'renewClaim', summary: 'Extend a claim\'s lease', codes: ['LEASE_LOST'], example: { token, leaseSeconds: 30 } },
  'POST /claims/{id}/release': { operationId: 'releaseClaim', summary: 'Release a claim', codes: ['LEASE_LOST'], example: { token } },
  'GET /barriers': { operationId: 'listBarriers', summary: 'List barriers' },
  'POST /barriers': { operationId: 'createBarrier', summary: 'Create a barrier', idempotencyKeyRequired: true, example: { scopeId, target: 3 } },
  'GET /barriers/{id}': { operationId: 'getBarrier', summary: 'Get a barrier (long poll until released)' },
  'POST /barriers/{id}/arrive': { operationId: 'arriveAtBarrier', summary: 'Arrive at a barrier', example: { arrivalKey: 'shard-2', epoch: 1 } },
  'POST /barriers/{id}/nextEpoch': { operationId: 'startNextBarrierEpoch', summary: 'Start a barrier\'s next epoch', example: { epoch: 1 } },
  'POST /barriers/{id}/cancel': { operationId: 'cancelBarrier', summary: 'Cancel a barrier\'s epoch' },
  'POST /timers': {
    operationId: 'armTimer',
    summary: 'Arm a timer',
    idempotencyKeyRequired: true,
    codes: ['BACKLOG_FULL'],
    replies: { 201: 'Armed.', 200: existing('timer of that timerKey') },
    example: { timerKey: 'nightly-report', scopeId, delaySeconds: 3600, mailboxId, payload: { kind: 'nightly-report' } },
  },
  'GET /timers': { operationId: 'listTimers', summary: 'List timers' },
  'GET /timers/{id}': { operationId: 'getTimer', summary: 'Get a timer' },
  'POST /timers/{id}/cancel': { operationId: 'cancelTimer', summary: 'Cancel a timer' },
  'POST /runs': {
    operationId: 'createRun',
    summary: 'Start a run',
    idempotencyKeyRequired: true,
    codes: ['PLAN_LIMIT_REACHED'],
    replies: { 201: 'Started: the run is ACTIVE.', 200: existing('run of that scopeId') },
    example: { scopeId, name: 'november-reports', childLimit: 50 },
  },
  'GET /runs/{scopeId}': { operationId: 'getRun', summary: 'Get a run and what lives under it' },
  'POST /runs/{scopeId}/complete': { operationId: 'completeRun', summary: 'Complete a run' },
  'POST /runs/{scopeId}/cancel': { operationId: 'cancelRun', summary: 'Cancel a run and its work' },

  // Budgets, pools, work limits, allowances
  'GET /budgets': { operationId: 'listBudgets', summary: 'List budgets' },
  'POST /budgets': {
    operationId: 'createBudget',
    summary: 'Create a budget',
    idempotencyKeyRequired: true,
    replies: { 201: created, 200: existing('budget of that name') },
    example: { name: 'llm-spend', currency: 'USD', scale: 2, limitMinor: '50000' },
  },
  'GET /budgets/{id}': { operationId: 'getBudget', summary: 'Get a budget and its balances' },
  'GET /budgets/{id}/reservations': { operationId: 'listReservations', summary: 'List a budget\'s reservations' },
  'GET /budgets/{id}/reservations/{reservationId}': { operationId: 'getReservation', summary: 'Get a reservation' },
  'POST /budgets/{id}/reserve': {
    operationId: 'reserveBudget',
    summary: 'Reserve funds',
    idempotencyKeyRequired: true,
    codes: ['INSUFFICIENT_BUDGET'],
    replies: { 201: 'Reserved: the amount is held for you until settled or voided.' },
    example: { scopeId, holder: 'summarizer', amountMinor: '250', settleBy: '2026-11-27T18:00:00Z' },
  },
  'POST /budgets/{id}/settle': { operationId: 'settleReservation', summary: 'Settle spend against a reservation', codes: ['INSUFFICIENT_BUDGET'], example: { reservationId, amountMinor: '187', workKey: 'summarize-report-2026-11' } },
  'POST /budgets/{id}/void': { operationId: 'voidReservation', summary: 'Void a reservation\'s remainder', example: { reservationId, workKey: 'summarize-report-2026-11' } },
  'GET /pools': { operationId: 'listPools', summary: 'List pools' },
  'POST /pools': {
    operationId: 'createPool',
    summary: 'Create a pool',
    idempotencyKeyRequired: true,
    replies: { 201: created, 200: existing('pool of that name') },
    example: { name: 'gpu', capacity: 4 },
  },
  'GET /pools/{id}': { operationId: 'getPool', summary: 'Get a pool' },
  'GET /work-limits': { operationId: 'listWorkLimits', summary: 'List work limits' },
  'POST /work-limits': {
    operationId: 'createWorkLimit',
    summary: 'Create a work limit',
    idempotencyKeyRequired: true,
    replies: { 201: created, 200: existing('work limit of that name') },
    example: { name: 'crawler-slots', maxConcurrent: 8 },
  },
  'GET /work-limits/{id}': { operationId: 'getWorkLimit', summary: 'Get a work limit' },
  'GET /allowances': { operationId: 'listAllowances', summary: 'List allowances' },
  'POST /allowances': {
    operationId: 'createAllowance',
    summary: 'Create an allowance (shared quota)',
    idempotencyKeyRequired: true,
    replies: { 201: created, 200: existing('allowance of that name') },
    example: { name: 'openai-tokens', unitsLimit: 500, windowSeconds: 60 },
  },
  'GET /allowances/{id}': { operationId: 'getAllowance', summary: 'Get an allowance' },
  'POST /allowances/{id}/consume': {
    operationId: 'consumeAllowance',
    summary: 'Consume units now',
    idempotencyKeyRequired: true,
    codes: ['QUOTA_EXHAUSTED'],
    replies: { 201: 'Consumed.', 200: 'This workKey was already consumed: that consumption (replay: true).' },
    example: { scopeId, units: 12, holder: 'summarizer', workKey: 'summarize-report-2026-11' },
  },
  'POST /allowances/{id}/wait': {
    operationId: 'waitForAllowance',
    summary: 'Join the allowance\'s wait line',
    idempotencyKeyRequired: true,
    codes: ['BACKLOG_FULL'],
    replies: { 201: 'In line: GRANTED at once, or WAITING until granted, cancelled or expired.' },
    example: { scopeId, units: 12, holder: 'summarizer', ttlSeconds: 300 },
  },
  'POST /allowances/{id}/cooldown': { operationId: 'startAllowanceCooldown', summary: 'Pause an allowance (provider cooldown)', example: { seconds: 30, reason: 'provider answered 429' } },
  'GET /allowance-waiters/{id}': { operationId: 'getAllowanceWaiter', summary: 'Get a waiter (long poll until granted)' },
  'POST /allowance-waiters/{id}/cancel': { operationId: 'cancelAllowanceWaiter', summary: 'Leave the wait line' },

  // Events and webhooks
  'GET /events': { operationId: 'listEvents', summary: 'Read the event journal' },
  'GET /watch': { operationId: 'watchEvents', summary: 'Watch the journal (long poll)' },
  'POST /destinations': {
    operationId: 'createDestination',
    summary: 'Create a webhook destination',
    idempotencyKeyRequired: true,
    replies: { 201: 'Created: the reply carries the signing secret, shown only here.' },
    example: { url: 'https://hooks.example.com/baton', eventTypes: ['task.*', 'group.decided'] },
  },
  'GET /destinations': { operationId: 'listDestinations', summary: 'List webhook destinations' },
  'GET /destinations/{id}': { operationId: 'getDestination', summary: 'Get a webhook destination' },
  'DELETE /destinations/{id}': { operationId: 'deleteDestination', summary: 'Delete a webhook destination' },
  'POST /destinations/{id}/resume': { operationId: 'resumeDestination', summary: 'Resume a paused destination' },
  'GET /deliveries': { operationId: 'listWebhookDeliveries', summary: 'List webhook delivery attempts' },

  // The space: limits, usage, diagnostics
  'GET /limits': { operationId: 'getSpaceLimits', summary: 'Get the space\'s limits' },
  'PUT /limits': { operationId: 'setSpaceLimits', summary: 'Set the space\'s limits', codes: ['ENTITLEMENT_EXCEEDED'], example: { requestsPerMinute: 1200, maxBacklog: 20000 } },
  'GET /usage': { operationId: 'getUsage', summary: 'Get the organization\'s usage this month' },
  'GET /diagnostics/census': { operationId: 'getCensus', summary: 'Count what the space holds, by state' },
  'GET /diagnostics/backlog': { operationId: 'getBacklog', summary: 'List mailboxes by backlog' },
  'GET /diagnostics/waits': { operationId: 'getWaits', summary: 'Show what admission is waiting on' },
  'GET /ops/runs/{scopeId}': { operationId: 'getRunDebugView', summary: 'Debug a run: its work by state' },

  // The operator API (docs/design/0003-operator-api.md)
  'GET /admin/v1/orgs': { operationId: 'listOrgs', summary: 'List organizations' },
  'GET /admin/v1/orgs/{orgId}/spaces': { operationId: 'listSpaces', summary: 'List the spaces of an organization' },
  'GET /admin/v1/orgs/{orgId}/keys': { operationId: 'listApiKeys', summary: 'List the API keys of an organization, without secrets' },
  'POST /admin/v1/orgs': { operationId: 'createOrg', summary: 'Create an organization', replies: { 201: created }, example: { name: 'acme-research', plan: 'TEAM' } },
  'PUT /admin/v1/orgs/{orgId}/plan': { operationId: 'changeOrgPlan', summary: 'Change an organization\'s plan', example: { plan: 'ENTERPRISE' } },
  'POST /admin/v1/orgs/{orgId}/spaces': { operationId: 'createSpace', summary: 'Create a space', replies: { 201: created }, example: { name: 'production' } },
  'POST /admin/v1/orgs/{orgId}/keys': {
    operationId: 'createApiKey',
    summary: 'Create an API key',
    replies: { 201: 'Created: the reply carries the secret, shown only here.' },
    example: { name: 'ci-worker', permissions: ['coordination_read', 'coordination_write'], spaceIds: [spaceId] },
  },
  'POST /admin/v1/keys/{keyId}/revoke': { operationId: 'revokeApiKey', summary: 'Revoke an API key' },
  'GET /admin/v1/clock': { operationId: 'getClock', summary: 'Read the server clock' },
  'POST /admin/v1/clock/advance': { operationId: 'advanceClock', summary: 'Advance a manual clock', codes: ['CONFLICT'], example: { ms: 60000 } },
};

/** Examples' ids, for tests that follow an example with a call of their own. */
export const exampleIds = { scopeId, mailboxId, messageId, taskId, reservationId, orgId, spaceId };
