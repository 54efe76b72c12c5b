import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';

export interface CrossAccountReadRoleProps {
  /** The name the other account assumes the role by. */
  readonly roleName: string;
  readonly description: string;
  /** The account whose principals may assume the role (12-digit id). */
  readonly trustedAccount: string;
  /**
   * Only that account's roles whose names start with this may assume it (`aws:PrincipalArn`).
   * @default - any principal the trusted account's own policies allow
   */
  readonly trustedRolePrefix?: string;
  /** What the role may do: reads only (`<service>:Get*`, `Describe*`, `List*`). */
  readonly actions: readonly string[];
  readonly resources: readonly string[];
}

/**
 * A role that another account assumes by name to read something of this one, and can do nothing
 * else: the pipeline's bake step reading a health alarm, the router stacks reading a cell's
 * endpoint service name. Callers acknowledge the audit findings their grant raises, with their reason.
 *
 * The trust names the account (narrowed by `aws:PrincipalArn` when `trustedRolePrefix` is given), not
 * a role ARN: IAM refuses a trust policy naming a role that does not exist yet, and the account
 * that reads may deploy after this one.
 */
export class CrossAccountReadRole extends iam.Role {
  constructor(scope: Construct, id: string, props: CrossAccountReadRoleProps) {
    assertAccountId(`CrossAccountReadRole ${id}: trustedAccount`, props.trustedAccount);
    const writes = props.actions.filter((action) => !READ_ACTION.test(action));
    if (writes.length > 0)
      throw new Error(
        `CrossAccountReadRole ${id}: ${writes.map((a) => `\`${a}\``).join(', ')} is not a read (Get*, Describe*, List*); give a role that changes things a construct of its own`,
      );
    if (props.actions.length === 0 || props.resources.length === 0)
      throw new Error(`CrossAccountReadRole ${id}: name at least one action and one resource`);
    const account = new iam.AccountPrincipal(props.trustedAccount);
    super(scope, id, {
      roleName: props.roleName,
      description: props.description,
      assumedBy:
        props.trustedRolePrefix === undefined
          ? account
          : account.withConditions({
              ArnLike: {
                'aws:PrincipalArn': Stack.of(scope).formatArn({
                  service: 'iam',
                  region: '',
                  account: props.trustedAccount,
                  resource: 'role',
                  resourceName: `${props.trustedRolePrefix}*`,
                }),
              },
            }),
    });
    this.addToPolicy(new iam.PolicyStatement({ actions: [...props.actions], resources: [...props.resources] }));
  }
}

const READ_ACTION = /^[a-z0-9-]+:(Get|Describe|List)[A-Za-z0-9]*$/;

/** Throws `<what> \`<value>\` is not a 12-digit account id` unless it is one. */
export function assertAccountId(what: string, value: string): void {
  if (!/^\d{12}$/.test(value)) throw new Error(`${what} \`${value}\` is not a 12-digit account id`);
}
