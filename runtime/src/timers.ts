import type { CallOptions, TimerApi, TimerView, TimerWaitApi } from './contract';

/**
 * Timers (docs/design/0021-timers.md; docs/api.md "Timers"): ask the service to send a message to a mailbox
 * later. Once its time comes, the server's sweep (about once a second) sends `payload` to the
 * mailbox, exactly once, as an ordinary message with workKey `timer:<timerId>`; a worker receives
 * it as any other message, by recv/recvBatch on that mailbox; the delivery's `workKey` names the
 * timer (`firedTimerIdOf`).
 */

/** The server arms at most this far ahead: 30 days. */
export const maxTimerDelayMs = 30 * 24 * 3_600_000;
/** The workKey of a fired timer's message is this prefix and the timer's id. */
export const timerWorkKeyPrefix = 'timer:';

interface TimerRequestBase<P> {
  /** Names the timer in the space, forever: a repeat with the same request answers the same timer. */
  timerKey: string;
  scopeId: string;
  /** Where the fired message goes. */
  mailboxId: string;
  /** What the fired message carries: any JSON value. */
  payload: P;
}

/**
 * Exactly one of `delayMs` and `at`. `delayMs` is rounded up to whole seconds (the server's
 * resolution) and sent as delaySeconds, so the service clock measures it: a timer never fires
 * early because the worker's clock is off, and a rerun with the same key and delay is the same
 * request (200, the timer armed the first time). `at` is sent as fireAt, an instant.
 */
export type ArmTimerRequest<P = unknown> = TimerRequestBase<P> & ({ delayMs: number; at?: never } | { at: Date; delayMs?: never });

/** POST /timers from a delay in milliseconds or a Date; see ArmTimerRequest for how each is sent. */
export function armTimer(client: TimerApi, request: ArmTimerRequest, options?: CallOptions): Promise<TimerView> {
  const { timerKey, scopeId, mailboxId, payload } = request;
  return client.armTimer({ timerKey, scopeId, mailboxId, payload, ...whenOf(request) }, options);
}

function whenOf(request: ArmTimerRequest): { delaySeconds: number } | { fireAt: string } {
  const { delayMs, at } = request as { delayMs?: number; at?: Date };
  if ((delayMs === undefined) === (at === undefined)) throw new TypeError('armTimer takes exactly one of delayMs and at');
  if (at !== undefined) {
    if (!(at instanceof Date) || Number.isNaN(at.getTime())) throw new TypeError('armTimer: at must be a valid Date');
    return { fireAt: at.toISOString() };
  }
  if (!Number.isFinite(delayMs) || delayMs! < 0 || delayMs! > maxTimerDelayMs) throw new RangeError(`armTimer: delayMs must be from 0 to ${maxTimerDelayMs}, got ${delayMs}`);
  return { delaySeconds: Math.ceil(delayMs! / 1000) };
}

/** The timer id a fired message's workKey names (`timer:<id>`), or null for any other message. */
export function firedTimerIdOf(message: { workKey: string | null }): string | null {
  const { workKey } = message;
  if (workKey === null || !workKey.startsWith(timerWorkKeyPrefix)) return null;
  const timerId = workKey.slice(timerWorkKeyPrefix.length);
  return timerId.length > 0 ? timerId : null;
}

/** Longest one recv of sleepUntil parks on the server before it asks again. */
const sleepPollWaitMs = 20_000;

/**
 * Sleeps until a timer fires, durably: arms it (ArmTimerRequest), then long-polls recv on its
 * mailbox in its scopeId, completes the message the timer sent and answers its payload. `scopeId`
 * must belong to this sleep alone (a fresh UUID, kept with the caller's state): recv takes only
 * messages of that scope, so the sleep never takes another message from a shared mailbox, and a
 * process that died mid-sleep and calls again with the same timerKey and scopeId finds the same
 * timer (200 on arm) and its message, fired or not. `holder` names the sleeper in the message's
 * claim. Aborting `signal` ends the wait (the timer stays armed: cancel it with cancelTimer).
 */
export async function sleepUntil<P = unknown>(client: TimerApi & TimerWaitApi, request: ArmTimerRequest<P> & { holder: string }, options: CallOptions = {}): Promise<P> {
  const timer = await armTimer(client, request, options);
  // The arm's Idempotency-Key (if the caller gave one) is the arm's alone.
  const each: CallOptions = { signal: options.signal, timeoutMs: options.timeoutMs };
  for (;;) {
    options.signal?.throwIfAborted();
    const delivery = await client.recv(request.mailboxId, { scopeId: request.scopeId, holder: request.holder, holderSession: timer.id, waitMs: sleepPollWaitMs }, each);
    if (delivery === null) continue;
    await client.complete(delivery.messageId, { token: delivery.token }, each);
    return delivery.payload as P; // the timer's own payload, as armed above
  }
}
