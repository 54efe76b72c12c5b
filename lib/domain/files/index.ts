export * from './atomic-write';
export * from './pid';
export * from './watchdog';
export * from './package-root';
export * from './progress';
