export * from './mapping-bucket';
export * from './router-group';
export * from './router-stack';
export * from './cell-links';
