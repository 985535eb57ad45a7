import type { WorkerLogger } from '../logger';
import { isApiError, type WorkerStoppedError } from './errors';
import type { WorkerEvent, WorkerStats } from './types';

/**
 * What the worker tells its user: each event to onEvent, the ones a person needs to see to the
 * logger, and the counters, which are tallies of those same events (so a count and its event
 * can never disagree).
 */

export interface WorkerReporterOptions<I> {
  onEvent: ((event: WorkerEvent<I>) => void) | undefined;
  logger: WorkerLogger;
  holder: string;
  mailboxId: string;
  scopeId: string;
  /** Handlers running now: the slots count them, not the events. */
  inFlight: () => number;
}

export class WorkerReporter<I> {
  private readonly counts = { admitted: 0, completed: 0, failed: 0, leaseLost: 0 };

  constructor(private readonly options: WorkerReporterOptions<I>) {}

  get stats(): WorkerStats {
    return { ...this.counts, inFlight: this.options.inFlight() };
  }

  readonly emit = (event: WorkerEvent<I>): void => {
    this.tally(event);
    this.tell(event);
    this.quietly(() => this.log(event));
  };

  started(fields: { holderSession: string; concurrency: number; leaseSeconds: number }): void {
    const { holder, mailboxId, scopeId } = this.options;
    this.options.logger.info({ holder, holderSession: fields.holderSession, mailboxId, scopeId, concurrency: fields.concurrency, leaseSeconds: fields.leaseSeconds }, 'worker started');
  }

  draining(deadlineMs: number): void {
    this.options.logger.info({ holder: this.options.holder, inFlight: this.options.inFlight(), deadlineMs }, 'draining: admitting no more, in-flight handlers finish until the deadline');
  }

  /** Admit answered what no retry fixes: an admit error event, and an error-level line saying what to check. */
  stoppedByItself(stopped: WorkerStoppedError): void {
    const { holder, mailboxId, scopeId, logger } = this.options;
    this.tell({ type: 'error', stage: 'admit', error: stopped.cause });
    this.quietly(() => logger.error({ holder, mailboxId, scopeId, ...failureFields(stopped.cause) }, stopped.message));
  }

  private tally(event: WorkerEvent<I>): void {
    if (event.type === 'admitted') this.counts.admitted += 1;
    else if (event.type === 'completed') this.counts.completed += 1;
    else if (event.type === 'failed') this.counts.failed += 1;
    else if (event.type === 'lease_lost') this.counts.leaseLost += 1;
  }

  private tell(event: WorkerEvent<I>): void {
    // A listener's bug must not stop the loop that it observes.
    this.quietly(() => this.options.onEvent?.(event));
  }

  /** The log line of an event a user needs to see; admissions, renewals and completions are not logged (onEvent has them). */
  private log(event: WorkerEvent<I>): void {
    const { holder, logger } = this.options;
    switch (event.type) {
      case 'failed':
        return logger.warn(
          { holder, taskId: event.taskId, messageId: event.messageId, retry: event.retry, ...(event.reason === 'drain' ? { reason: 'drain' } : failureFields(event.error)) },
          event.reason === 'drain' ? 'task handed back by the drain' : event.retry ? 'task failed; it will be retried' : 'task failed permanently',
        );
      case 'lease_lost':
        return logger.warn({ holder, taskId: event.taskId, messageId: event.messageId, cause: event.cause }, 'lease lost: the handler was aborted and its result will not be sent');
      case 'error':
        return logger.warn(
          { holder, ...(event.messageId === undefined ? {} : { messageId: event.messageId }), ...failureFields(event.error), ...(event.retryInMs === undefined ? {} : { retryInMs: Math.round(event.retryInMs) }) },
          event.stage === 'admit' ? 'admit failed; backing off' : `${event.stage} failed`,
        );
      case 'stopped':
        return logger.info({ holder, ...this.stats }, 'worker stopped');
      default:
        return;
    }
  }

  /** Nor a logger's bug. */
  private quietly(say: () => void): void {
    try {
      say();
    } catch {
      // the listener's or the logger's own failure
    }
  }
}

/** What a log line names a failure by: the API's code, else the error's name (a handler's TypeError, say). */
function failureFields(error: unknown): { code?: string; status?: number; error?: string } {
  if (isApiError(error)) return { code: error.code, status: error.status, error: error.message };
  if (error instanceof Error) return { code: error.name, error: error.message };
  return error === undefined ? {} : { error: String(error) };
}
