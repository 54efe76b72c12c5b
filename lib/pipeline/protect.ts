import { DefaultStackSynthesizer } from 'aws-cdk-lib';

/** A stack the pipeline deployed, to be termination-protected in its account and region. */
export interface ProtectTarget {
  readonly stackName: string;
  readonly account: string;
  readonly region: string;
}

/** The CDK bootstrap deploy role of an environment (default qualifier), which the pipeline already assumes to deploy. */
export function deployRoleArn(account: string, region: string, qualifier = DefaultStackSynthesizer.DEFAULT_QUALIFIER): string {
  return `arn:aws:iam::${account}:role/cdk-${qualifier}-deploy-role-${account}-${region}`;
}

/** `s` as one single-quoted shell word. */
export const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * Shell commands (bash, AWS CLI) that enable termination protection on stacks the pipeline just
 * deployed. CodePipeline's CloudFormation action ignores the assembly's `terminationProtection`
 * (aws/aws-cdk#17871: stacks deployed by CDK Pipelines stay unprotected), so the pipeline sets it
 * after each deploy with `UpdateTerminationProtection` (CloudFormation API Reference,
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_UpdateTerminationProtection.html),
 * through the environment's CDK bootstrap deploy role, whose policy allows
 * `cloudformation:UpdateTerminationProtection` (CDK bootstrap template, `CliPermissions`) and which
 * trusts the tooling account. Idempotent: protecting a protected stack changes nothing. Any failure
 * fails the step, so a stack never silently stays unprotected.
 */
export function protectCommands(targets: readonly ProtectTarget[], qualifier = DefaultStackSynthesizer.DEFAULT_QUALIFIER): string[] {
  if (targets.length === 0) return [];
  const list = targets.map((t) => shellQuote(`${t.stackName} ${t.account} ${t.region} ${deployRoleArn(t.account, t.region, qualifier)}`)).join(' ');
  return [
    `protect_targets=(${list})`,
    'for target in "${protect_targets[@]}"; do',
    '  read -r stack account region role <<<"$target"',
    '  creds=$(aws sts assume-role --role-arn "$role" --role-session-name "protect-${stack:0:50}" --query "Credentials.[AccessKeyId,SecretAccessKey,SessionToken]" --output text) || { echo "protect: cannot assume ${role}; is ${account}/${region} bootstrapped trusting the tooling account?"; exit 1; }',
    '  read -r key secret token <<<"$creds"',
    '  AWS_ACCESS_KEY_ID="$key" AWS_SECRET_ACCESS_KEY="$secret" AWS_SESSION_TOKEN="$token" aws cloudformation update-termination-protection --region "$region" --enable-termination-protection --stack-name "$stack" >/dev/null || { echo "protect: cannot enable termination protection on ${stack} in ${account}/${region}"; exit 1; }',
    '  echo "protect: ${stack} (${account}/${region}) is termination-protected"',
    'done',
  ];
}
