export * from './assign';
