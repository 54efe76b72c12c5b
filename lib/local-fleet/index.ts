export * from './postgres';
export * from './fleet';
