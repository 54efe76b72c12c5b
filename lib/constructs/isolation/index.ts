export * from './facts';
export * from './router-config';
export * from './rules';
export * from './pack';
