export * from './types';
export * from './signals';
export * from './judge';
export * from './plan';
export * from './place';
export * from './html';
