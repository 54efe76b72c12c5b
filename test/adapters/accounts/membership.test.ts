import { DescribeOrganizationCommand, ListAccountsCommand, OrganizationsClient } from '@aws-sdk/client-organizations';
import { mockClient } from 'aws-sdk-client-mock';
import { checkMembership, fleetAccounts, MembershipFleet } from '../../../lib/adapters/accounts';

const org = mockClient(OrganizationsClient);
const client = new OrganizationsClient({ region: 'us-east-1' });
const fleet: MembershipFleet = {
  accounts: { tooling: '111111111111', router: '222222222222' },
  cells: [
    { id: 'eu-1', account: '333333333330' },
    { id: 'us-1', account: '333333333331' },
  ],
  cellZero: { id: 'zero', account: '444444444444' },
  pipeline: { organizationId: 'o-a1b2c3d4e5' },
};
const member = (Id: string, State = 'ACTIVE') => ({ Id, State: State as 'ACTIVE' });
const check = (f: MembershipFleet = fleet) => checkMembership(client, f, { sleep: async () => undefined });

describe('checkMembership: every account of the fleet in the organization its grants are bounded by', () => {
  beforeEach(() => {
    org.reset();
    org.on(DescribeOrganizationCommand).resolves({ Organization: { Id: 'o-a1b2c3d4e5' } });
  });

  it('passes a fleet whose accounts are all active members, reading every page of the listing', async () => {
    org
      .on(ListAccountsCommand)
      .resolvesOnce({ Accounts: [member('111111111111'), member('222222222222')], NextToken: 'page-2' })
      .resolvesOnce({ Accounts: [member('333333333330'), member('333333333331'), member('444444444444')] });
    const report = await check();
    expect(report.problems).toEqual([]);
    expect(report.accounts.map((a) => [a.account, a.status, a.purposes.join(', ')])).toEqual([
      ['111111111111', 'ACTIVE', 'tooling'],
      ['222222222222', 'ACTIVE', 'router'],
      ['333333333330', 'ACTIVE', 'cell eu-1'],
      ['333333333331', 'ACTIVE', 'cell us-1'],
      ['444444444444', 'ACTIVE', 'cell zero'],
    ]);
    expect(org.commandCalls(ListAccountsCommand).map((c) => c.args[0].input.NextToken)).toEqual([undefined, 'page-2']);
  });

  it('refuses a cell zero outside the organization in one line, with the invitation that fixes it', async () => {
    org.on(ListAccountsCommand).resolves({ Accounts: ['111111111111', '222222222222', '333333333330', '333333333331'].map((id) => member(id)) });
    const { problems, accounts } = await check();
    expect(accounts.find((a) => a.account === '444444444444')!.status).toBe('absent');
    expect(problems).toEqual([
      'cell zero account 444444444444 is not in organization o-a1b2c3d4e5, whose bounds every cross-account grant of the fleet carries: invite it (aws organizations invite-account-to-organization --target Id=444444444444,Type=ACCOUNT) and accept the invitation in that account, or use an account of the organization',
    ]);
  });

  it('refuses a suspended member, and an organization other than the one pipeline.organizationId names', async () => {
    org.on(DescribeOrganizationCommand).resolves({ Organization: { Id: 'o-zzzzzzzzzz' } });
    org.on(ListAccountsCommand).resolves({
      Accounts: [member('111111111111'), member('222222222222'), member('333333333330', 'SUSPENDED'), member('333333333331'), member('444444444444')],
    });
    expect((await check()).problems).toEqual([
      "pipeline.organizationId is o-a1b2c3d4e5, but these credentials are of organization o-zzzzzzzzzz's management account: set pipeline.organizationId to o-zzzzzzzzzz, or run with the management account of o-a1b2c3d4e5",
      'cell eu-1 account 333333333330 is SUSPENDED in organization o-zzzzzzzzzz: nothing deploys to it; give the fleet an active account instead',
    ]);
  });

  it('lists an account once with every purpose it serves', () => {
    const shared = { ...fleet, accounts: { tooling: '111111111111', router: '111111111111' }, cellZero: undefined };
    expect(fleetAccounts(shared)[0]).toEqual({ account: '111111111111', purposes: ['tooling', 'router'] });
  });
});
