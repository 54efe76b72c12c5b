import { regionPartition } from '../../domain/fleet/regions';
import { CDK_BOOTSTRAP_QUALIFIER } from '../../domain/names';
import { partitionFunction, shellQuote } from './shell';

/** A stack the pipeline deployed, to be termination-protected in its account and region. */
export interface ProtectTarget {
  readonly stackName: string;
  readonly account: string;
  readonly region: string;
  /**
   * The stack's role (`DeletionProtectionAccess`) that may switch deletion protection on for its load
   * balancers and database.
   * @default - the stack has none to protect
   */
  readonly deletionProtectorRole?: string;
}

/** The CDK bootstrap deploy role of an environment (default qualifier), which the pipeline already assumes to deploy. */
export function deployRoleArn(account: string, region: string, qualifier = CDK_BOOTSTRAP_QUALIFIER): string {
  return `arn:${regionPartition(region)}:iam::${account}:role/cdk-${qualifier}-deploy-role-${account}-${region}`;
}

/**
 * The shell expression of `deployRoleArn` from the shell variables `$account`, `$region` and
 * `$cdk_qualifier` (and `stage_partition`, see `partitionFunction`): the steps list each stack's
 * account and region once and derive the role, instead of writing its ARN per stack into the
 * pipeline's template.
 */
export function deployRoleShell(): string {
  return 'arn:$(stage_partition "$region"):iam::${account}:role/cdk-${cdk_qualifier}-deploy-role-${account}-${region}';
}

/** The resource types the protect step switches deletion protection on for. */
export const DELETION_PROTECTED_TYPES = ['AWS::ElasticLoadBalancingV2::LoadBalancer', 'AWS::RDS::DBCluster', 'AWS::RDS::DBInstance'] as const;

/**
 * Shell commands (bash, AWS CLI) that protect the stacks the pipeline just deployed.
 *
 * Termination protection: CodePipeline's CloudFormation action ignores the assembly's
 * `terminationProtection` (aws/aws-cdk#17871: stacks deployed by CDK Pipelines stay unprotected), so
 * the pipeline sets it after each deploy with `UpdateTerminationProtection` (CloudFormation API Reference,
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_UpdateTerminationProtection.html),
 * through the environment's CDK bootstrap deploy role, whose policy allows
 * `cloudformation:UpdateTerminationProtection` (CDK bootstrap template, `CliPermissions`) and which
 * trusts the tooling account.
 *
 * Deletion protection, for a target with a `deletionProtectorRole`: the templates leave it out so a
 * failed first create can roll back (see DeletionProtectionAccess); here the stack's load balancers
 * and database, listed through the deploy role (`ListStackResources`, AWSCloudFormationReadOnlyAccess),
 * get it through the stack's protector role: `deletion_protection.enabled` on each load balancer
 * (ModifyLoadBalancerAttributes), `DeletionProtection` on the DB cluster (ModifyDBCluster; on Aurora
 * it is a setting of the cluster, which ModifyDBInstance does not take for its instances) or on a DB
 * instance outside a cluster (ModifyDBInstance).
 *
 * Idempotent: a protected stack or resource is skipped (see protectScript). A change that fails
 * after its retries fails the step, so a stack never silently stays unprotected.
 */
export function protectCommands(targets: readonly ProtectTarget[], qualifier = CDK_BOOTSTRAP_QUALIFIER): string[] {
  if (targets.length === 0) return [];
  return [...protectVariables(targets, qualifier), ...protectScript()];
}

/** The variables `protectScript` reads: the stacks to protect and the CDK bootstrap qualifier. */
export function protectVariables(targets: readonly ProtectTarget[], qualifier = CDK_BOOTSTRAP_QUALIFIER): string[] {
  const list = targets.map((t) => shellQuote(`${t.stackName} ${t.account} ${t.region} ${t.deletionProtectorRole ?? '-'}`)).join(' ');
  return [`protect_targets=(${list})`, `cdk_qualifier=${shellQuote(qualifier)}`];
}

/**
 * The body of `protectCommands`, the same for every stage: the pipeline ships it once (stage-scripts.ts).
 *
 * What is already protected is left alone (a re-run after a partial failure, a stage rolled back and
 * retried), each change is tried `protect_attempts` times `protect_wait` seconds apart (4 and 20 by
 * default: a database still `modifying` after its deploy refuses ModifyDBCluster for a while, and
 * throttling passes), and a change that still fails fails the step naming the stack, the resource
 * and AWS's last answer. The checks read with the same roles; a check that cannot read goes on to
 * the change, which is idempotent.
 */
