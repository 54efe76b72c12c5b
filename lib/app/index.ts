export * from './fleet-app';
export * from './cell-props';
export * from './isolation-props';
export * from './context';
export * from './limit-checks';
export * from './audit-summary';
export * from './router-props';
export * from './cell-zero-props';
