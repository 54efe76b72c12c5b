import { DefaultStackSynthesizer } from 'aws-cdk-lib';
import { deployRoleShell, ProtectTarget } from '../../runtime/pipeline/protect';
import { partitionFunction, shellQuote } from '../../runtime/pipeline/shell';

/** Seconds between two reads of a stack's status while it settles or is deleted. */
export const FAILED_CREATE_POLL_SECONDS = 30;
/** How long the step waits for a stack to settle or be deleted before it fails the stage. */
export const FAILED_CREATE_WAIT_SECONDS = 3600;

/** The runbook the step's failures point to. */
export const FAILED_CREATE_RUNBOOK = 'docs/first-deploy.md';

export interface FailedCreateOptions {
  /** @default FAILED_CREATE_POLL_SECONDS */
  readonly pollSeconds?: number;
  /** @default FAILED_CREATE_WAIT_SECONDS */
  readonly waitSeconds?: number;
  /** CDK bootstrap qualifier of the deploy roles. @default the CDK default */
  readonly qualifier?: string;
}

/**
 * Shell commands (bash, AWS CLI) the pipeline runs before each stage's deploys, so that a first
 * create that failed is retried by running the pipeline again, without hand work.
 *
 * A create that fails rolls back to `ROLLBACK_COMPLETE`, and the CloudFormation action CDK Pipelines
 * deploys with (`CREATE_UPDATE`) "will fail deployment if the stack is in a failed state" (aws-cdk-lib,
 * CloudFormationCreateUpdateStackAction); only deleting it lets the next create start. The action's
 * own `REPLACE_ON_FAILURE` mode is not used: it deletes a stack in *any* failed state, a serving
 * cell whose update rollback failed included. `ROLLBACK_COMPLETE` (and `ROLLBACK_FAILED`) is reached only by a create that failed
 * or was cancelled, never by an update (those end in `UPDATE_ROLLBACK_*`), so the stack never served:
 * the create rollback has already deleted what it made, except resources retained by policy, and
 * nothing the fleet has named depends on it (CloudFormation User Guide, stack status codes).
 *
 * For each stack, through its environment's CDK bootstrap deploy role (`cloudformation:DeleteStack`
 * in its `CliPermissions`, `DescribeStacks` through AWSCloudFormationReadOnlyAccess):
 * - no stack: nothing to do, the deploy creates it;
 * - `CREATE_IN_PROGRESS`, `ROLLBACK_IN_PROGRESS`, `DELETE_IN_PROGRESS` (an earlier execution was
 *   stopped while CloudFormation worked on): wait until it settles, then decide;
 * - `ROLLBACK_COMPLETE`, `ROLLBACK_FAILED`: delete it and wait until it is gone. A termination-
 *   protected one is refused (the pipeline protects a stack only after a deploy succeeded, so a
 *   protected stack in that state was protected by hand);
 * - `DELETE_FAILED`: fail, naming the runbook (a resource CloudFormation could not delete needs a look);
 * - anything else (created, updated, update rolled back): nothing to do.
 * Any failure to read or delete fails the step, which fails the stage before it deploys.
 */
export function failedCreateCommands(targets: readonly ProtectTarget[], options: FailedCreateOptions = {}): string[] {
  if (targets.length === 0) return [];
  return [...failedCreateVariables(targets, options), ...failedCreateScript()];
}

/** The variables `failedCreateScript` reads: the stage's stacks, poll and wait seconds, the CDK bootstrap qualifier. */
export function failedCreateVariables(targets: readonly ProtectTarget[], options: FailedCreateOptions = {}): string[] {
  const poll = options.pollSeconds ?? FAILED_CREATE_POLL_SECONDS;
  const wait = options.waitSeconds ?? FAILED_CREATE_WAIT_SECONDS;
  for (const [name, value] of [
    ['pollSeconds', poll],
    ['waitSeconds', wait],
  ] as const) {
    if (!Number.isInteger(value) || value < 0) throw new Error(`failedCreateCommands: ${name} ${value} must be a whole number of seconds >= 0`);
  }
  const qualifier = options.qualifier ?? DefaultStackSynthesizer.DEFAULT_QUALIFIER;
  const list = targets.map((t) => shellQuote(`${t.stackName} ${t.account} ${t.region}`)).join(' ');
  return [`failed_create_targets=(${list})`, `failed_create_poll=${poll}`, `failed_create_wait=${wait}`, `cdk_qualifier=${shellQuote(qualifier)}`];
}

