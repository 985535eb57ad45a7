export * from './common';
export * from './budgets';
export * from './barriers';
export * from './pools';
export * from './events';
export * from './admin';
export * from './allowances';
export * from './messages';
