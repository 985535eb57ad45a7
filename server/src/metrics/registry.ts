import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * A registry of its own for each server (createBaton), never prom-client's global one: the tests
 * build many servers in one process, and a second registration of a name in one registry throws.
 * Node's default metrics (CPU, memory, event-loop lag, GC, handles) keep their usual names
 * (`process_*`, `nodejs_*`) so that common dashboards and alerts work on them unchanged.
 */
export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
