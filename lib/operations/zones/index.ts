export * from './local';
export * from './aws';
