export * from './asset';
export * from './context';
