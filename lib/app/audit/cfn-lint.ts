import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { Finding } from './findings';

export const CFN_LINT = 'cfn-lint';

/**
 * cfn-lint findings acknowledged by rule and resource type, each with its reason; every other
 * finding is open and fails `npm run audit` and CI. Never a rule turned off for every type.
 */
export interface CfnLintAcknowledgement {
  readonly rule: string;
  readonly resourceType: string;
  /** Only findings whose message matches. */
  readonly message: RegExp;
  readonly reason: string;
}

const STALE_TAGS =
  "cfn-lint 1.51.0's resource schemas date from May 2026 and lack Tags on this type, which CloudFormation gained later; aws-cdk-lib 2.276's generated L1 marks it taggable and CDK tags it (the cell tag on every cell resource).";
const ROLE_AND_POLICY =
  "CDK orders a resource after its role with DependsOn on the role and on the role's default policy together: the role entry repeats the GetAtt, the policy entry is what makes the resource wait for its permissions, and CDK emits both.";

export const CFN_LINT_ACKNOWLEDGED: readonly CfnLintAcknowledgement[] = [
  ...['AWS::ElasticLoadBalancingV2::Listener', 'AWS::ApplicationAutoScaling::ScalableTarget', 'AWS::CloudWatch::Dashboard'].map((resourceType) => ({
    rule: 'E3002',
    resourceType,
    message: /^Additional properties are not allowed \('Tags' was unexpected\)$/,
    reason: STALE_TAGS,
  })),
  {
    rule: 'E3016',
    resourceType: 'AWS::AutoScaling::AutoScalingGroup',
    message: /\('AutoScalingInstanceRefresh' was unexpected\)/,
    reason:
      "cfn-lint 1.51.0's UpdatePolicy schema predates the AutoScalingInstanceRefresh update policy, which aws-cdk-lib (UpdatePolicy.instanceRefresh, since 2.263) writes for CloudFormation: the EC2 cell rolls its instances back on its alarms.",
  },
  ...['AWS::Lambda::Function', 'AWS::CloudFormation::Stack', 'AWS::CodePipeline::Pipeline'].map((resourceType) => ({
    rule: 'W3005',
    resourceType,
    message: /dependency already enforced by a 'GetAtt'/,
    reason: ROLE_AND_POLICY,
  })),
];

interface CfnLintResult {
  readonly Rule: { readonly Id: string };
  readonly Message: string;
  readonly Filename: string;
  readonly Location: { readonly Path: readonly (string | number)[] };
}

/** Every template synth wrote under `outdir` (stage assemblies and nested stacks included). */
export function writtenTemplates(outdir: string): string[] {
  return fs
    .readdirSync(outdir, { withFileTypes: true })
    .flatMap((entry) => {
      const full = path.join(outdir, entry.name);
      if (entry.isDirectory()) return entry.name.startsWith('asset.') ? [] : writtenTemplates(full);
      return entry.name.endsWith('.template.json') ? [full] : [];
    })
    .sort();
}

/**
 * Runs cfn-lint over the templates (in batches, one process each) and returns its findings,
 * acknowledged or open by CFN_LINT_ACKNOWLEDGED. Throws with one line when cfn-lint cannot run.
 */
export function cfnLintFindings(templates: readonly string[], options: { command?: string; batch?: number } = {}): Finding[] {
  const command = options.command ?? CFN_LINT;
  const batch = options.batch ?? 50;
  const findings: Finding[] = [];
  for (let i = 0; i < templates.length; i += batch) {
    const files = templates.slice(i, i + batch);
    const run = spawnSync(command, ['--format', 'json', '--', ...files], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    if (run.error) throw new Error(`cfn-lint could not run (${run.error.message}); install it with \`pip install cfn-lint\``);
    // cfn-lint's exit status is a bitmask of the levels found (2 error, 4 warning, 8 info); 1 is its own failure.
    if ((run.status ?? 1) & 1 || !run.stdout.trim().startsWith('['))
      throw new Error(`cfn-lint failed: ${(run.stderr || run.stdout).trim().split('\n')[0]}`);
    const types = new Map<string, Record<string, { Type?: string }>>();
    for (const result of JSON.parse(run.stdout) as CfnLintResult[]) {
      const file = result.Filename;
      if (!types.has(file))
        types.set(file, (JSON.parse(fs.readFileSync(file, 'utf8')) as { Resources?: Record<string, { Type?: string }> }).Resources ?? {});
      const [section, logicalId] = result.Location.Path;
      const resourceType = section === 'Resources' ? types.get(file)![String(logicalId)]?.Type : undefined;
      const ack = CFN_LINT_ACKNOWLEDGED.find((a) => a.rule === result.Rule.Id && a.resourceType === resourceType && a.message.test(result.Message));
      findings.push({
        pack: CFN_LINT,
        stack: path.basename(file).replace(/\.template\.json$/, ''),
        rule: result.Rule.Id,
        resource: `${result.Location.Path.slice(0, 2).join('/')}${resourceType ? ` (${resourceType})` : ''}`,
        description: result.Message,
        ...(ack ? { acknowledgement: { reason: ack.reason, at: `${ack.rule} on ${ack.resourceType} (lib/app/audit/cfn-lint.ts)` } } : {}),
      });
    }
  }
  return findings;
}
