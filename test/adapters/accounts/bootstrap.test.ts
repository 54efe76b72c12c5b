import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { AccountCredentials, bootstrapEnvironments, bootstrapProcessEnv, runBootstrap } from '../../../lib/adapters/accounts';
import { fakeCdk, FakeCdk } from '../../support/fake-cdk';

const FLEET = {
  accounts: { tooling: '999999999999', router: '888888888888' },
  regions: { 'eu-west-1': {}, 'us-east-1': {} },
  cells: [
    { id: 'a', account: '111111111111', region: 'eu-west-1' },
    { id: 'b', account: '222222222222', region: 'us-east-1' },
    { id: 'c', account: '111111111111', region: 'eu-west-1' },
  ],
  pipeline: { region: 'eu-west-1' },
};
const POLICY = 'arn:aws:iam::aws:policy/AdministratorAccess';

describe('bootstrapEnvironments', () => {
  it('covers the tooling account in the pipeline region, the router account in every region and every cell environment once', () => {
    const environments = bootstrapEnvironments(FLEET, { executionPolicyArn: POLICY });
    expect(environments.map((e) => [e.account, e.region, e.purposes.join(', '), e.args.join(' ')])).toEqual([
      ['999999999999', 'eu-west-1', 'tooling', `bootstrap aws://999999999999/eu-west-1 --cloudformation-execution-policies ${POLICY}`],
      [
        '888888888888',
        'eu-west-1',
        'router',
        `bootstrap aws://888888888888/eu-west-1 --trust 999999999999 --cloudformation-execution-policies ${POLICY}`,
      ],
      [
        '888888888888',
        'us-east-1',
        'router',
        `bootstrap aws://888888888888/us-east-1 --trust 999999999999 --cloudformation-execution-policies ${POLICY}`,
      ],
      [
        '111111111111',
        'eu-west-1',
        'cell a, cell c',
        `bootstrap aws://111111111111/eu-west-1 --trust 999999999999 --cloudformation-execution-policies ${POLICY}`,
      ],
      [
        '222222222222',
        'us-east-1',
        'cell b',
        `bootstrap aws://222222222222/us-east-1 --trust 999999999999 --cloudformation-execution-policies ${POLICY}`,
      ],
    ]);
  });

  it('without a pipeline, bootstraps routers and cells only', () => {
    const environments = bootstrapEnvironments({ ...FLEET, pipeline: undefined }, { executionPolicyArn: POLICY });
    expect(environments.map((e) => e.purposes[0])).toEqual(['router', 'router', 'cell a', 'cell b']);
  });

  it("bootstraps cell zero's account in its region, trusting the tooling account, after the cells", () => {
    const environments = bootstrapEnvironments(
      { ...FLEET, cellZero: { id: 'zero', account: '555555555555', region: 'eu-west-1' } },
      { executionPolicyArn: POLICY },
    );
    expect(environments.at(-1)).toEqual({
      account: '555555555555',
      region: 'eu-west-1',
      purposes: ['cell zero'],
      args: ['bootstrap', 'aws://555555555555/eu-west-1', '--trust', '999999999999', '--cloudformation-execution-policies', POLICY],
    });
    const named = bootstrapEnvironments(
      { ...FLEET, cellZero: { id: 'legacy', account: '111111111111', region: 'eu-west-1' } },
      { executionPolicyArn: POLICY },
    );
    expect(named.find((e) => e.account === '111111111111')!.purposes).toEqual(['cell a', 'cell c', 'cell zero legacy']);
  });

  it("gives each account its own customer-managed execution policy through {account}, and refuses another account's policy", () => {
    const environments = bootstrapEnvironments(FLEET, { executionPolicyArn: 'arn:aws:iam::{account}:policy/cdk-exec' });
    expect(environments.map((e) => e.args.at(-1))).toEqual(
      ['999999999999', '888888888888', '888888888888', '111111111111', '222222222222'].map((a) => `arn:aws:iam::${a}:policy/cdk-exec`),
    );
    expect(() => bootstrapEnvironments(FLEET, { executionPolicyArn: 'arn:aws:iam::999999999999:policy/cdk-exec' })).toThrow(
      /policy of account 999999999999; CloudFormation in account 888888888888 cannot use it\. Use an AWS managed policy or arn:aws:iam::\{account\}:policy\/<name>/,
    );
  });
});

