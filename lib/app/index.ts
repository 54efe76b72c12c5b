export * from './fleet-app';
export * from './context';
export * from './limit-checks';
export * from './audit-summary';
