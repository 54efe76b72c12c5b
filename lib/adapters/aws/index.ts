export * from './credentials';
export * from './assumed-role';
export * from './zonal-shift';
export * from './price-list';
