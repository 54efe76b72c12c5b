/**
 * Runs in every jest worker before each test file (jest.config.js `setupFiles`): every CDK `App` a
 * test builds, and every app a test starts as a child process, records no JavaScript stack traces
 * in its construct metadata (CDK's `aws:cdk:disable-creation-stack-traces` and
 * `aws:cdk:disable-stack-trace` context, read from `CDK_CONTEXT_JSON` as the CDK CLI passes its
 * context). Those traces are debugging aids that no template holds; capturing one per resource and
 * per annotation under jest's source-mapped stack traces is about a sixth of a synthesis's CPU.
 * `npx cdk synth` and the pipeline keep them. Context the caller already set is kept.
 */
const NO_TRACES = { 'aws:cdk:disable-creation-stack-traces': true, 'aws:cdk:disable-stack-trace': true };
process.env.CDK_CONTEXT_JSON = JSON.stringify({ ...NO_TRACES, ...JSON.parse(process.env.CDK_CONTEXT_JSON || '{}') });
