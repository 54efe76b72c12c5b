import { Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { assertAccountId } from '../shared/cross-account-read-role';
import { WriterFailoverTarget } from './data';

export interface CellWriterFailoverAccessProps {
  /** `<app>-<cell>-db-failover` (`cellWriterFailoverRoleName`): operators assume it by name. */
  readonly roleName: string;
  /** The account operators run `cellctl zone drain` from (the routers' zones documents are there). */
  readonly operatorAccount: string;
  /** The cell's database (`CellData.failover`). */
  readonly database: WriterFailoverTarget;
  /**
   * The parameter that names the database's identifier (the signals record, `CellMetricsAccess`):
   * CloudFormation generates the identifier, so the command reads it there.
   */
  readonly identifierParameterArn: string;
}

/**
 * The role `cellctl zone drain --failover-writers` assumes from the router account to move this
 * cell's database writer out of a drained zone: read which zone the writer is in (the zones of the
 * account by AZ ID, since AZ names differ between accounts) and fail it over, on exactly this cell's
 * database and nothing else; the database's identifier is read from the signals parameter. Aurora:
 * `FailoverDBCluster` promotes the reader in another zone. Multi-AZ RDS: `RebootDBInstance` with
 * `ForceFailover` makes the standby, in another zone, the primary.
 */
export class CellWriterFailoverAccess extends Construct {
  public readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: CellWriterFailoverAccessProps) {
    super(scope, id);
    assertAccountId('CellWriterFailoverAccess: operatorAccount', props.operatorAccount);
    const db = props.database;
    if (db.kind === 'cluster' && db.instanceArns.length < 2)
      throw new Error('CellWriterFailoverAccess: database.instanceArns must name the writer and at least one reader (a failover promotes a reader)');
    this.role = new iam.Role(this, 'Role', {
      roleName: props.roleName,
      description: "cellctl zone drain --failover-writers: find this cell's database writer's zone and fail it over",
      assumedBy: new iam.AccountPrincipal(props.operatorAccount),
    });
    if (db.kind === 'cluster') {
      this.role.addToPolicy(new iam.PolicyStatement({ actions: ['rds:DescribeDBClusters', 'rds:FailoverDBCluster'], resources: [db.clusterArn] }));
      // FailoverDBCluster's resources are the cluster and, optionally, the target instance (`db`; Service
      // Authorization Reference, Amazon RDS): the command always names its target.
      this.role.addToPolicy(
        new iam.PolicyStatement({ actions: ['rds:DescribeDBInstances', 'rds:FailoverDBCluster'], resources: [...db.instanceArns] }),
      );
    } else {
      this.role.addToPolicy(new iam.PolicyStatement({ actions: ['rds:DescribeDBInstances', 'rds:RebootDBInstance'], resources: [db.instanceArn] }));
    }
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['ssm:GetParameter'], resources: [props.identifierParameterArn] }));
    // The writer's zone comes back as a name, which maps to a zone (an AZ ID) per account.
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['ec2:DescribeAvailabilityZones'], resources: ['*'] }));
    Validations.of(this.role.node.findChild('DefaultPolicy')).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'ec2:DescribeAvailabilityZones supports no resource-level permissions (Service Authorization Reference, Amazon EC2); it reads the account’s zone names and IDs and changes nothing.',
    });
    Validations.of(this.role.node.defaultChild!).acknowledge({
      id: 'CellIsolation-CI1[account:router]',
      reason:
        "Operators of the router account, draining a zone, move this cell's database writer out of it and touch nothing else of the cell: one cell at a time, never a call between cells.",
    });
  }
}
