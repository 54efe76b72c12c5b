import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { BAKE_EXECUTION_ENV, BakeTarget, bakeCommands } from '../../../lib/constructs/pipeline';
import { BAKE_ACTION_MAX_SECONDS } from '../../../lib/domain/waves';
import { runWithFakeAws } from '../../support/fake-aws';

const targets: BakeTarget[] = [
  { cell: 'eu-2', account: '333333333332', region: 'eu-west-1', alarmName: 'orders-eu-2-health', roleName: 'orders-eu-2-bake-watcher' },
  { cell: 'eu-3', account: '333333333333', region: 'eu-west-1', alarmName: 'orders-eu-3-health', roleName: 'orders-eu-3-bake-watcher' },
];

const EXECUTION = '11111111-2222-3333-4444-555555555555';
const PIPELINE_ENV = { [BAKE_EXECUTION_ENV.executionId]: EXECUTION, [BAKE_EXECUTION_ENV.pipelineName]: 'orders-cells' };

/** Runs the bake with a fake `aws` that logs its calls and answers alarm states from `states`. */
function bake(states: Record<string, string>, seconds = 0, env: NodeJS.ProcessEnv = { ...process.env, ...PIPELINE_ENV }, executionType = 'STANDARD') {
  return runWithFakeAws(
    bakeCommands(targets, seconds),
    {
      first: [
        `if [ "$1" = codepipeline ]; then [[ "$*" == *"--pipeline-name orders-cells --pipeline-execution-id ${EXECUTION} "* ]] || exit 254; echo ${executionType}; exit 0; fi`,
        ...Object.entries(states).map(([alarm, state]) => `if [[ "$*" == *"--alarm-names ${alarm} "* ]]; then echo ${state}; exit 0; fi`),
      ],
      otherwise: 'echo None',
    },
    env,
  );
}

describe('bakeCommands', () => {
  it('passes when every watched health alarm is OK, reading each through its cell role', () => {
    const result = bake({ 'orders-eu-2-health': 'OK', 'orders-eu-3-health': 'OK' });
    expect(result.status).toBe(0);
    expect(result.out).toContain('bake: 2 cell(s) healthy for 0s');
    expect(result.calls).toEqual([
      expect.stringMatching(
        new RegExp(
          `^codepipeline get-pipeline-execution --pipeline-name orders-cells --pipeline-execution-id ${EXECUTION} --query pipelineExecution.executionType .*key=none$`,
        ),
      ),
      expect.stringMatching(/^sts assume-role --role-arn arn:aws:iam::333333333332:role\/orders-eu-2-bake-watcher .*key=none$/),
      expect.stringMatching(
        /^cloudwatch describe-alarms --region eu-west-1 --alarm-types CompositeAlarm --alarm-names orders-eu-2-health .*key=KEY-333333333332$/,
      ),
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

  it("ignores the user's shell set-up: a real-looking aws first on PATH, in ~/.bashrc and BASH_ENV, SHLVL unset", () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'bake-home-'));
    try {
      const realBin = path.join(home, 'bin');
      fs.mkdirSync(realBin);
      // What a real AWS CLI without credentials answers.
      fs.writeFileSync(
        path.join(realBin, 'aws'),
        '#!/bin/sh\necho "Unable to locate credentials. You can configure credentials by running \\"aws configure\\"." >&2\nexit 253\n',
        { mode: 0o755 },
      );
      const rc = `export PATH=${realBin}:$PATH\n`;
      fs.writeFileSync(path.join(home, '.bashrc'), rc);
      fs.writeFileSync(path.join(home, '.bash_profile'), rc);
      fs.writeFileSync(path.join(home, 'env.sh'), rc);
      const { SHLVL: _shlvl, ...rest } = process.env;
      const env = { ...rest, ...PIPELINE_ENV, HOME: home, BASH_ENV: path.join(home, 'env.sh'), PATH: `${realBin}:${process.env.PATH}` };
      const result = bake({ 'orders-eu-2-health': 'OK', 'orders-eu-3-health': 'OK' }, 0, env);
      expect(result.out).not.toContain('Unable to locate credentials');
      expect(result.status).toBe(0);
      expect(result.calls).toHaveLength(5);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  it('does not bake a stage rollback (a new execution of type ROLLBACK): it reports the alarms and lets the rollback finish', () => {
    const result = bake({ 'orders-eu-2-health': 'ALARM', 'orders-eu-3-health': 'OK' }, 3600, undefined, 'ROLLBACK');
    expect(result.status).toBe(0);
    expect(result.out).toContain(`execution ${EXECUTION} is a stage rollback`);
    expect(result.out).toContain('eu-2 health alarm orders-eu-2-health is in ALARM; the rollback goes on');
    expect(result.out).not.toContain('healthy for');
  });

  it('fails rather than guess when it cannot tell a rollback from a rollout', () => {
    const { [BAKE_EXECUTION_ENV.executionId]: _id, ...withoutId } = { ...process.env, ...PIPELINE_ENV };
    const missing = bake({ 'orders-eu-2-health': 'OK', 'orders-eu-3-health': 'OK' }, 0, withoutId);
    expect(missing.status).toBe(1);
    expect(missing.out).toContain(`${BAKE_EXECUTION_ENV.executionId} and ${BAKE_EXECUTION_ENV.pipelineName} must be set`);
    const unreadable = bake({ 'orders-eu-2-health': 'OK', 'orders-eu-3-health': 'OK' }, 0, {
      ...process.env,
      ...PIPELINE_ENV,
      [BAKE_EXECUTION_ENV.pipelineName]: 'other',
    });
    expect(unreadable.status).toBe(1);
    expect(unreadable.out).toContain(`cannot read pipeline execution ${EXECUTION}`);
    expect(unreadable.calls.some((c) => c.startsWith('sts'))).toBe(false);
  });

  it('fails when a watched alarm cannot be read, and says which permission the role needs', () => {
    expect(bake({ 'orders-eu-2-health': 'OK' }).out).toContain(
      'orders-eu-3-health not found (the bake-watcher role needs cloudwatch:DescribeAlarms on *)',
    );
  });
});

describe('bakeCommands and the action limit', () => {
  it('refuses one action longer than the action limit allows', () => {
    expect(() => bakeCommands(targets, BAKE_ACTION_MAX_SECONDS + 1)).toThrow(
      /longer than one CodePipeline CodeBuild action may run .* split it with bakeSegments/,
    );
  });
});
