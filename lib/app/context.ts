import * as fs from 'fs';
import * as path from 'path';
import { ANALYTICS_REPORTING_ENABLED_CONTEXT, PATH_METADATA_ENABLE_CONTEXT } from 'aws-cdk-lib/cx-api';
import { packageRoot } from '../domain/files/package-root';

/**
 * The feature flags of `cdk.json`, so apps built outside the CDK CLI (tests, benchmarks, audit)
 * synthesize exactly what `npx cdk synth` does.
 */
export function cdkJsonContext(cdkJsonPath = path.join(packageRoot(__dirname), 'cdk.json')): Record<string, unknown> {
  const parsed = JSON.parse(fs.readFileSync(cdkJsonPath, 'utf8')) as { context?: Record<string, unknown> };
  return parsed.context ?? {};
}

/**
 * `cdkJsonContext()` plus what the CDK CLI adds when it runs the app: construct paths in each
 * resource's metadata, asset paths, and the CDKMetadata resource of every stack. The audit, the synth
 * benchmark and the scale test use it, so the templates they size and lint are the ones `npx cdk
 * synth` writes (cfn-lint, for one, treats a template with construct paths as CDK's).
 */
export function cliSynthContext(): Record<string, unknown> {
  return {
    ...cdkJsonContext(),
    [PATH_METADATA_ENABLE_CONTEXT]: true,
    'aws:cdk:enable-asset-metadata': true,
    [ANALYTICS_REPORTING_ENABLED_CONTEXT]: true,
  };
}
