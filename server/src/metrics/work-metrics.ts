import { resourceKinds, type ResourceKind } from '@baton/core';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Telemetry } from '../http/telemetry';

/**
 * The Telemetry the routes report to: long polls parked now, and admit tries blocked by a short
 * resource. Both are counted in memory where the HTTP layer already knows them (long-poll.ts,
 * claim-poll.ts): no statement is added to any request.
 */
export function workMetrics(registry: Registry): Telemetry {
  const parked = new Gauge({
    name: 'baton_long_polls_parked',
    help: 'Long polls (recv, admit, their batch twins, barrier, waiter and group waits) parked on this server now, waiting for a wake.',
    registers: [registry],
  });
  const blocked = new Counter({
    name: 'baton_admissions_blocked_total',
    help: 'Admit tries that admitted nothing because a resource of this kind was short (each try of a long poll counts).',
    labelNames: ['resource'] as const,
    registers: [registry],
  });
  // Every kind shows from the start, at 0: rate() and alerts need the series before the first block.
  for (const resource of resourceKinds) blocked.inc({ resource }, 0);
  return {
    pollParked: () => {
      parked.inc();
      let parkedNow = true;
      return () => {
        if (!parkedNow) return;
        parkedNow = false;
        parked.dec();
      };
    },
    admissionBlocked: (kinds: readonly ResourceKind[]) => {
      for (const resource of kinds) blocked.inc({ resource });
    },
  };
}
