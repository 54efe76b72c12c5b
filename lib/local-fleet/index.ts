export * from './postgres';
export * from './fleet';
export * from './blast-radius';
