export * from './atomic-write';
export * from './pid';
