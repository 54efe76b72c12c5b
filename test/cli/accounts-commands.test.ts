import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import {
  CreateAccountCommand,
  DescribeCreateAccountStatusCommand,
  DescribeOrganizationCommand,
  ListAccountsCommand,
  ListParentsCommand,
  MoveAccountCommand,
  OrganizationsClient,
} from '@aws-sdk/client-organizations';
import { AssumeRoleCommand, GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { mockClient } from 'aws-sdk-client-mock';
import { cellctl } from '../support/cli';
import { loadFleet, readAccountsFile } from '../../lib/domain/fleet';
import { fakeCdk, FakeCdk } from '../support/fake-cdk';
import { configDir, configDirs, REPO_ROOT, shippedConfigText } from '../support/fleet';
import { CELL_ZERO_ACCOUNT, withCellZero } from '../support/cell-zero';

const org = mockClient(OrganizationsClient);
/** The sample config's accounts and the real-ids test's, members of the organization. */
const MEMBERS = [
  '111111111111',
  '222222222222',
  '480523961127',
  '480523961128',
  ...Array.from({ length: 8 }, (_, i) => [`33333333333${i}`, `48052396114${i}`]).flat(),
];

/** A project directory with the shipped config and no cells.accounts.json. */
function project(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'accounts-'));
  const config = shippedConfigText();
  fs.writeFileSync(path.join(dir, 'cells.config.ts'), config);
  return dir;
}

