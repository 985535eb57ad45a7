/** What other packages (the simulator, tests, benchmarks) use of the server. */
export { createBaton, clockFor, type Baton, type BatonOptions } from './host/baton';
export { openStore, type StoreConfig } from './store/open-store';
export { eventsBehindHorizon, oldestForeignWriterMs } from './store/journal-horizon';
export { Limits } from './limits/limits';
export { LeaseHold } from './limits/lease-hold';
export { RequestRate, type RateLimits, type RateRefusal, type RateTicket } from './limits/request-rate';
export { createScratchDatabase, type ScratchDatabase } from './store/sql/scratch-database';
export { PgNotifier, type PgNotifierOptions } from './notify/pg-notifier';
export type { DispatcherOptions } from './webhooks/dispatcher';
export type { AttemptOptions, AttemptResult } from './webhooks/http-attempt';
