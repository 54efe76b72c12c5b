export * from './plan';
export * from './bake-segments';
