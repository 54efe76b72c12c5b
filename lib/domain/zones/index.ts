export * from './document';
export * from './writers';
