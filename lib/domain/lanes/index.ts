export * from './shards';
export * from './assignments';
export * from './lanes-file';
