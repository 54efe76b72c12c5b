export * from './mapping-bucket';
export * from './router-group';
export * from './router-stack';
