export * from './common';
export * from './budgets';
export * from './events';
export * from './admin';
