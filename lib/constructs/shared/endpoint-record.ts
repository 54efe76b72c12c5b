import { Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { assertAccountId, CrossAccountReadRole } from './cross-account-read-role';

export interface CellEndpointRecordProps {
  /** The cell's PrivateLink endpoint service. */
  readonly endpointService: ec2.IVpcEndpointService;
  /** `/<app>/cell/<id>/endpoint-service-name`: the router stacks read it by name. */
  readonly parameterName: string;
  /** `<app>-<cell>-ep-reader`: the router stacks assume it by name. */
  readonly readerRoleName: string;
  /** The router account: its router stacks (roles named `routerRolePrefix*`) may read the parameter. */
  readonly routerAccount: string;
  /** Names of the router stacks' roles that read the parameter start with this (`<app>-router-`). */
  readonly routerRolePrefix: string;
}

/**
 * Publishes the name of the cell's endpoint service where the router stacks can read it at deploy
 * time, so adding a cell is one change: the cell stack deploys first (it needs nothing from the
 * routers), then each region's router stack reads this parameter through the reader role and
 * creates its interface endpoint. Nothing is copied by hand.
 *
 * The role trusts the router account, narrowed by `aws:PrincipalArn` to the router stacks' roles
 * (the cell deploys before the routers; see CrossAccountReadRole).
 */
export class CellEndpointRecord extends Construct {
  public readonly parameter: ssm.StringParameter;
  public readonly readerRole: iam.Role;

  constructor(scope: Construct, id: string, props: CellEndpointRecordProps) {
    super(scope, id);
    assertAccountId('CellEndpointRecord: routerAccount', props.routerAccount);
    this.parameter = new ssm.StringParameter(this, 'ServiceName', {
      parameterName: props.parameterName,
      description: 'PrivateLink endpoint service of this cell: the router stacks create their interface endpoints for it',
      stringValue: props.endpointService.vpcEndpointServiceName,
    });
    this.readerRole = new CrossAccountReadRole(this, 'Reader', {
      roleName: props.readerRoleName,
      description: "Router stacks: read the name of this cell's endpoint service",
      trustedAccount: props.routerAccount,
      trustedRolePrefix: props.routerRolePrefix,
      actions: ['ssm:GetParameter'],
      resources: [this.parameter.parameterArn],
    });
    Validations.of(this.readerRole.node.defaultChild!).acknowledge({
      id: 'CellIsolation-CI1[account:router]',
      reason:
        "The router account's router stacks (<app>-router-* roles only) read the name of this cell's endpoint service, and nothing else, to create their interface endpoints: the same path by which the router reaches the cell at all.",
    });
  }
}
