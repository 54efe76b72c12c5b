export * from './store';
export * from './publish';
