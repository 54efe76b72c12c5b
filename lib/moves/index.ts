export * from './types';
export * from './subject';
export * from './routing';
export * from './limits';
export * from './store';
export * from './handoff';
export * from './routing-control';
export * from './mover';
