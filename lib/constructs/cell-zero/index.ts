export * from './entry';
export * from './alarms';
export * from './adoption-stack';
