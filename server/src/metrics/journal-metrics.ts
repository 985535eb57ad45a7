import { eventTypes, type CommitObserver } from '@baton/core';
import { Counter, type Registry } from 'prom-client';

/**
 * Counts what this server's commits journaled, from the events NotifyingStore hands over after
 * each commit: what is already an event (a lease expiry, a task's end) is counted without a
 * statement, and a rolled-back transaction counts nothing. Each server counts its own commits
 * (the lease sweep on several servers claims each lease once), so sum() across servers.
 */
export function journalMetrics(registry: Registry): CommitObserver {
  const events = new Counter({
    name: 'baton_events_total',
    help: 'Journal events committed by this server, by event type.',
    labelNames: ['type'] as const,
    registers: [registry],
  });
  const leaseExpiries = new Counter({
    name: 'baton_message_lease_expiries_total',
    help: 'Message leases that ran out before a complete or nack (the delivery went back to READY, or DEAD), expired by this server.',
    registers: [registry],
  });
  return (committed) => {
    for (const event of committed) {
      // Types come from Baton's own fixed list (eventTypes), so the label's values are bounded.
      events.inc({ type: event.type });
      if (event.type === eventTypes.messageLeaseExpired) leaseExpiries.inc();
    }
  };
}