/** The body of `failedCreateCommands`, the same for every stage: the pipeline ships it once (stage-scripts.ts). */
export function failedCreateScript(): string[] {
  const runbook = FAILED_CREATE_RUNBOOK;
  return [
    ...partitionFunction(),
    // Prints "<status> <termination protection>", or "NONE False" when the stack does not exist.
    'failed_create_status() {',
    '  local out',
    '  if out=$(AWS_ACCESS_KEY_ID="$key" AWS_SECRET_ACCESS_KEY="$secret" AWS_SESSION_TOKEN="$token" aws cloudformation describe-stacks --region "$region" --stack-name "$stack" --query "Stacks[0].[StackStatus,EnableTerminationProtection]" --output text 2>&1); then echo "$out"; return 0; fi',
    '  if [[ "$out" == *"does not exist"* ]]; then echo "NONE False"; return 0; fi',
    '  echo "$out" >&2; return 1',
    '}',
    'for target in "${failed_create_targets[@]}"; do',
    '  read -r stack account region <<<"$target"',
    `  role="${deployRoleShell()}"`,
    '  creds=$(aws sts assume-role --role-arn "$role" --role-session-name "failed-create-${stack:0:40}" --query "Credentials.[AccessKeyId,SecretAccessKey,SessionToken]" --output text) || { echo "failed-create: cannot assume ${role}; is ${account}/${region} bootstrapped trusting the tooling account?"; exit 1; }',
    '  read -r key secret token <<<"$creds"',
    '  deadline=$(( $(date +%s) + failed_create_wait ))',
    '  deleting=no',
    '  while true; do',
    '    state=$(failed_create_status) || { echo "failed-create: cannot read ${stack} in ${account}/${region}"; exit 1; }',
    '    read -r status protected <<<"$state"',
    '    case "$status" in',
    '      NONE)',
    '        if [ "$deleting" = yes ]; then echo "failed-create: ${stack} (${account}/${region}) deleted; the deploy creates it again"; else echo "failed-create: ${stack} (${account}/${region}) does not exist yet; the deploy creates it"; fi',
    '        break ;;',
    '      CREATE_IN_PROGRESS|ROLLBACK_IN_PROGRESS|DELETE_IN_PROGRESS)',
    '        echo "failed-create: ${stack} (${account}/${region}) is ${status}; waiting for it to settle" ;;',
    '      ROLLBACK_COMPLETE|ROLLBACK_FAILED)',
    `        if [ "$protected" = True ]; then echo "failed-create: \${stack} (\${account}/\${region}) is \${status} and termination-protected: the pipeline protects a stack only after a deploy succeeded, so this was set by hand; see ${runbook}"; exit 1; fi`,
    '        if [ "$deleting" = no ]; then',
    '          echo "failed-create: ${stack} (${account}/${region}) is ${status}: its first create failed and it never served; deleting it so the deploy can create it again"',
    `          AWS_ACCESS_KEY_ID="$key" AWS_SECRET_ACCESS_KEY="$secret" AWS_SESSION_TOKEN="$token" aws cloudformation delete-stack --region "$region" --stack-name "$stack" || { echo "failed-create: cannot delete \${stack} in \${account}/\${region}; see ${runbook}"; exit 1; }`,
    '          deleting=yes',
    '        fi ;;',
    '      DELETE_FAILED)',
    `        echo "failed-create: \${stack} (\${account}/\${region}) is DELETE_FAILED: CloudFormation could not delete a resource of it; see ${runbook} (delete failed)"; exit 1 ;;`,
    '      *)',
    '        echo "failed-create: ${stack} (${account}/${region}) is ${status}; nothing to clear"',
    '        break ;;',
    '    esac',
    `    if [ "$(date +%s)" -ge "$deadline" ]; then echo "failed-create: \${stack} (\${account}/\${region}) is still \${status} after \${failed_create_wait}s; see ${runbook}"; exit 1; fi`,
    '    sleep "$failed_create_poll"',
    '  done',
    'done',
  ];
}
