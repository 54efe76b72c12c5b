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

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * Shell commands (bash, AWS CLI) for a wave's bake: for `seconds`, every minute, assume each cell's
 * bake-watcher role and read its health alarm; any ALARM fails the step, which fails the stage and
 * triggers the stage's rollback. Only this wave's cells are watched, never a fleet-wide alarm.
 * Pure: the pipeline embeds it in a CodeBuild step, the tests run it with a fake `aws`.
 */
export function bakeCommands(targets: readonly BakeTarget[], seconds: number): string[] {
  if (targets.length === 0) throw new Error('bakeCommands: a wave without cells has nothing to watch');
  if (!Number.isInteger(seconds) || seconds < 0) throw new Error(`bakeCommands: seconds ${seconds} must be a whole number >= 0`);
  const list = targets.map((t) => quote(`${t.cell} ${t.account} ${t.region} ${t.alarmName} ${t.roleName}`)).join(' ');
  return [
    `bake_until=$(( $(date +%s) + ${seconds} ))`,
    `bake_targets=(${list})`,
    'bake_check() {',
    '  for target in "${bake_targets[@]}"; do',
    '    read -r cell account region alarm role <<<"$target"',
    '    creds=$(aws sts assume-role --role-arn "arn:aws:iam::${account}:role/${role}" --role-session-name "bake-${cell}" --query "Credentials.[AccessKeyId,SecretAccessKey,SessionToken]" --output text) || { echo "bake: cannot assume ${role} in ${account}"; return 1; }',
    '    read -r key secret token <<<"$creds"',
    '    state=$(AWS_ACCESS_KEY_ID="$key" AWS_SECRET_ACCESS_KEY="$secret" AWS_SESSION_TOKEN="$token" aws cloudwatch describe-alarms --region "$region" --alarm-types CompositeAlarm --alarm-names "$alarm" --query "CompositeAlarms[0].StateValue" --output text) || { echo "bake: cannot read ${alarm}"; return 1; }',
    '    if [ "$state" = "ALARM" ]; then echo "bake: ${cell} health alarm ${alarm} is in ALARM; failing the wave so it rolls back"; return 1; fi',
    '    if [ "$state" = "None" ] || [ -z "$state" ]; then echo "bake: ${cell} health alarm ${alarm} not found"; return 1; fi',
    '  done',
    '}',
    `while true; do bake_check || exit 1; [ "$(date +%s)" -ge "$bake_until" ] && break; sleep ${BAKE_POLL_SECONDS}; done`,
    `echo "bake: ${targets.length} cell(s) healthy for ${seconds}s"`,
  ];
}
