export * from './shards';
export * from './assignments';
export * from './lanes-file';
export * from './retry';
