export * from './bake';
export * from './stage-conditions';
export * from './pipeline-stack';
export * from './acknowledge';
export * from './deployment-window';
export * from './synth';
export * from './protect';
export * from './bootstrap-grants';
