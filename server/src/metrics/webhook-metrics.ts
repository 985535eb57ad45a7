import { Counter, Histogram, type Registry } from 'prom-client';
import type { DispatchObserver } from '../webhooks/dispatcher';

/**
 * The webhook dispatcher's work on this server: attempts by outcome and how long they took, the
 * lag from an event's commit to its receiver's 2xx, and pauses. Each server counts the attempts
 * it made (leases give each destination to one server at a time), so sum() across servers.
 */
export function webhookMetrics(registry: Registry): DispatchObserver {
  const attempts = new Counter({
    name: 'baton_webhook_attempts_total',
    help: 'Webhook delivery attempts made by this server, by outcome (succeeded: a 2xx reply).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const attemptSeconds = new Histogram({
    name: 'baton_webhook_attempt_duration_seconds',
    help: 'One webhook attempt, connect to end of reply (or the timeout).',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  // Up to hours: a receiver that was down is caught up through the retry schedule.
  const lagSeconds = new Histogram({
    name: 'baton_webhook_delivery_lag_seconds',
    help: "From an event's commit to its receiver's 2xx, for events delivered by this server.",
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600],
    registers: [registry],
  });
  const pauses = new Counter({
    name: 'baton_webhook_destinations_paused_total',
    help: 'Destinations this server paused (failing too long, or a secret the server key does not open).',
    registers: [registry],
  });
  return {
    attempted(outcome, durationMs, lagMs) {
      attempts.inc({ outcome });
      attemptSeconds.observe(durationMs / 1000);
      if (lagMs !== null) lagSeconds.observe(Math.max(0, lagMs) / 1000);
    },
    paused() {
      pauses.inc();
    },
  };
}
