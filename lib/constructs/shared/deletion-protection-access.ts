import { Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { assertAccountId } from './cross-account-read-role';

export interface DeletionProtectionAccessProps {
  /** The name the pipeline assumes the role by (`deletionProtectorRoleName`). */
  readonly roleName: string;
  /** The account the pipeline runs in. */
  readonly toolingAccount: string;
  /** ARNs of the stack's load balancers (ALB, NLB). */
  readonly loadBalancerArns: readonly string[];
  /** ARNs of the stack's RDS DB clusters. @default none */
  readonly dbClusterArns?: readonly string[];
  /** ARNs of the stack's RDS DB instances outside a cluster. @default none */
  readonly dbInstanceArns?: readonly string[];
}

/**
 * The role the pipeline's protect step assumes from the tooling account to switch deletion
 * protection on, after a stage's deploys succeeded, for exactly this stack's load balancers and
 * database, and nothing else.
 *
 * Why not `deletionProtection: true` in the template: a resource that refuses deletion turns the
 * rollback of a failed first create into `ROLLBACK_FAILED` (CloudFormation cannot delete it), and
 * every retry then needs hand work. The template leaves the setting out (absent, not `false`, so a
 * later update does not switch it back off) and the pipeline switches it on once, after the first
 * deploy that succeeded, as it does termination protection (lib/constructs/pipeline/protect.ts). The deploy
 * role of the CDK bootstrap may change CloudFormation stacks only, hence a role of the stack's own.
 */
export class DeletionProtectionAccess extends Construct {
  public readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: DeletionProtectionAccessProps) {
    super(scope, id);
    assertAccountId('DeletionProtectionAccess: toolingAccount', props.toolingAccount);
    const clusters = props.dbClusterArns ?? [];
    const instances = props.dbInstanceArns ?? [];
    if (props.loadBalancerArns.length + clusters.length + instances.length === 0) {
      throw new Error('DeletionProtectionAccess: name at least one load balancer or database to protect');
    }
    this.role = new iam.Role(this, 'Role', {
      roleName: props.roleName,
      description: "Pipeline protect step: switch deletion protection on for this stack's load balancers and database",
      assumedBy: new iam.AccountPrincipal(props.toolingAccount),
    });
    // The reads let the step skip what is already protected (a re-run changes nothing).
    if (props.loadBalancerArns.length > 0) {
      this.role.addToPolicy(
        new iam.PolicyStatement({ actions: ['elasticloadbalancing:ModifyLoadBalancerAttributes'], resources: [...props.loadBalancerArns] }),
      );
      // DescribeLoadBalancerAttributes takes no resource (Service Authorization Reference, Elastic Load Balancing V2).
      this.role.addToPolicy(new iam.PolicyStatement({ actions: ['elasticloadbalancing:DescribeLoadBalancerAttributes'], resources: ['*'] }));
      Validations.of(this.role.node.findChild('DefaultPolicy')).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'elasticloadbalancing:DescribeLoadBalancerAttributes supports no resource-level permissions; it reads attributes (deletion protection on or off) and changes nothing.',
      });
    }
    if (clusters.length > 0)
      this.role.addToPolicy(new iam.PolicyStatement({ actions: ['rds:ModifyDBCluster', 'rds:DescribeDBClusters'], resources: [...clusters] }));
    if (instances.length > 0)
      this.role.addToPolicy(new iam.PolicyStatement({ actions: ['rds:ModifyDBInstance', 'rds:DescribeDBInstances'], resources: [...instances] }));
  }
}
