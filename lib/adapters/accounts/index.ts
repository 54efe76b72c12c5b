export * from './retry';
export * from './vend';
export * from './bootstrap';
export * from './assume-role';
export * from './operator-policy';
export * from './example-ids';
export * from './membership';
