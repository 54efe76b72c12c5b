export * from './quotas';
export * from './render';
export * from './templates';
export * from './read';
