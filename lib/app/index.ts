export * from './fleet-app';
export * from './context';
export * from './template-size';
export * from './audit-summary';
