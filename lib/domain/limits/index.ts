export * from './quotas';
export * from './render';
export * from './templates';
