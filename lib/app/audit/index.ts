export * from './control-tower';
export * from './findings';
export * from './report';
export * from './run';
export * from './cfn-lint';