export function protectScript(): string[] {
  const types = DELETION_PROTECTED_TYPES.map((t) => `ResourceType=='${t}'`).join(' || ');
  return [
    ...partitionFunction(),
    'as_deploy() { AWS_ACCESS_KEY_ID="$key" AWS_SECRET_ACCESS_KEY="$secret" AWS_SESSION_TOKEN="$token" aws "$@"; }',
    'as_protector() { AWS_ACCESS_KEY_ID="$pkey" AWS_SECRET_ACCESS_KEY="$psecret" AWS_SESSION_TOKEN="$ptoken" aws "$@"; }',
    // protect_try WHAT COMMAND...: COMMAND until it succeeds, protect_attempts times at most; its last error on failure.
    'protect_try() { local what=$1 attempt err; shift; for ((attempt = 1; ; attempt++)); do err=$("$@" 2>&1 >/dev/null) && return 0; echo "protect: ${what}: attempt ${attempt} of ${protect_attempts:-4} failed: $(tail -n1 <<<"$err")"; ((attempt >= ${protect_attempts:-4})) && return 1; sleep "${protect_wait:-20}"; done; }',
    'for target in "${protect_targets[@]}"; do',
    '  read -r stack account region protector <<<"$target"',
    `  role="${deployRoleShell()}"`,
    '  creds=$(aws sts assume-role --role-arn "$role" --role-session-name "protect-${stack:0:50}" --query "Credentials.[AccessKeyId,SecretAccessKey,SessionToken]" --output text) || { echo "protect: cannot assume ${role}; is ${account}/${region} bootstrapped trusting the tooling account?"; exit 1; }',
    '  read -r key secret token <<<"$creds"',
    '  if [ "$(as_deploy cloudformation describe-stacks --region "$region" --stack-name "$stack" --query "Stacks[0].EnableTerminationProtection" --output text 2>/dev/null)" = True ]; then',
    '    echo "protect: ${stack} (${account}/${region}) is already termination-protected"',
    '  else',
    '    protect_try "termination protection on ${stack}" as_deploy cloudformation update-termination-protection --region "$region" --enable-termination-protection --stack-name "$stack" || { echo "protect: cannot enable termination protection on ${stack} in ${account}/${region}"; exit 1; }',
    '    echo "protect: ${stack} (${account}/${region}) is termination-protected"',
    '  fi',
    '  [ "$protector" = - ] && continue',
    `  resources=$(as_deploy cloudformation list-stack-resources --region "$region" --stack-name "$stack" --query "StackResourceSummaries[?${types}].[ResourceType,PhysicalResourceId]" --output text) || { echo "protect: cannot list the resources of \${stack} in \${account}/\${region}"; exit 1; }`,
    '  pcreds=$(aws sts assume-role --role-arn "arn:$(stage_partition "$region"):iam::${account}:role/${protector}" --role-session-name "protect-${stack:0:50}" --query "Credentials.[AccessKeyId,SecretAccessKey,SessionToken]" --output text) || { echo "protect: cannot assume ${protector} in ${account}; was ${stack} deployed?"; exit 1; }',
    '  read -r pkey psecret ptoken <<<"$pcreds"',
    '  has_cluster=no; [[ "$resources" == *AWS::RDS::DBCluster* ]] && has_cluster=yes',
    '  while read -r type id; do',
    '    case "$type" in',
    '      AWS::ElasticLoadBalancingV2::LoadBalancer)',
    '        check=(elbv2 describe-load-balancer-attributes --load-balancer-arn "$id" --query "Attributes[?Key==\'deletion_protection.enabled\'].Value | [0]" --output text); on=true',
    '        cmd=(elbv2 modify-load-balancer-attributes --load-balancer-arn "$id" --attributes Key=deletion_protection.enabled,Value=true) ;;',
    '      AWS::RDS::DBCluster)',
    '        check=(rds describe-db-clusters --db-cluster-identifier "$id" --query "DBClusters[0].DeletionProtection" --output text); on=True',
    '        cmd=(rds modify-db-cluster --db-cluster-identifier "$id" --deletion-protection --apply-immediately) ;;',
    '      AWS::RDS::DBInstance)',
    '        [ "$has_cluster" = yes ] && continue',
    '        check=(rds describe-db-instances --db-instance-identifier "$id" --query "DBInstances[0].DeletionProtection" --output text); on=True',
    '        cmd=(rds modify-db-instance --db-instance-identifier "$id" --deletion-protection --apply-immediately) ;;',
    '      *) continue ;;',
    '    esac',
    '    if [ "$(as_protector "${check[@]}" --region "$region" 2>/dev/null)" = "$on" ]; then echo "protect: ${stack}: ${id} already has deletion protection"; continue; fi',
    '    protect_try "deletion protection on ${id}" as_protector "${cmd[@]}" --region "$region" || { echo "protect: cannot enable deletion protection on ${id} of ${stack} in ${account}/${region}"; exit 1; }',
    '    echo "protect: ${stack}: deletion protection on ${id}"',
    '  done <<<"$resources"',
    'done',
  ];
}
