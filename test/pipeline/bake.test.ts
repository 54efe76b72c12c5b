import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { BakeTarget, bakeCommands } from '../../lib/pipeline';

const targets: BakeTarget[] = [
  { cell: 'eu-2', account: '333333333332', region: 'eu-west-1', alarmName: 'orders-eu-2-health', roleName: 'orders-eu-2-bake-watcher' },
  { cell: 'eu-3', account: '333333333333', region: 'eu-west-1', alarmName: 'orders-eu-3-health', roleName: 'orders-eu-3-bake-watcher' },
];

/** Runs the bake with a fake `aws` that logs its calls and answers alarm states from `states`. */
function bake(states: Record<string, string>, seconds = 0) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bake-'));
  const log = path.join(dir, 'calls.log');
  fs.writeFileSync(path.join(dir, 'aws'), [
    '#!/usr/bin/env bash',
    `echo "$* | key=\${AWS_ACCESS_KEY_ID:-none}" >> ${log}`,
    'if [ "$1" = sts ]; then echo "KEY-$(echo "$*" | grep -o "[0-9]\\{12\\}") SECRET TOKEN"; exit 0; fi',
    ...Object.entries(states).map(([alarm, state]) => `if [[ "$*" == *"--alarm-names ${alarm} "* ]]; then echo ${state}; exit 0; fi`),
    'echo None',
  ].join('\n'), { mode: 0o755 });
  const result = spawnSync('bash', ['-c', bakeCommands(targets, seconds).join('\n')], {
    encoding: 'utf8', env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
  });
  return { status: result.status, out: result.stdout + result.stderr, calls: fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : [] };
}

describe('bakeCommands', () => {
  it('passes when every watched health alarm is OK, reading each through its cell role', () => {
    const result = bake({ 'orders-eu-2-health': 'OK', 'orders-eu-3-health': 'OK' });
    expect(result.status).toBe(0);
    expect(result.out).toContain('bake: 2 cell(s) healthy for 0s');
    expect(result.calls).toEqual([
      expect.stringMatching(/^sts assume-role --role-arn arn:aws:iam::333333333332:role\/orders-eu-2-bake-watcher .*key=none$/),
      expect.stringMatching(/^cloudwatch describe-alarms --region eu-west-1 --alarm-types CompositeAlarm --alarm-names orders-eu-2-health .*key=KEY-333333333332$/),
      expect.stringMatching(/^sts assume-role --role-arn arn:aws:iam::333333333333:role\/orders-eu-3-bake-watcher /),
      expect.stringMatching(/^cloudwatch describe-alarms .*--alarm-names orders-eu-3-health .*key=KEY-333333333333$/),
    ]);
  });

  it('fails the wave when any watched alarm is in ALARM', () => {
    const result = bake({ 'orders-eu-2-health': 'OK', 'orders-eu-3-health': 'ALARM' });
    expect(result.status).toBe(1);
    expect(result.out).toContain('eu-3 health alarm orders-eu-3-health is in ALARM; failing the wave so it rolls back');
  });

  it('fails when an alarm cannot be found', () => {
    expect(bake({ 'orders-eu-2-health': 'OK' }).out).toContain('orders-eu-3-health not found');
  });

  it('refuses an empty wave or a negative bake', () => {
    expect(() => bakeCommands([], 60)).toThrow(/nothing to watch/);
    expect(() => bakeCommands(targets, -1)).toThrow(/seconds -1/);
  });
});
