export * from './atomic-write';
