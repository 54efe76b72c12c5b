import { AssumeRoleCommand, GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { AccountCredentials } from './bootstrap';

/**
 * Credentials for each account of the organization, by assuming `roleName` there (the role
 * Organizations creates in every account it vends, `OrganizationAccountAccessRole` by default,
 * trusted by the management account). The caller's own account needs no role: undefined means
 * "use the caller's credentials".
 */
export async function organizationRoleCredentials(
  sts: STSClient,
  roleName: string,
): Promise<(account: string) => Promise<AccountCredentials | undefined>> {
  const caller = await sts.send(new GetCallerIdentityCommand({}));
  const partition = caller.Arn?.split(':')[1] ?? 'aws';
  return async (account) => {
    if (account === caller.Account) return undefined;
    const roleArn = `arn:${partition}:iam::${account}:role/${roleName}`;
    let answer;
    try {
      answer = await sts.send(new AssumeRoleCommand({ RoleArn: roleArn, RoleSessionName: `cellctl-bootstrap-${account}` }));
    } catch (error) {
      throw new Error(
        `cannot assume ${roleArn} as ${caller.Arn} (${(error as Error).name}: ${(error as Error).message}); run from the organization's management account, or set organization.roleName to a role in every account that ${caller.Arn} may assume`,
      );
    }
    const c = answer.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken) throw new Error(`AssumeRole ${roleArn} returned no credentials`);
    return { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.SessionToken };
  };
}
