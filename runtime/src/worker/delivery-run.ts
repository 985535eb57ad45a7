import type { TaskPayload } from '../api-types';
import type { RuntimeClock } from '../clock';
import type { Admitted } from '../contract';
import { LeaseKeeper, type LeaseLostCause, type RenewAnswer } from '../lease-keeper';
import type { DeliveryRequests } from './delivery-requests';
import { DeliveryAbortedError, isLeaseLost, isPermanent } from './errors';
import { withdrawn, type ItemResult } from './flusher';
import type { DeliveryHandler, WorkerDelivery, WorkerEvent } from './types';

/**
 * One admitted delivery's life inside the worker: its handler runs under a kept lease, then the
 * delivery is completed with the handler's value or nacked with its error.
 *
 * One rule shapes it: the token is used only while the worker still believes it holds the
 * lease. Once the lease is lost (the server refused the token, or the local deadline passed
 * before a renew succeeded) or a drain handed the delivery back, nothing more is sent for it,
 * whatever its handler does later.
 */

type RunState =
  /** The handler runs and the lease is renewed. */
  | 'running'
  /** The handler returned; complete or nack is on its way. */
  | 'finishing'
  /** Lease lost: nothing more is sent. */
  | 'lost'
  /** A drain took it back: a nack with retry is on its way, and nothing else is sent. */
  | 'abandoned'
  | 'done';

export interface DeliveryRunOptions<I, O> {
  handler: DeliveryHandler<I, O>;
  requests: DeliveryRequests;
  clock: RuntimeClock;
  /** Asked for on every renew. */
  leaseSeconds: number;
  emit: (event: WorkerEvent<I>) => void;
  /** The handler returned or threw: its slot is free, whatever becomes of the delivery. */
  onHandlerReturned: () => void;
}

export class DeliveryRun<I = unknown, O = unknown> {
  readonly delivery: WorkerDelivery<I>;
  /** Resolves when the worker has nothing more to send for this delivery. */
  readonly settled: Promise<void>;
  private state: RunState = 'running';
  private readonly token: string;
  private readonly lease: LeaseKeeper;
  /** The handler's signal: aborted on lease loss or drain only. */
  private readonly handlerAbort = new AbortController();
  private markSettled!: () => void;

  /** `leaseCountFromMs`: the moment to count the admitted lease from (see AdmissionLoopOptions.onAdmitted). */
  constructor(
    admitted: Admitted,
    leaseCountFromMs: number,
    private readonly options: DeliveryRunOptions<I, O>,
  ) {
    this.delivery = toWorkerDelivery<I>(admitted);
    this.token = admitted.token;
    this.settled = new Promise<void>((resolve) => (this.markSettled = resolve));
    const { messageId, taskId } = this.delivery;
    this.lease = new LeaseKeeper(
      {
        clock: options.clock,
        leaseSeconds: options.leaseSeconds,
        renew: (signal) => this.renew(signal),
        onRenewed: (leaseExpiresAt) => options.emit({ type: 'renewed', messageId, taskId, leaseExpiresAt }),
        onRenewFailed: (error, retryInMs) => options.emit({ type: 'error', stage: 'renew', error, messageId, retryInMs }),
        onLost: (cause) => this.loseLease(cause),
      },
      { leaseExpiresAt: admitted.leaseExpiresAt, countFromMs: leaseCountFromMs },
    );
  }

  /** Runs the handler while the lease is kept; the caller has taken a handler slot for it. */
  start(): void {
    void this.lease.keep();
    void this.runHandler();
  }

  /** A drain takes the delivery back: abort the handler and nack with retry, so another worker gets it at once. */
  async abandon(): Promise<void> {
    if (this.state !== 'running') return;
    this.state = 'abandoned';
    this.lease.stop();
    this.handlerAbort.abort(new DeliveryAbortedError(this.delivery.messageId, 'drain'));
    await this.nack(true, 'drain');
    this.finish();
  }

