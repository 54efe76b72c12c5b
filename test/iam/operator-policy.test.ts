import * as fs from 'fs';
import * as path from 'path';
import { operatorPolicy } from '../../lib/adapters/accounts';
import { runCli } from '../../lib/cli';
import { REPO_ROOT } from '../support/fleet';
import { outsider, PolicyWorld } from '../support/iam';

const MANAGEMENT = '100000000000';
const ORG_ACCOUNT = (id: string) => `arn:aws:organizations::${MANAGEMENT}:account/o-abc123defg/${id}`;
const ROLE = 'OrganizationAccountAccessRole';

/**
 * The AWS calls account vending and bootstrap make, read from their source: every `new XCommand(`
 * with the service its client comes from. A new call in the code is checked here without editing
 * this test.
 */
function callsInSource(...files: string[]): string[] {
  const calls = new Set<string>();
  for (const file of files) {
    const text = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
    const services = new Map<string, string>();
    for (const [, names, client] of text.matchAll(/import \{([^}]+)\} from '@aws-sdk\/client-([a-z0-9-]+)'/g)) {
      for (const name of names.split(',').map((n) => n.trim())) services.set(name, client);
    }
    for (const [, command] of text.matchAll(/new (\w+)Command\(/g)) calls.add(`${services.get(`${command}Command`)}:${command}`);
  }
  return [...calls].sort();
}

describe('IAM: the management account operator policy (cellctl accounts ensure, check, bootstrap --run)', () => {
  const world = new PolicyWorld([]);
  const operator = outsider(`arn:aws:iam::${MANAGEMENT}:role/cell-operator`, operatorPolicy({ roleName: ROLE }).Statement);
  // A sample resource per call (actions without resource types take `*`).
  const sample: Record<string, { resource: string; context?: Record<string, string | string[]> }> = {
    'organizations:ListAccounts': { resource: '*' },
    'organizations:DescribeOrganization': { resource: '*' },
    'organizations:CreateAccount': {
      resource: '*',
      context: { 'aws:TagKeys': ['cell', 'app'], 'aws:RequestTag/cell': 'eu-1', 'aws:RequestTag/app': 'orders' },
    },
    'organizations:DescribeCreateAccountStatus': { resource: '*' },
    'organizations:ListParents': { resource: ORG_ACCOUNT('333333333330') },
    'organizations:MoveAccount': { resource: ORG_ACCOUNT('333333333330') },
    'sts:AssumeRole': { resource: `arn:aws:iam::333333333330:role/${ROLE}` },
  };
  // The trust of the role Organizations creates in every account it vends: the management account.
  const organizationRoleTrust = {
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${MANAGEMENT}:root` }, Action: 'sts:AssumeRole' }],
  };
  const trustOf = (action: string) => (action === 'sts:AssumeRole' ? organizationRoleTrust : undefined);

  it('allows every call the vending and bootstrap code makes', async () => {
    const calls = callsInSource('lib/adapters/accounts/vend.ts', 'lib/adapters/accounts/assume-role.ts', 'lib/adapters/accounts/membership.ts')
      // GetCallerIdentity needs no permission (STS API reference).
      .filter((c) => c !== 'sts:GetCallerIdentity');
    expect(calls).toEqual(Object.keys(sample).sort());
    const decisions = await Promise.all(
      calls.map(
        async (call) =>
          `${call} ${await world.decide(operator, call, sample[call].resource, sample[call].context as Record<string, string>, trustOf(call))}`,
      ),
    );
    expect(decisions).toEqual(calls.map((c) => `${c} Allowed`));
  });

  it('denies the destructive neighbours: closing or removing accounts, other tags, other roles, anything in IAM', async () => {
    const denied: [string, string, Record<string, string | string[]>?][] = [
      ['organizations:CloseAccount', ORG_ACCOUNT('333333333330')],
      ['organizations:RemoveAccountFromOrganization', ORG_ACCOUNT('333333333330')],
      ['organizations:DeleteOrganizationalUnit', `arn:aws:organizations::${MANAGEMENT}:ou/o-abc123defg/ou-ab12-cells001`],
      ['organizations:CreateAccount', '*', { 'aws:TagKeys': ['cell', 'owner'] }],
      ['organizations:TagResource', ORG_ACCOUNT('333333333330'), { 'aws:TagKeys': ['cost-center'] }],
      ['sts:AssumeRole', 'arn:aws:iam::333333333330:role/cdk-hnb659fds-cfn-exec-role-333333333330-eu-west-1'],
      ['iam:CreateRole', `arn:aws:iam::${MANAGEMENT}:role/anything`],
    ];
    const decisions = await Promise.all(
      denied.map(
        async ([action, resource, context]) =>
          `${action} ${await world.decide(operator, action, resource, context as Record<string, string>, trustOf(action))}`,
      ),
    );
    expect(decisions.filter((d) => d.endsWith(' Allowed'))).toEqual([]);
  });

  it('is printed by cellctl accounts policy with the configured role name', async () => {
    let out = '';
    const code = await runCli(['accounts', 'policy', '--config', path.join(REPO_ROOT, 'cells.config.ts')], {
      out: (s) => {
        out += s;
      },
      err: () => undefined,
    });
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual(operatorPolicy({ roleName: ROLE }));
  });
});
