import * as fs from 'fs';
import * as path from 'path';

/**
 * The feature flags of `cdk.json`, so apps built outside the CDK CLI (tests, benchmarks, audit)
 * synthesize exactly what `npx cdk synth` does.
 */
export function cdkJsonContext(cdkJsonPath = path.join(__dirname, '..', '..', 'cdk.json')): Record<string, unknown> {
  const parsed = JSON.parse(fs.readFileSync(cdkJsonPath, 'utf8')) as { context?: Record<string, unknown> };
  return parsed.context ?? {};
}
