export * from './plan';
export * from './bake-segments';
export * from './deployed';
