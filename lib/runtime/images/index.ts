export * from './context';
