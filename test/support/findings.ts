import { PolicyViolation } from 'aws-cdk-lib';

/** Open findings of a validation plugin under `path` (construct path prefix), as `rule id → paths`. */
export function findingsUnder(violations: readonly PolicyViolation[], path: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const v of violations) {
    const paths = v.violatingResources.map((r) => r.constructPath ?? '').filter((p) => p.startsWith(path));
    if (paths.length > 0) out[v.ruleName] = paths;
  }
  return out;
}
