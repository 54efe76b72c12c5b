export * from './fleet-app';
export * from './context';
