export * from './io';
export * from './context';
export * from './program';
export * from './mapping-commands';
export * from './accounts-commands';
export * from './plan-command';
export * from './router-commands';
