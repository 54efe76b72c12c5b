/**
 * The identity policy `cellctl accounts ensure` and `cellctl accounts bootstrap --run` need in the
 * organization's management account, and nothing more: the Organizations calls of account vending
 * (lib/adapters/accounts/vend.ts), the membership check (membership.ts) and assuming `organization.roleName` in each
 * account (lib/adapters/accounts/assume-role.ts).
 * test/iam checks every call the code makes against it, and that destructive neighbours are denied.
 */
export interface OperatorPolicyOptions {
  /** `organization.roleName`, assumed in every account for its bootstrap. */
  readonly roleName: string;
  /** The fleet's partition (`fleet.partition`). @default 'aws' */
  readonly partition?: string;
}

/** IAM tag keys `ensure` puts on every account it creates. */
export const ACCOUNT_TAG_KEYS = ['cell', 'app'] as const;

export function operatorPolicy(options: OperatorPolicyOptions) {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'FindAndPlaceAccounts',
        Effect: 'Allow',
        // Organizations' list and describe calls, and MoveAccount, take no narrower resource that is
        // known before the account exists.
        Action: [
          'organizations:DescribeOrganization',
          'organizations:ListAccounts',
          'organizations:DescribeCreateAccountStatus',
          'organizations:ListParents',
          'organizations:MoveAccount',
        ],
        Resource: '*',
      },
      {
        Sid: 'CreateTaggedAccounts',
        Effect: 'Allow',
        // CreateAccount carries the cell and app tags; only those tag keys may be set.
        Action: ['organizations:CreateAccount', 'organizations:TagResource'],
        Resource: '*',
        Condition: { 'ForAllValues:StringEquals': { 'aws:TagKeys': [...ACCOUNT_TAG_KEYS] } },
      },
      {
        Sid: 'BootstrapEachAccount',
        Effect: 'Allow',
        Action: 'sts:AssumeRole',
        Resource: `arn:${options.partition ?? 'aws'}:iam::*:role/${options.roleName}`,
      },
    ],
  };
}
