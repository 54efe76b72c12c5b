import { DescribeOrganizationCommand, ListAccountsCommand, OrganizationsClient } from '@aws-sdk/client-organizations';
import { withRetry } from './retry';

/** The accounts of a fleet, as the membership check reads them. */
export interface MembershipFleet {
  readonly accounts: { readonly tooling: string; readonly router: string };
  readonly cells: readonly { readonly id: string; readonly account: string }[];
  readonly cellZero?: { readonly id: string; readonly account: string };
  /** `pipeline.organizationId`: the organization every cross-account grant is bounded by. */
  readonly pipeline?: { readonly organizationId?: string };
}

/** One account of the fleet and what the organization says of it. */
export interface AccountMembership {
  readonly account: string;
  /** What the fleet uses it for: `tooling`, `router`, `cell eu-1`, `cell zero`. */
  readonly purposes: readonly string[];
  /** Its status in the organization (`ACTIVE`, `SUSPENDED`, `PENDING_CLOSURE`), or `absent`. */
  readonly status: string;
}

export interface MembershipReport {
  /** The organization of the credentials' management account. */
  readonly organizationId: string;
  readonly accounts: readonly AccountMembership[];
  /** One line each: what is wrong and how to fix it. Empty when every account is an active member. */
  readonly problems: readonly string[];
}

/** Every account the fleet deploys to, with its purposes, tooling first and cell zero last. */
export function fleetAccounts(fleet: MembershipFleet): { account: string; purposes: string[] }[] {
  const byAccount = new Map<string, string[]>();
  const add = (account: string, purpose: string) => byAccount.set(account, [...(byAccount.get(account) ?? []), purpose]);
  add(fleet.accounts.tooling, 'tooling');
  add(fleet.accounts.router, 'router');
  for (const cell of fleet.cells) add(cell.account, `cell ${cell.id}`);
  if (fleet.cellZero) add(fleet.cellZero.account, fleet.cellZero.id === 'zero' ? 'cell zero' : `cell zero ${fleet.cellZero.id}`);
  return [...byAccount.entries()].map(([account, purposes]) => ({ account, purposes }));
}

/**
 * Checks, from the organization's management account, that every account of the fleet is an active
 * member of it, and that it is the organization `pipeline.organizationId` names. The fleet's
 * cross-account grants are bounded by that organization (`aws:PrincipalOrgID`, `aws:ResourceOrgID`;
 * docs/limits.md), so an account outside it deploys and then cannot be reached: a cell zero outside
 * the organization leaves the routers unable to read its endpoint service name, and its movers
 * unable to reach the move bucket. `accounts bootstrap --run` also assumes `organization.roleName`
 * in each account, which only an account of the organization has.
 */
export async function checkMembership(
  org: OrganizationsClient,
  fleet: MembershipFleet,
  options: { readonly sleep: (ms: number) => Promise<void>; readonly progress?: (line: string) => void },
): Promise<MembershipReport> {
  const retry = <T>(action: string, run: () => Promise<T>) => withRetry(action, run, options);
  const { Organization } = await retry('DescribeOrganization', () => org.send(new DescribeOrganizationCommand({})));
  const organizationId = Organization?.Id ?? 'unknown';
  const status = new Map<string, string>();
  let token: string | undefined;
  do {
    const page = await retry('ListAccounts', () => org.send(new ListAccountsCommand({ NextToken: token })));
    for (const a of page.Accounts ?? []) if (a.Id) status.set(a.Id, String(a.State ?? a.Status ?? 'ACTIVE'));
    token = page.NextToken;
  } while (token);

  const problems: string[] = [];
  const declared = fleet.pipeline?.organizationId;
  if (declared && declared !== organizationId)
    problems.push(
      `pipeline.organizationId is ${declared}, but these credentials are of organization ${organizationId}'s management account: set pipeline.organizationId to ${organizationId}, or run with the management account of ${declared}`,
    );
  const accounts = fleetAccounts(fleet).map(({ account, purposes }) => ({ account, purposes, status: status.get(account) ?? 'absent' }));
  for (const a of accounts) {
    const what = `${a.purposes.join(', ')} account ${a.account}`;
    if (a.status === 'absent')
      problems.push(
        `${what} is not in organization ${organizationId}, whose bounds every cross-account grant of the fleet carries: invite it (aws organizations invite-account-to-organization --target Id=${a.account},Type=ACCOUNT) and accept the invitation in that account, or use an account of the organization`,
      );
    else if (a.status !== 'ACTIVE')
      problems.push(`${what} is ${a.status} in organization ${organizationId}: nothing deploys to it; give the fleet an active account instead`);
  }
  return { organizationId, accounts, problems };
}