describe('runBootstrap', () => {
  let cdk: FakeCdk;
  beforeEach(() => {
    cdk = fakeCdk();
  });
  afterEach(() => cdk.remove());

  const credentialsOf = (account: string): AccountCredentials => ({
    accessKeyId: `AKIA${account}`,
    secretAccessKey: `secret-${account}`,
    sessionToken: `token-${account}`,
  });
  const run = (argv: readonly string[], env: NodeJS.ProcessEnv) => {
    const result = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', env });
    return { status: result.status, output: `${result.stdout}${result.stderr}`, error: result.error?.message };
  };
  const environments = bootstrapEnvironments(FLEET, { executionPolicyArn: POLICY });

  it('runs every bootstrap with credentials of its own account and region, and no profile', async () => {
    const lines: string[] = [];
    await runBootstrap(environments, {
      launcher: cdk.launcher,
      // The caller is the tooling account itself: its own credentials there, an assumed role elsewhere.
      credentialsFor: async (account) => (account === FLEET.accounts.tooling ? undefined : credentialsOf(account)),
      run,
      baseEnv: { PATH: process.env.PATH, AWS_PROFILE: 'management', AWS_ACCESS_KEY_ID: 'AKIAMANAGEMENT' },
      progress: (line) => lines.push(line),
    });
    expect(cdk.calls().map((c) => [c.args[1], c.accessKeyId, c.sessionToken, c.profile, c.region])).toEqual([
      ['aws://999999999999/eu-west-1', 'AKIAMANAGEMENT', '', 'management', 'eu-west-1'],
      ['aws://888888888888/eu-west-1', 'AKIA888888888888', 'token-888888888888', '', 'eu-west-1'],
      ['aws://888888888888/us-east-1', 'AKIA888888888888', 'token-888888888888', '', 'us-east-1'],
      ['aws://111111111111/eu-west-1', 'AKIA111111111111', 'token-111111111111', '', 'eu-west-1'],
      ['aws://222222222222/us-east-1', 'AKIA222222222222', 'token-222222222222', '', 'us-east-1'],
    ]);
    // What is printed names the command, never the credentials.
    expect(lines.join('')).not.toMatch(/secret-|token-/);
    expect(lines[2]).toBe(
      `$ ${cdk.launcher.join(' ')} bootstrap aws://888888888888/eu-west-1 --trust 999999999999 --cloudformation-execution-policies ${POLICY} (as the assumed role)\n`,
    );
  });

  it('stops at the first failure naming the environment, and a second run resumes', async () => {
    const options = {
      launcher: cdk.launcher,
      credentialsFor: async (account: string) => credentialsOf(account),
      run,
      baseEnv: { PATH: process.env.PATH, FAKE_CDK_FAIL: 'aws://888888888888/us-east-1' },
    };
    await expect(runBootstrap(environments, options)).rejects.toThrow(
      'bootstrap of 888888888888/us-east-1 (router) failed with exit 3; fix it and run again',
    );
    expect(cdk.calls()).toHaveLength(3);
    await runBootstrap(environments, { ...options, baseEnv: { PATH: process.env.PATH } });
    expect(
      cdk
        .calls()
        .slice(3)
        .map((c) => c.args[1]),
    ).toEqual(environments.map((e) => `aws://${e.account}/${e.region}`));
  });

  it('stops before running anything for an account whose role cannot be assumed', async () => {
    const options = {
      launcher: cdk.launcher,
      run,
      baseEnv: {},
      credentialsFor: async (account: string) => {
        if (account === '111111111111') throw new Error('cannot assume arn:aws:iam::111111111111:role/OrganizationAccountAccessRole');
        return credentialsOf(account);
      },
    };
    await expect(runBootstrap(environments, options)).rejects.toThrow('bootstrap of 111111111111/eu-west-1 (cell a, cell c): cannot assume');
    expect(cdk.calls()).toHaveLength(3);
  });

  it("leaves the caller's own profile alone when it needs no role", () => {
    expect(bootstrapProcessEnv({ AWS_PROFILE: 'p' }, 'us-east-1', undefined)).toEqual({
      AWS_PROFILE: 'p',
      AWS_REGION: 'us-east-1',
      AWS_DEFAULT_REGION: 'us-east-1',
    });
  });
});

describe('the fake cdk', () => {
  it("does not depend on the user's shell start-up files", () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'home-'));
    fs.writeFileSync(path.join(home, '.bashrc'), 'echo polluted; export AWS_REGION=from-bashrc\n');
    fs.writeFileSync(path.join(home, 'bash_env'), 'echo polluted-by-bash-env\n');
    const cdk = fakeCdk();
    try {
      const result = spawnSync(cdk.launcher[0], [...cdk.launcher.slice(1), 'bootstrap', 'aws://1/r'], {
        encoding: 'utf8',
        env: { HOME: home, BASH_ENV: path.join(home, 'bash_env'), AWS_REGION: 'eu-west-1' },
      });
      expect([result.status, result.stdout]).toEqual([0, 'fake cdk bootstrap aws://1/r\n']);
      expect(cdk.calls()[0].region).toBe('eu-west-1');
    } finally {
      cdk.remove();
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});
