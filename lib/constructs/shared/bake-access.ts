import { Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { assertAccountId, CrossAccountReadRole } from './cross-account-read-role';

export interface CellBakeAccessProps {
  /** `<app>-<cell>-bake-watcher`: the pipeline's bake step assumes it by name. */
  readonly roleName: string;
  /** The account the pipeline runs in. */
  readonly toolingAccount: string;
}

/**
 * A read-only role the pipeline's bake step assumes from the tooling account to watch this cell's
 * composite health alarm: it may call `cloudwatch:DescribeAlarms` and nothing else.
 *
 * The grant is on `*`, not on the alarm's ARN: DescribeAlarms returns composite alarms only to a
 * caller whose `cloudwatch:DescribeAlarms` permission is scoped to `*` ("You can't return
 * information about composite alarms if your cloudwatch:DescribeAlarms permission has a narrower
 * scope"; CloudWatch API Reference, DescribeAlarms,
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_DescribeAlarms.html).
 * Scoped to the ARN, every bake read "not found" and failed. The account holds only this cell, so
 * `*` reveals alarm definitions and states of this cell and nothing of another.
 */
export class CellBakeAccess extends Construct {
  public readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: CellBakeAccessProps) {
    super(scope, id);
    assertAccountId('CellBakeAccess: toolingAccount', props.toolingAccount);
    this.role = new CrossAccountReadRole(this, 'Role', {
      roleName: props.roleName,
      description: "Pipeline bake step: read this cell's health alarm",
      trustedAccount: props.toolingAccount,
      actions: ['cloudwatch:DescribeAlarms'],
      resources: ['*'],
    });
    Validations.of(this.role.node.findChild('DefaultPolicy')).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'DescribeAlarms returns composite alarms only when the permission is scoped to * (CloudWatch API Reference, DescribeAlarms); the role is read-only and the account holds only this cell.',
    });
  }
}
