export * from './types';
export * from './key';
export * from './hash';
export * from './validate';
export * from './lookup';
export * from './buckets';
export * from './changes';
export * from './diff';
