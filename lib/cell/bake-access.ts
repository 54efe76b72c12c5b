import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';

export interface CellBakeAccessProps {
  /** `<app>-<cell>-bake-watcher`: the pipeline's bake step assumes it by name. */
  readonly roleName: string;
  /** The account the pipeline runs in. */
  readonly toolingAccount: string;
  readonly healthAlarm: cloudwatch.IAlarm;
}

/**
 * A read-only role the pipeline's bake step assumes from the tooling account to watch this cell's
 * health alarm: it can describe that one alarm and nothing else.
 */
export class CellBakeAccess extends Construct {
  public readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: CellBakeAccessProps) {
    super(scope, id);
    if (!/^\d{12}$/.test(props.toolingAccount)) throw new Error(`CellBakeAccess: toolingAccount \`${props.toolingAccount}\` is not a 12-digit account id`);
    this.role = new iam.Role(this, 'Role', {
      roleName: props.roleName,
      description: 'Pipeline bake step: read this cell\'s health alarm',
      assumedBy: new iam.AccountPrincipal(props.toolingAccount),
    });
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['cloudwatch:DescribeAlarms'], resources: [props.healthAlarm.alarmArn] }));
  }
}

/** Name of a cell's bake-watcher role, shared by the cell stack and the pipeline. */
export function bakeWatcherRoleName(app: string, cellId: string): string {
  return `${app}-${cellId}-bake-watcher`;
}
