export * from './retry';
export * from './vend';
export * from './bootstrap';
