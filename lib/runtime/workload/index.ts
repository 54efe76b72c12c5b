export * from './config';
export * from './credentials';
export * from './database';
export * from './items';
export * from './migrations';
export * from './queue';
export * from './server';
