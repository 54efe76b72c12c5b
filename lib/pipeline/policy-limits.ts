import * as fs from 'fs';
import * as path from 'path';
import { App, IPolicyValidationContext, IPolicyValidationPlugin, PolicyValidationPluginReport, Validations } from 'aws-cdk-lib';

/**
 * Size limits of the policies the pipeline's templates carry, which grow with every cell account and
 * region (each adds deploy, publishing and bake role ARNs and artifact-bucket principals):
 * - a managed policy: 6,144 characters, whitespace not counted (IAM and STS quotas,
 *   https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html);
 * - a role's inline policies together: 10,240 characters, and at most 10 managed policies attached
 *   to a role by default (same page);
 * - a bucket policy: 20 KB (S3 User Guide, "Bucket policies",
 *   https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucket-policies.html);
 * - a key policy: 32 KB (AWS KMS quotas, "Key policy document size",
 *   https://docs.aws.amazon.com/kms/latest/developerguide/resource-limits.html).
 * CDK splits a role's statements into overflow managed policies but cannot split one statement,
 * and nothing checks the bucket and key policies: the deploy fails in CloudFormation. This check
 * fails synth instead, naming the policy, its size and the limit.
 */
export const POLICY_LIMITS = {
  'AWS::IAM::ManagedPolicy': 6_144,
  roleInline: 10_240,
  /** Managed policies attached to one role (default quota; raisable to 20). */
  managedPerRole: 10,
  'AWS::S3::BucketPolicy': 20_480,
  'AWS::KMS::Key': 32_768,
} as const;

/** Lengths that tokens render to, for sizing a document before deploy: the commercial partition, otherwise the longest realistic value. */
const PSEUDO: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::AccountId': '123456789012',
  'AWS::Region': 'ap-southeast-5',
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': 'x'.repeat(64),
};

/**
 * Renders intrinsic functions the way CloudFormation would, with realistic lengths: Fn::Join of its
 * parts, pseudo parameters by their longest value, a Ref or GetAtt of a resource by an ARN-length
 * placeholder (80 characters). So a document is sized as deployed, not as written in the template.
 */
export function renderForSize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(renderForSize);
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && keys[0] === 'Ref') return PSEUDO[String(o.Ref)] ?? 'x'.repeat(80);
    if (keys.length === 1 && keys[0] === 'Fn::GetAtt') return 'x'.repeat(80);
    if (keys.length === 1 && keys[0] === 'Fn::Join') {
      const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
      return (Array.isArray(parts) ? parts : [parts]).map((p) => String(renderForSize(p))).join(sep);
    }
    if (keys.length === 1 && keys[0] === 'Fn::Sub') return String(Array.isArray(o['Fn::Sub']) ? o['Fn::Sub'][0] : o['Fn::Sub']).replace(/\$\{[^}]+\}/g, 'x'.repeat(40));
    return Object.fromEntries(keys.map((k) => [k, renderForSize(o[k])]));
  }
  return value;
}

/** The size a policy document counts against its limit: rendered JSON without whitespace. */
export function policySize(document: unknown): number {
  return JSON.stringify(renderForSize(document)).length;
}

export interface PolicyOverLimit {
  readonly what: string;
  readonly size: number;
  readonly limit: number;
}

interface CfnResource { Type: string; Properties?: Record<string, unknown> }

/** Every policy of one template over its limit. */
export function policiesOverLimit(template: { Resources?: Record<string, CfnResource> }): PolicyOverLimit[] {
  const over: PolicyOverLimit[] = [];
  const inlineByRole = new Map<string, number>();
  const managedByRole = new Map<string, number>();
  for (const [id, r] of Object.entries(template.Resources ?? {})) {
    const p = r.Properties ?? {};
    if (r.Type === 'AWS::IAM::ManagedPolicy' || r.Type === 'AWS::S3::BucketPolicy') {
      const size = policySize(p.PolicyDocument);
      const limit = POLICY_LIMITS[r.Type];
      if (size > limit) over.push({ what: `${r.Type} ${id}`, size, limit });
      for (const role of (p.Roles as unknown[] | undefined) ?? []) managedByRole.set(JSON.stringify(role), (managedByRole.get(JSON.stringify(role)) ?? 0) + 1);
    } else if (r.Type === 'AWS::KMS::Key') {
      const size = policySize(p.KeyPolicy);
      if (size > POLICY_LIMITS['AWS::KMS::Key']) over.push({ what: `key policy of ${id}`, size, limit: POLICY_LIMITS['AWS::KMS::Key'] });
    } else if (r.Type === 'AWS::IAM::Policy') {
      const size = policySize(p.PolicyDocument);
      for (const role of (p.Roles as unknown[] | undefined) ?? []) {
        const key = JSON.stringify(role);
        inlineByRole.set(key, (inlineByRole.get(key) ?? 0) + size);
      }
    } else if (r.Type === 'AWS::IAM::Role') {
      const size = ((p.Policies as { PolicyDocument: unknown }[] | undefined) ?? []).reduce((sum, pol) => sum + policySize(pol.PolicyDocument), 0);
      if (size > 0) {
        const key = JSON.stringify({ Ref: id });
        inlineByRole.set(key, (inlineByRole.get(key) ?? 0) + size);
      }
    }
  }
  for (const [role, count] of managedByRole) {
    if (count > POLICY_LIMITS.managedPerRole) over.push({ what: `managed policies attached to role ${role} (count)`, size: count, limit: POLICY_LIMITS.managedPerRole });
  }
  for (const [role, size] of inlineByRole) {
    if (size > POLICY_LIMITS.roleInline) over.push({ what: `inline policies of role ${role}`, size, limit: POLICY_LIMITS.roleInline });
  }
  return over;
}

/** Fails synth when a policy in any written template is over its limit (see POLICY_LIMITS). */
export class PolicySizeLimit implements IPolicyValidationPlugin {
  public readonly name = 'PolicySizeLimit';
  public readonly ruleIds = ['policy-size'];

  public validate(context: IPolicyValidationContext): PolicyValidationPluginReport {
    const violations = context.stackTemplates.flatMap((t) => policiesOverLimit(JSON.parse(fs.readFileSync(t.templatePath, 'utf8'))).map((o) => ({
      ruleName: 'policy-size',
      description: `${path.basename(t.templatePath)}: ${o.what} is ${o.size} characters; the limit is ${o.limit}`,
      fix: 'the pipeline\'s policies grow with every cell account and region: set pipeline.organizationId if it is not set (the bootstrap-role grants then stay the same size), otherwise split the fleet across pipelines (see README, "How many cells one pipeline holds")',
      violatingResources: [{ templatePath: t.templatePath, locations: [], constructPath: t.stackConstructPath }],
    })));
    return { success: violations.length === 0, violations };
  }
}

/** Registers `PolicySizeLimit` on the app. */
export function addPolicySizeLimit(app: App): void {
  Validations.of(app).addPlugins(new PolicySizeLimit());
}