describe('cellctl accounts', () => {
  beforeEach(() => {
    org.reset();
    org.on(ListAccountsCommand).resolves({ Accounts: [] });
    org.on(ListParentsCommand).resolves({ Parents: [{ Id: 'r-ab12', Type: 'ROOT' }] });
    org.on(MoveAccountCommand).resolves({});
  });

  it('deleting cells.accounts.json and running ensure vends every cell, after which synth config loads', async () => {
    const dir = project();
    const config = path.join(dir, 'cells.config.ts');
    expect(() => loadFleet(config)).toThrow(/no account; run `cellctl accounts ensure`/);
    let n = 0;
    org.on(CreateAccountCommand).callsFake(async () => ({ CreateAccountStatus: { Id: `car-${++n}`, State: 'IN_PROGRESS' } }));
    org.on(DescribeCreateAccountStatusCommand).callsFake(async (input: { CreateAccountRequestId: string }) => ({
      CreateAccountStatus: {
        Id: input.CreateAccountRequestId,
        State: 'SUCCEEDED',
        AccountId: String(700000000000 + Number(input.CreateAccountRequestId.slice(4))),
      },
    }));
    const dry = await cellctl('accounts', 'ensure', '--config', config, '--dry-run', '--json');
    expect(JSON.parse(dry.out).map((r: { action: string }) => r.action)).toEqual(Array(8).fill('would-create'));
    expect(fs.existsSync(path.join(dir, 'cells.accounts.json'))).toBe(false);

    const result = await cellctl('accounts', 'ensure', '--config', config);
    expect([result.code, result.err.includes('CreateAccount orders-canary-eu <aws+orders-canary-eu@example.com>')]).toEqual([0, true]);
    const fleet = loadFleet(config);
    expect(fleet.cells.map((c) => c.account)).toEqual(Array.from({ length: 8 }, (_, i) => String(700000000001 + i)));
    expect(readAccountsFile(path.join(dir, 'cells.accounts.json')).cells['eu-1']).toMatchObject({
      status: 'ACTIVE',
      organizationalUnit: 'ou-ab12-cells001',
    });

    // Progress on stderr, one line per cell as it finishes: where the run is.
    expect(result.err.split('\n').filter((l) => l.startsWith('['))).toEqual(
      Array.from({ length: 8 }, (_, i) => `[${i + 1}/8] ${fleet.cells[i].id}: created ${700000000001 + i}`),
    );
    const again = await cellctl('accounts', 'ensure', '--config', config, '--json');
    expect(JSON.parse(again.out).every((r: { action: string }) => r.action === 'existing')).toBe(true);
    expect(again.err).toContain('[8/8] us-4: existing 700000000008');
    expect(org.commandCalls(CreateAccountCommand)).toHaveLength(8);
  });

  it('exits 1 naming the failed cells when a creation fails', async () => {
    const dir = project();
    org.on(CreateAccountCommand).resolves({ CreateAccountStatus: { Id: 'car-x', State: 'IN_PROGRESS' } });
    org
      .on(DescribeCreateAccountStatusCommand)
      .resolves({ CreateAccountStatus: { Id: 'car-x', State: 'FAILED', FailureReason: 'ACCOUNT_LIMIT_EXCEEDED' } });
    const result = await cellctl('accounts', 'ensure', '--config', path.join(dir, 'cells.config.ts'));
    expect(result.code).toBe(1);
    expect(result.out).toMatch(/eu-1\s+failed\s+-\s+ACCOUNT_LIMIT_EXCEEDED: the organization has reached its account quota/);
    expect(result.err).toContain('8 cell(s) failed');
  });

  it('lists cell, account, OU and status', async () => {
    const result = await cellctl('accounts', 'list', '--config', path.join(REPO_ROOT, 'cells.config.ts'), '--json');
    expect(JSON.parse(result.out)[0]).toEqual({
      cell: 'canary-eu',
      account: '333333333330',
      organizationalUnit: 'ou-ab12-cells001',
      status: 'ACTIVE',
    });
    const missing = await cellctl('accounts', 'list', '--config', path.join(project(), 'cells.config.ts'));
    expect(missing.out).toMatch(/eu-1\s+-\s+-\s+MISSING/);
  });

  it('prints one cdk bootstrap per account and region the fleet deploys to: tooling, routers, cells', async () => {
    const config = path.join(REPO_ROOT, 'cells.config.ts');
    const printed = await cellctl('accounts', 'bootstrap', '--config', config);
    const lines = printed.out.trim().split('\n');
    expect(lines).toHaveLength(11);
    expect(lines.slice(0, 3)).toEqual([
      'npx cdk bootstrap aws://111111111111/eu-west-1 --cloudformation-execution-policies arn:aws:iam::aws:policy/AdministratorAccess    # tooling',
      'npx cdk bootstrap aws://222222222222/eu-west-1 --trust 111111111111 --cloudformation-execution-policies arn:aws:iam::aws:policy/AdministratorAccess    # router',
      'npx cdk bootstrap aws://222222222222/us-east-1 --trust 111111111111 --cloudformation-execution-policies arn:aws:iam::aws:policy/AdministratorAccess    # router',
    ]);
    expect(printed.out).toContain('npx cdk bootstrap aws://333333333334/us-east-1 --trust 111111111111');
    // The commands still print (they are what to run), with a note that these accounts are examples.
    expect(printed.err).toMatch(
      /^note: 10 of these accounts are examples from the sample config: 111111111111 \(tooling\), 222222222222 \(router\), 8 cell accounts \(333333333330 … 333333333337\); put your tooling and router account ids in /,
    );
  });

  const dirs = configDirs();
  it("prints cell zero's account and region too (its adoption stack deploys there)", async () => {
    const dir = dirs.config(withCellZero);
    const printed = await cellctl('accounts', 'bootstrap', '--config', path.join(dir, 'cells.config.ts'));
    const lines = printed.out.trim().split('\n');
    expect(lines).toHaveLength(12);
    expect(lines.at(-1)).toBe(
      `npx cdk bootstrap aws://${CELL_ZERO_ACCOUNT}/eu-west-1 --trust 111111111111 --cloudformation-execution-policies arn:aws:iam::aws:policy/AdministratorAccess    # cell zero`,
    );
  });

  describe('check', () => {
    beforeEach(() => {
      org.on(DescribeOrganizationCommand).resolves({ Organization: { Id: 'o-a1b2c3d4e5' } });
      org.on(ListAccountsCommand).resolves({ Accounts: MEMBERS.map((Id) => ({ Id, State: 'ACTIVE' })) });
    });

    it("lists every account of the fleet with its status and purposes, and passes when all are the organization's", async () => {
      const ran = await cellctl('accounts', 'check', '--config', path.join(REPO_ROOT, 'cells.config.ts'));
      expect(ran).toMatchObject({ code: 0, err: '' });
      const lines = ran.out.trim().split('\n');
      expect(lines).toHaveLength(1 + 10);
      expect(lines[1]).toMatch(/^111111111111\s+ACTIVE\s+tooling$/);
      expect(ran.out).toMatch(/333333333337\s+ACTIVE\s+cell \S+/);
    });

    it('exits 1 with one line per problem; --json reports the same', async () => {
      const dir = configDir(withCellZero);
      try {
        const ran = await cellctl('accounts', 'check', '--config', path.join(dir, 'cells.config.ts'), '--json');
        expect(ran.code).toBe(1);
        const report = JSON.parse(ran.out);
        expect(report.organizationId).toBe('o-a1b2c3d4e5');
        expect(report.accounts.find((a: { account: string }) => a.account === CELL_ZERO_ACCOUNT)).toEqual({
          account: CELL_ZERO_ACCOUNT,
          purposes: ['cell zero'],
          status: 'absent',
        });
        expect(ran.err.trim().split('\n')).toEqual([
          expect.stringMatching(new RegExp(`^cell zero account ${CELL_ZERO_ACCOUNT} is not in organization o-a1b2c3d4e5`)),
          "error: 1 problem(s) with the fleet's accounts in organization o-a1b2c3d4e5",
        ]);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it("says whose credentials it needs when the caller's account is in no organization", async () => {
      org.on(DescribeOrganizationCommand).rejects(Object.assign(new Error('not in use'), { name: 'AWSOrganizationsNotInUseException' }));
      const ran = await cellctl('accounts', 'check', '--config', path.join(REPO_ROOT, 'cells.config.ts'));
      expect(ran.code).toBe(1);
      expect(ran.err.trim()).toBe(
        "error: these credentials' account is in no organization (AWSOrganizationsNotInUseException); run with the management account of the fleet's organization",
      );
    });
  });

  describe('--run', () => {
    const sts = mockClient(STSClient);
    let cdk: FakeCdk;
    beforeEach(() => {
      cdk = fakeCdk();
      // Every account of the sample config and of the real-ids test is an active member.
      org.on(DescribeOrganizationCommand).resolves({ Organization: { Id: 'o-a1b2c3d4e5' } });
      org.on(ListAccountsCommand).resolves({ Accounts: MEMBERS.map((Id) => ({ Id, State: 'ACTIVE' })) });
      sts.reset();
      sts.on(GetCallerIdentityCommand).resolves({ Account: '100000000000', Arn: 'arn:aws:sts::100000000000:assumed-role/Admin/operator' });
      sts.on(AssumeRoleCommand).callsFake(async (input: { RoleArn: string }) => {
        const account = input.RoleArn.split(':')[4];
        return { Credentials: { AccessKeyId: `ASIA${account}`, SecretAccessKey: 'x', SessionToken: `token-${account}`, Expiration: new Date() } };
      });
    });
    afterEach(() => cdk.remove());

    it('refuses the example account ids of the sample config, saying what to change, before calling AWS or cdk', async () => {
      const ran = await cellctl(
        'accounts',
        'bootstrap',
        '--config',
        path.join(REPO_ROOT, 'cells.config.ts'),
        '--run',
        '--cdk',
        cdk.launcher.join(' '),
      );
      expect(ran.code).toBe(1);
      expect(ran.out).toBe('');
      expect(ran.err.trim().split('\n')).toHaveLength(1);
      expect(ran.err).toContain(
        'error: refusing to bootstrap the example account ids of the sample config: 111111111111 (tooling), 222222222222 (router), 8 cell accounts (333333333330 … 333333333337); put your tooling and router account ids in ',
      );
      expect(ran.err).toContain(
        '(`accounts.tooling`, `accounts.router`) and vend the cell accounts with `cellctl accounts ensure` (remove the shipped cells.accounts.json first); if these really are your accounts, add --allow-example-accounts',
      );
      expect(sts.commandCalls(GetCallerIdentityCommand)).toHaveLength(0);
      expect(cdk.calls()).toHaveLength(0);
    });

    it('runs for real account ids without the override', async () => {
      const dir = project();
      const config = path.join(dir, 'cells.config.ts');
      fs.writeFileSync(
        config,
        fs
          .readFileSync(config, 'utf8')
          .replace("tooling: '111111111111'", "tooling: '480523961127'")
          .replace("router: '222222222222'", "router: '480523961128'"),
      );
      const cells = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'cells.accounts.json'), 'utf8'));
      Object.values(cells.cells).forEach((c, i) => {
        (c as { accountId: string }).accountId = `48052396114${i}`;
      });
      fs.writeFileSync(path.join(dir, 'cells.accounts.json'), JSON.stringify(cells));
      try {
        const ran = await cellctl('accounts', 'bootstrap', '--config', config, '--run', '--cdk', cdk.launcher.join(' '));
        expect(ran).toMatchObject({ code: 0, out: 'bootstrapped 11 environment(s)\n' });
        expect(ran.err).not.toContain('example');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it("runs each bootstrap as organization.roleName in its own account (the CDK CLI refuses another account's credentials)", async () => {
      const ran = await cellctl(
        'accounts',
        'bootstrap',
        '--config',
        path.join(REPO_ROOT, 'cells.config.ts'),
        '--run',
        '--allow-example-accounts',
        '--cdk',
        cdk.launcher.join(' '),
      );
      expect(ran).toMatchObject({ code: 0, out: 'bootstrapped 11 environment(s)\n' });
      const calls = cdk.calls();
      expect(calls).toHaveLength(11);
      for (const call of calls) {
        const account = /^aws:\/\/(\d{12})\//.exec(call.args[1])![1];
        expect([call.accessKeyId, call.sessionToken, call.profile, call.region]).toEqual([
          `ASIA${account}`,
          `token-${account}`,
          '',
          call.args[1].split('/')[3],
        ]);
      }
      expect(sts.commandCalls(AssumeRoleCommand).map((c) => c.args[0].input.RoleArn)).toContain(
        'arn:aws:iam::222222222222:role/OrganizationAccountAccessRole',
      );
      expect(ran.err).not.toContain('token-');
    });

    it('stops naming the environment and the role when a role cannot be assumed', async () => {
      sts
        .on(AssumeRoleCommand, { RoleArn: 'arn:aws:iam::222222222222:role/OrganizationAccountAccessRole' })
        .rejects(Object.assign(new Error('User is not authorized to perform: sts:AssumeRole'), { name: 'AccessDenied' }));
      const ran = await cellctl(
        'accounts',
        'bootstrap',
        '--config',
        path.join(REPO_ROOT, 'cells.config.ts'),
        '--run',
        '--allow-example-accounts',
        '--cdk',
        cdk.launcher.join(' '),
      );
      expect(ran.code).toBe(1);
      expect(ran.err).toContain(
        'bootstrap of 222222222222/eu-west-1 (router): cannot assume arn:aws:iam::222222222222:role/OrganizationAccountAccessRole as arn:aws:sts::100000000000:assumed-role/Admin/operator (AccessDenied',
      );
      expect(cdk.calls()).toHaveLength(1);
    });

    it("refuses, before bootstrapping anything, a fleet whose cell zero's account is outside the organization", async () => {
      const dir = configDir(withCellZero);
      try {
        const ran = await cellctl(
          'accounts',
          'bootstrap',
          '--config',
          path.join(dir, 'cells.config.ts'),
          '--run',
          '--allow-example-accounts',
          '--cdk',
          cdk.launcher.join(' '),
        );
        expect(ran.code).toBe(1);
        expect(ran.err.trim().split('\n')).toHaveLength(1);
        expect(ran.err).toContain(
          `error: nothing bootstrapped: cell zero account ${CELL_ZERO_ACCOUNT} is not in organization o-a1b2c3d4e5, whose bounds every cross-account grant of the fleet carries: invite it (aws organizations invite-account-to-organization --target Id=${CELL_ZERO_ACCOUNT},Type=ACCOUNT)`,
        );
        expect(cdk.calls()).toHaveLength(0);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('says which credentials to configure when it cannot tell who the caller is', async () => {
      sts
        .on(GetCallerIdentityCommand)
        .rejects(Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' }));
      const ran = await cellctl(
        'accounts',
        'bootstrap',
        '--config',
        path.join(REPO_ROOT, 'cells.config.ts'),
        '--run',
        '--allow-example-accounts',
        '--cdk',
        cdk.launcher.join(' '),
      );
      expect(ran.code).toBe(1);
      expect(ran.err).toMatch(
        /cannot tell which account you are in \(STS GetCallerIdentity: CredentialsProviderError.*configure credentials of the organization's management account/,
      );
      expect(cdk.calls()).toHaveLength(0);
    });
  });
});