  private async runHandler(): Promise<void> {
    let outcome: { ok: true; value: O } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await this.options.handler({ delivery: this.delivery, signal: this.handlerAbort.signal }) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    this.options.onHandlerReturned();
    if (this.state !== 'running') return; // lost or abandoned: the token is not ours to use any more
    this.state = 'finishing';
    this.lease.stop();
    if (outcome.ok) await this.complete(outcome.value);
    else await this.nack(!isPermanent(outcome.error), 'handler', outcome.error);
    this.finish();
  }

  private finish(): void {
    if (this.state === 'finishing' || this.state === 'abandoned') this.state = 'done';
    this.markSettled();
  }

  /**
   * Asked when a complete or nack leaves (a flusher forms its request later than the handler
   * returned): a finish that waited past the lease is withdrawn and reported lost, never sent.
   */
  private tokenUsable(): boolean {
    return this.lease.beforeDeadline();
  }

  private async complete(value: O): Promise<void> {
    const { messageId, taskId } = this.delivery;
    const item = value === undefined ? { messageId, token: this.token } : { messageId, token: this.token, result: { payload: value } };
    const result = await this.options.requests.complete(item, () => this.tokenUsable());
    this.settleWith(result, 'complete', () => this.options.emit({ type: 'completed', messageId, taskId }));
  }

  private async nack(retry: boolean, reason: 'handler' | 'drain', cause?: unknown): Promise<void> {
    const { messageId, taskId } = this.delivery;
    const result = await this.options.requests.nack({ messageId, token: this.token, retry }, () => this.tokenUsable());
    this.settleWith(result, 'nack', () => this.options.emit({ type: 'failed', messageId, taskId, retry, reason, ...(cause === undefined ? {} : { error: cause }) }));
  }

  private settleWith(result: ItemResult<unknown>, stage: 'complete' | 'nack', onDone: () => void): void {
    if (result === withdrawn) return this.recordLeaseLost('EXPIRED');
    if (result.ok) return onDone();
    if (isLeaseLost(result.error)) return this.recordLeaseLost('LEASE_LOST');
    // The lease will run out and the delivery come back; nothing safer can be done from here.
    this.options.emit({ type: 'error', stage, error: result.error, messageId: this.delivery.messageId });
  }

  private async renew(signal: AbortSignal): Promise<RenewAnswer> {
    const { messageId } = this.delivery;
    const result = await this.options.requests.renew({ messageId, token: this.token, leaseSeconds: this.options.leaseSeconds }, signal);
    return result.ok ? { ok: true, leaseExpiresAt: result.value.leaseExpiresAt } : { ok: false, leaseLost: isLeaseLost(result.error), error: result.error };
  }

  private loseLease(cause: LeaseLostCause): void {
    if (this.state !== 'running') return;
    this.state = 'lost';
    this.handlerAbort.abort(new DeliveryAbortedError(this.delivery.messageId, 'lease_lost'));
    this.recordLeaseLost(cause);
  }

  private recordLeaseLost(cause: LeaseLostCause): void {
    this.state = 'lost';
    this.options.emit({ type: 'lease_lost', messageId: this.delivery.messageId, taskId: this.delivery.taskId, cause });
    this.markSettled();
  }
}

/** Where the caller's word for the input is taken: the server sends `{taskId, input}`, any JSON as input. */
function toWorkerDelivery<I>(admitted: Admitted): WorkerDelivery<I> {
  const payload = admitted.payload as TaskPayload<I>;
  const input = (typeof payload === 'object' && payload !== null && 'input' in payload ? payload.input : undefined) as I;
  return {
    messageId: admitted.messageId,
    taskId: admitted.taskId,
    mailboxId: admitted.mailboxId,
    scopeId: admitted.scopeId,
    attempt: admitted.attempt,
    payload,
    input,
    claimed: admitted.claimed,
  };
}
