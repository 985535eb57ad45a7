/** @baton-coordination/runtime: the typed client of a Baton space, and the worker and helpers built on it. */
export * from './contract';
export * from './api-types';
export * from './transport';
export * from './errors';
export * from './clock';
export * from './retry';
export * from './client';
export * from './worker';
export * from './logger';
export * from './helpers';
export * from './groups';
export * from './claims';
export * from './timers';
export * from './runs';
export * from './watch';
export * from './webhooks';
