import {
  CreateOrganizationalUnitCommand,
  CreateOrganizationCommand,
  DescribeAccountCommand,
  DescribeOrganizationCommand,
  ListParentsCommand,
  ListRootsCommand,
  OrganizationsClient,
} from '@aws-sdk/client-organizations';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { bootstrapEnvironments, checkMembership, ensureAccounts, organizationRoleCredentials, VendOptions } from '../../../lib/adapters/accounts';
import { AccountsFile } from '../../../lib/domain/fleet';
import { Moto, MOTO_ACCOUNT, motoClientConfig, startMoto } from '../../support/moto';

/**
 * `cellctl accounts` against moto's Organizations and STS, an implementation written apart from the
 * aws-sdk-client-mock answers of test/adapters/accounts/vend.test.ts: accounts vended into the OU and
 * recorded, a re-run that changes nothing, an account adopted by its email, and the bootstrap plan's
 * credentials, one assumed role per vended account, each acting in that account.
 */
describe('cellctl accounts against moto (Organizations, STS)', () => {
  let moto: Moto;
  let org: OrganizationsClient;
  let sts: STSClient;
  let ou: string;
  let root: string;
  beforeAll(async () => {
    moto = await startMoto();
    org = new OrganizationsClient(motoClientConfig(moto));
    sts = new STSClient(motoClientConfig(moto));
    await org.send(new CreateOrganizationCommand({ FeatureSet: 'ALL' }));
    root = (await org.send(new ListRootsCommand({}))).Roots![0].Id!;
    ou = (await org.send(new CreateOrganizationalUnitCommand({ ParentId: root, Name: 'cells' }))).OrganizationalUnit!.Id!;
  });
  afterAll(async () => {
    org?.destroy();
    sts?.destroy();
    await moto?.stop();
  });

  let file: AccountsFile = { schemaVersion: 1, cells: {} };
  const options = (extra: Partial<VendOptions> = {}): VendOptions => ({
    app: 'orders',
    organizationalUnitId: ou,
    roleName: 'OrganizationAccountAccessRole',
    pollDelayMs: 10,
    sleep: async () => undefined,
    file: {
      read: () => file,
      write: (next) => {
        file = JSON.parse(JSON.stringify(next));
      },
    },
    ...extra,
  });
  const targets = ['eu-1', 'us-1'].map((cell) => ({ cell, accountName: `orders-${cell}`, email: `aws+orders-${cell}@example.com` }));

  it('creates one account per cell, polls the request to SUCCEEDED, moves each into the OU and records it', async () => {
    const results = await ensureAccounts(org, targets, options());
    expect(results.map((r) => [r.cell, r.action])).toEqual([
      ['eu-1', 'created'],
      ['us-1', 'created'],
    ]);
    for (const r of results) {
      expect(r.accountId).toMatch(/^\d{12}$/);
      expect(file.cells[r.cell]).toMatchObject({ accountId: r.accountId, status: 'ACTIVE' });
      const { Parents } = await org.send(new ListParentsCommand({ ChildId: r.accountId! }));
      expect(Parents).toEqual([{ Id: ou, Type: 'ORGANIZATIONAL_UNIT' }]);
      const { Account } = await org.send(new DescribeAccountCommand({ AccountId: r.accountId! }));
      expect(Account).toMatchObject({ Name: `orders-${r.cell}`, Email: `aws+orders-${r.cell}@example.com` });
    }
    expect(new Set(results.map((r) => r.accountId)).size).toBe(2);
  });

  it('changes nothing on a re-run, and adopts an account it finds by email after the file was lost', async () => {
    const before = JSON.parse(JSON.stringify(file)) as AccountsFile;
    expect((await ensureAccounts(org, targets, options())).map((r) => r.action)).toEqual(['existing', 'existing']);
    file = { schemaVersion: 1, cells: {} };
    const dry = await ensureAccounts(org, targets, options({ dryRun: true }));
    expect(dry.map((r) => [r.action, r.accountId])).toEqual(targets.map((t) => ['would-adopt', before.cells[t.cell].accountId]));
    expect(file.cells).toEqual({});
    const adopted = await ensureAccounts(org, targets, options());
    expect(adopted.map((r) => [r.action, r.accountId])).toEqual(targets.map((t) => ['adopted', before.cells[t.cell].accountId]));
  });

  it('plans one bootstrap per account and region, and reaches each vended account through its organization role', async () => {
    const accounts = Object.fromEntries(Object.entries(file.cells).map(([cell, c]) => [cell, c.accountId!]));
    const plan = bootstrapEnvironments(
      {
        accounts: { tooling: MOTO_ACCOUNT, router: '222222222222' },
        regions: { 'eu-west-1': {}, 'us-east-1': {} },
        pipeline: { region: 'eu-west-1' },
        cells: [
          { id: 'eu-1', account: accounts['eu-1'], region: 'eu-west-1' },
          { id: 'us-1', account: accounts['us-1'], region: 'us-east-1' },
        ],
      } as unknown as Parameters<typeof bootstrapEnvironments>[0],
      { executionPolicyArn: 'arn:aws:iam::aws:policy/AdministratorAccess' },
    );
    expect(plan.map((e) => `${e.account}/${e.region}`)).toEqual([
      `${MOTO_ACCOUNT}/eu-west-1`,
      '222222222222/eu-west-1',
      '222222222222/us-east-1',
      `${accounts['eu-1']}/eu-west-1`,
      `${accounts['us-1']}/us-east-1`,
    ]);
    const credentialsFor = await organizationRoleCredentials(sts, 'OrganizationAccountAccessRole');
    // The management account (the caller) uses its own credentials.
    expect(await credentialsFor(MOTO_ACCOUNT)).toBeUndefined();
    for (const account of Object.values(accounts)) {
      const credentials = (await credentialsFor(account))!;
      const inside = new STSClient({ ...motoClientConfig(moto), credentials });
      const identity = await inside.send(new GetCallerIdentityCommand({}));
      inside.destroy();
      expect(identity.Account).toBe(account);
      expect(identity.Arn).toBe(`arn:aws:sts::${account}:assumed-role/OrganizationAccountAccessRole/cellctl-bootstrap-${account}`);
    }
  });
  it('finds the vended accounts and the management account in the organization, and a cell zero outside it, in one line', async () => {
    const accounts = Object.fromEntries(Object.entries(file.cells).map(([cell, c]) => [cell, c.accountId!]));
    const { Organization } = await org.send(new DescribeOrganizationCommand({}));
    const fleet = {
      accounts: { tooling: MOTO_ACCOUNT, router: accounts['eu-1'] },
      cells: Object.entries(accounts).map(([id, account]) => ({ id, account })),
      cellZero: { id: 'zero', account: '999999999999' },
      pipeline: { organizationId: Organization!.Id },
    };
    const report = await checkMembership(org, fleet, { sleep: async () => undefined });
    expect(report.organizationId).toBe(Organization!.Id);
    expect(report.accounts.map((a) => [a.purposes.join(', '), a.status])).toEqual([
      ['tooling', 'ACTIVE'],
      ['router, cell eu-1', 'ACTIVE'],
      ['cell us-1', 'ACTIVE'],
      ['cell zero', 'absent'],
    ]);
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toMatch(/^cell zero account 999999999999 is not in organization o-\w+, /);
    const member = await checkMembership(org, { ...fleet, cellZero: { id: 'zero', account: accounts['us-1'] } }, { sleep: async () => undefined });
    expect(member.problems).toEqual([]);
  });
});
