export * from './assembly';
export * from './catalog';
export * from './estimate';
export * from './prices';
export * from './render';
export * from './price-list';
