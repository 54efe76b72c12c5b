import { BAKE_ACTION_MAX_SECONDS } from '../../domain/waves/bake-segments';
import { partitionFunction, shellQuote as quote } from '../../runtime/pipeline/shell';

/** One cell whose health alarm a bake step watches. */
export interface BakeTarget {
  readonly cell: string;
  readonly account: string;
  readonly region: string;
  readonly alarmName: string;
  /** Role in the cell account that may describe the alarm. */
  readonly roleName: string;
}

/** Seconds between two checks of the alarms during a bake. */
export const BAKE_POLL_SECONDS = 60;

/** Environment the pipeline gives each bake action, so it can tell a rollback from a rollout. */
export const BAKE_EXECUTION_ENV = {
  /** CodePipeline resolves `#{codepipeline.PipelineExecutionId}` when the action starts. */
  executionId: 'BAKE_PIPELINE_EXECUTION_ID',
  pipelineName: 'BAKE_PIPELINE_NAME',
} as const;

/**
 * Shell commands (bash, AWS CLI) for a wave's bake: for `seconds`, every minute, assume each cell's
 * bake-watcher role and read its composite health alarm; any ALARM fails the step, which fails the
 * stage and triggers the stage's rollback. Only this wave's cells are watched, never a fleet-wide
 * alarm. Pure: the pipeline embeds it in a CodeBuild step, the tests run it with a fake `aws`.
 *
 * A stage rollback is a new pipeline execution that re-runs the whole stage, this step included,
 * with the artifacts of the last successful execution (CodePipeline User Guide, "Configuring stage
 * rollback": "The rolled back operation will result in a new execution";
 * https://docs.aws.amazon.com/codepipeline/latest/userguide/stage-rollback.html). The health alarm
 * is usually still in ALARM then, so a bake would fail the rollback itself. The step therefore
 * first reads its own execution (GetPipelineExecution, `executionType` STANDARD | ROLLBACK;
 * https://docs.aws.amazon.com/codepipeline/latest/APIReference/API_PipelineExecution.html) and, for
 * a ROLLBACK, reports the alarms once and succeeds without baking: the rollback restores the last
 * version that passed its bake, and the alarms keep paging on-call. When the execution cannot be
 * read the step fails rather than guess.
 *
 * Identities: the CodeBuild project role (tooling account) calls `codepipeline:GetPipelineExecution`
 * on this pipeline and `sts:AssumeRole` on each cell's bake-watcher role; the bake-watcher role
 * (cell account) calls `cloudwatch:DescribeAlarms` in the cell's region.
 */
export function bakeCommands(targets: readonly BakeTarget[], seconds: number, part?: { readonly index: number; readonly of: number }): string[] {
  return [...bakeVariables(targets, seconds, part), ...bakeScript()];
}

/** The variables `bakeScript` reads: the cells to watch, for how long, and which part of a chained bake this is. */
export function bakeVariables(targets: readonly BakeTarget[], seconds: number, part?: { readonly index: number; readonly of: number }): string[] {
  if (targets.length === 0) throw new Error('bakeCommands: a wave without cells has nothing to watch');
  if (!Number.isInteger(seconds) || seconds < 0) throw new Error(`bakeCommands: seconds ${seconds} must be a whole number >= 0`);
  if (seconds > BAKE_ACTION_MAX_SECONDS) {
    throw new Error(
      `bakeCommands: ${seconds}s is longer than one CodePipeline CodeBuild action may run (${BAKE_ACTION_MAX_SECONDS}s of its 8 h); split it with bakeSegments`,
    );
  }
  const list = targets.map((t) => quote(`${t.cell} ${t.account} ${t.region} ${t.alarmName} ${t.roleName}`)).join(' ');
  const label = part && part.of > 1 ? ` (part ${part.index} of ${part.of})` : '';
  return [`bake_targets=(${list})`, `bake_seconds=${seconds}`, `bake_label=${quote(label)}`];
}

/** The body of `bakeCommands`, the same for every stage: the pipeline ships it once (stage-scripts.ts). */
export function bakeScript(): string[] {
  const { executionId, pipelineName } = BAKE_EXECUTION_ENV;
  return [
    ...partitionFunction(),
    'bake_until=$(( $(date +%s) + bake_seconds ))',
    'bake_check() {',
    '  for target in "${bake_targets[@]}"; do',
    '    read -r cell account region alarm role <<<"$target"',
    '    creds=$(aws sts assume-role --role-arn "arn:$(stage_partition "$region"):iam::${account}:role/${role}" --role-session-name "bake-${cell}" --query "Credentials.[AccessKeyId,SecretAccessKey,SessionToken]" --output text) || { echo "bake: cannot assume ${role} in ${account}"; return 2; }',
    '    read -r key secret token <<<"$creds"',
    '    state=$(AWS_ACCESS_KEY_ID="$key" AWS_SECRET_ACCESS_KEY="$secret" AWS_SESSION_TOKEN="$token" aws cloudwatch describe-alarms --region "$region" --alarm-types CompositeAlarm --alarm-names "$alarm" --query "CompositeAlarms[0].StateValue" --output text) || { echo "bake: cannot read ${alarm}"; return 2; }',
    '    if [ "$state" = "None" ] || [ -z "$state" ]; then echo "bake: ${cell} health alarm ${alarm} not found (the bake-watcher role needs cloudwatch:DescribeAlarms on *)"; return 2; fi',
    '    echo "bake: ${cell} ${alarm} ${state}"',
    '    if [ "$state" = "ALARM" ]; then bake_failed="${cell} health alarm ${alarm} is in ALARM"; return 1; fi',
    '  done',
    '  return 0',
    '}',
    `if [ -z "\${${executionId}:-}" ] || [ -z "\${${pipelineName}:-}" ]; then echo "bake: ${executionId} and ${pipelineName} must be set to tell a rollback from a rollout"; exit 1; fi`,
    `execution_type=$(aws codepipeline get-pipeline-execution --pipeline-name "$${pipelineName}" --pipeline-execution-id "$${executionId}" --query "pipelineExecution.executionType" --output text) || { echo "bake: cannot read pipeline execution $${executionId}"; exit 1; }`,
    'if [ "$execution_type" = "ROLLBACK" ]; then',
    `  echo "bake: execution $${executionId} is a stage rollback; restoring the last version that passed its bake, so not baking\${bake_label}"`,
    '  bake_check || echo "bake: ${bake_failed:-alarms unreadable}; the rollback goes on, the alarms keep paging"',
    '  exit 0',
    'fi',
    'while true; do',
    '  bake_check; status=$?',
    '  if [ "$status" -eq 1 ]; then echo "bake: ${bake_failed}; failing the wave so it rolls back"; exit 1; fi',
    '  if [ "$status" -ne 0 ]; then exit 1; fi',
    '  [ "$(date +%s)" -ge "$bake_until" ] && break',
    `  sleep ${BAKE_POLL_SECONDS}`,
    'done',
    'echo "bake: ${#bake_targets[@]} cell(s) healthy for ${bake_seconds}s${bake_label}"',
  ];
}
