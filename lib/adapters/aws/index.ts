export * from './credentials';
export * from './assumed-role';
