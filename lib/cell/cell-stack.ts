import { Aspects, CfnOutput, CfnResource, IAspect, Stack, StackProps, TagManager, Tags } from 'aws-cdk-lib';
import { Construct, IConstruct } from 'constructs';
import { Cell as CellModel, cellEndpointReaderRoleName, cellEndpointServiceParameter, Fleet } from '../fleet';
import { bakeWatcherRoleName, CellBakeAccess } from './bake-access';
import { Cell } from './cell';
import { CellEndpointRecord } from './endpoint-record';
import { DeletionProtectionAccess, deletionProtectorRoleName } from './deletion-protection-access';

export interface CellStackProps extends Omit<StackProps, 'env'> {
  readonly cell: CellModel;
  readonly fleet: Fleet;
}

/**
 * `Tags.of()` skips resources CDK creates as raw `CfnResource`s (custom-resource provider roles and
 * handlers); this tags those too, so "every cell resource is tagged" holds without exceptions.
 */
class TagRawResources implements IAspect {
  private static readonly TAGGABLE = new Set(['AWS::IAM::Role', 'AWS::Lambda::Function']);
  constructor(private readonly tags: Record<string, string>) {}
  public visit(node: IConstruct): void {
    if (CfnResource.isCfnResource(node) && !TagManager.isTaggable(node) && TagRawResources.TAGGABLE.has(node.cfnResourceType)) {
      node.addPropertyOverride('Tags', Object.entries(this.tags).map(([Key, Value]) => ({ Key, Value })));
    }
  }
}

/** Stack name of a cell: `<app>-cell-<id>`. */
export function cellStackName(fleet: Fleet, cellId: string): string {
  return `${fleet.app}-cell-${cellId}`;
}

/**
 * One cell, deployed into the cell's own account and region. Every taggable resource carries
 * `cell` = cell id and `app` = app name.
 */
export class CellStack extends Stack {
  public readonly cell: Cell;
  private readonly zones: readonly string[];

  constructor(scope: Construct, id: string, { cell, fleet, ...stackProps }: CellStackProps) {
    super(scope, id, {
      stackName: cellStackName(fleet, cell.id),
      description: `${fleet.app} cell ${cell.id} (${cell.region}, shape ${cell.shapeName})`,
      terminationProtection: true,
      ...stackProps,
      env: { account: cell.account, region: cell.region },
    });
    this.zones = cell.availabilityZones;
    Tags.of(this).add('cell', cell.id);
    Tags.of(this).add('app', fleet.app);
    Aspects.of(this).add(new TagRawResources({ cell: cell.id, app: fleet.app }));
    this.cell = new Cell(this, 'Cell', { cell, fleet, extension: fleet.cellResources });
    new CellBakeAccess(this, 'BakeAccess', {
      roleName: bakeWatcherRoleName(fleet.app, cell.id),
      toolingAccount: fleet.accounts.tooling,
    });
    const data = this.cell.data;
    new DeletionProtectionAccess(this, 'DeletionProtection', {
      roleName: deletionProtectorRoleName(`${fleet.app}-${cell.id}`),
      toolingAccount: fleet.accounts.tooling,
      loadBalancerArns: [this.cell.entry.loadBalancer.loadBalancerArn, this.cell.entry.privateLink.loadBalancerArn],
      ...(data.engine === 'aurora-postgresql' ? { dbClusterArns: [data.deletionProtectionArn] } : { dbInstanceArns: [data.deletionProtectionArn] }),
    });

    const entry = this.cell.entry;
    new CellEndpointRecord(this, 'EndpointRecord', {
      endpointService: entry.endpointService,
      parameterName: cellEndpointServiceParameter(fleet.app, cell.id),
      readerRoleName: cellEndpointReaderRoleName(fleet.app, cell.id),
      routerAccount: fleet.accounts.router,
      routerRolePrefix: `${fleet.app}-router-`,
    });
    new CfnOutput(this, 'EndpointServiceName', {
      description: 'PrivateLink service the router creates its interface endpoint for',
      value: entry.endpointService.vpcEndpointServiceName,
    });
    new CfnOutput(this, 'Endpoint', {
      description: 'Cell entry (internal ALB) URL inside the cell VPC',
      value: `${entry.protocol}://${entry.loadBalancer.loadBalancerDnsName}:${entry.port}`,
    });
    new CfnOutput(this, 'HealthAlarmName', { value: this.cell.alarms.health.alarmName });
  }

  /** AZs come from the fleet config: no lookup, so synth works offline. */
  public override get availabilityZones(): string[] {
    return [...this.zones];
  }
}
