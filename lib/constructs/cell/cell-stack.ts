import { Aspects, CfnOutput, CfnResource, Environment, IAspect, Stack, StackProps, TagManager, Tags, Token } from 'aws-cdk-lib';
import { Construct, IConstruct } from 'constructs';
import {
  bakeWatcherRoleName,
  cellDeletionProtectorRoleName,
  cellEndpointReaderRoleName,
  cellEndpointServiceParameter,
  cellMetricsReaderRoleName,
  cellWriterFailoverRoleName,
  cellSignalsParameter,
  cellStackName,
  routerRolePrefix,
} from '../../domain/names';
import { CellBakeAccess } from '../shared/bake-access';
import { Cell, CellProps } from './cell';
import { CellEndpointRecord } from '../shared/endpoint-record';
import { DeletionProtectionAccess } from '../shared/deletion-protection-access';
import { CellMetricsAccess } from './metrics-access';
import { CellWriterFailoverAccess } from './writer-failover';

/**
 * A cell's stack: `env` names the cell's own account and region (required: the roles other accounts
 * assume name it), `stackName` defaults to `<app>-cell-<id>`, `terminationProtection` to true.
 */
export interface CellStackProps extends StackProps {
  /** The cell's own account and region. */
  readonly env: Environment;
  /** The cell the stack holds. */
  readonly cell: CellProps;
  /**
   * The delivery pipeline's account: its bake reads the cell's alarms and its protect step switches
   * deletion protection on, each through a role of this stack that only this account may assume.
   */
  readonly toolingAccount: string;
}

/**
 * `Tags.of()` skips resources CDK creates as raw `CfnResource`s (custom-resource provider roles and
 * handlers); this tags those too, so "every cell resource is tagged" holds without exceptions.
 */
export class TagRawResources implements IAspect {
  private static readonly TAGGABLE = new Set(['AWS::IAM::Role', 'AWS::Lambda::Function']);
  constructor(private readonly tags: Record<string, string>) {}
  public visit(node: IConstruct): void {
    if (CfnResource.isCfnResource(node) && !TagManager.isTaggable(node) && TagRawResources.TAGGABLE.has(node.cfnResourceType)) {
      node.addPropertyOverride(
        'Tags',
        Object.entries(this.tags).map(([Key, Value]) => ({ Key, Value })),
      );
    }
  }
}

/**
 * One cell, deployed into the cell's own account and region. Every taggable resource carries
 * `cell` = cell id and `app` = app name.
 */
export class CellStack extends Stack {
  public readonly cell: Cell;
  private readonly zones: readonly string[];

  constructor(scope: Construct, id: string, { cell, toolingAccount, ...stackProps }: CellStackProps) {
    const { app, cellId } = cell;
    const { account, region } = stackProps.env;
    if (account === undefined || Token.isUnresolved(account) || region === undefined || Token.isUnresolved(region)) {
      throw new Error(
        `CellStack ${cellId}: env needs the cell's own account and region, for example { account: '123456789012', region: 'eu-west-1' }`,
      );
    }
    super(scope, id, {
      stackName: cellStackName(app, cellId),
      description: `${app} cell ${cellId} (${region})`,
      terminationProtection: true,
      ...stackProps,
    });
    this.zones = cell.network.availabilityZones;
    Tags.of(this).add('cell', cellId);
    Tags.of(this).add('app', app);
    Aspects.of(this).add(new TagRawResources({ cell: cellId, app }));
    this.cell = new Cell(this, 'Cell', cell);
    new CellBakeAccess(this, 'BakeAccess', {
      roleName: bakeWatcherRoleName(app, cellId),
      toolingAccount,
    });
    const data = this.cell.data;
    new DeletionProtectionAccess(this, 'DeletionProtection', {
      roleName: cellDeletionProtectorRoleName(app, cellId),
      toolingAccount,
      loadBalancerArns: [this.cell.entry.loadBalancer.loadBalancerArn, this.cell.entry.privateLink.loadBalancerArn],
      ...(data.engine === 'aurora-postgresql' ? { dbClusterArns: [data.deletionProtectionArn] } : { dbInstanceArns: [data.deletionProtectionArn] }),
    });

    const metrics = new CellMetricsAccess(this, 'MetricsAccess', {
      roleName: cellMetricsReaderRoleName(app, cellId),
      parameterName: cellSignalsParameter(app, cellId),
      routerAccount: cell.routing.routerAccount,
      compute: {
        cpu: this.cell.compute.cpu,
        running: this.cell.compute.running,
        maximum: this.cell.compute.maxCount,
        unit: this.cell.compute.countUnit,
      },
      signals: {
        databaseCpu: this.cell.alarms.databaseCpu.metric,
        databaseConnections: this.cell.alarms.databaseConnections.metric,
        queueAgeSeconds: this.cell.alarms.oldestMessage.metric,
      },
    });

    new CellWriterFailoverAccess(this, 'WriterFailover', {
      roleName: cellWriterFailoverRoleName(app, cellId),
      operatorAccount: cell.routing.routerAccount,
      database: data.failover,
      identifierParameterArn: metrics.parameter.parameterArn,
    });

    const entry = this.cell.entry;
    new CellEndpointRecord(this, 'EndpointRecord', {
      endpointService: entry.endpointService,
      parameterName: cellEndpointServiceParameter(app, cellId),
      readerRoleName: cellEndpointReaderRoleName(app, cellId),
      routerAccount: cell.routing.routerAccount,
      routerRolePrefix: routerRolePrefix(app),
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

  /** AZs come from the cell's network props: no lookup, so synth works offline. */
  public override get availabilityZones(): string[] {
    return [...this.zones];
  }
}
