export * from './postgres';
export * from './fleet';
export * from './blast-radius';
export * from './flood';
export * from './cell-zero';
