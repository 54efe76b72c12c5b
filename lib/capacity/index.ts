export * from './types';
export * from './judge';
export * from './plan';
export * from './place';
export * from './html';
