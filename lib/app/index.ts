export * from './fleet-app';
