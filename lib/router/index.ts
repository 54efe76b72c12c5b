export * from './haproxy-config';
export * from './runtime-api';
export * from './apply';
export * from './sources';
export * from './agent';
export * from './local';
export * from './freeze';
export * from './task-config';
