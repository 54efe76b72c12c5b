import { Annotations, Aspects, CfnOutput, Stack, StackProps, Tags } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { CellBakeAccess } from '../shared/bake-access';
import { CellEndpointRecord } from '../shared/endpoint-record';
import { CellKey } from '../shared/key';
import { CellMover } from '../cell/mover';
import { TagRawResources } from '../cell/cell-stack';
import { cellZeroStackName } from '../../domain/names';
import { AdoptionAlarms } from './alarms';
import { AdoptionEntry } from './entry';

/** The existing Application Load Balancer the routers reach cell zero through. */
export interface AdoptedLoadBalancer {
  /** `arn:…:loadbalancer/app/<name>/<id>`. */
  readonly arn: string;
  /** Port of its listener the adoption NLB forwards to. */
  readonly listenerPort: number;
  /** Whether that listener terminates TLS (passed through the NLB). @default 'http' */
  readonly protocol?: 'http' | 'https';
  /** Path the NLB's health check requests from the ALB. @default '/' */
  readonly healthCheckPath?: string;
  /** CloudWatch's name of the ALB, `app/<name>/<id>` (its `LoadBalancer` dimension). */
  readonly fullName: string;
}

/** The existing PostgreSQL database moves read tenants from. */
export interface AdoptedDatabase {
  readonly host: string;
  readonly port: number;
  readonly name: string;
  /** Complete ARN of the Secrets Manager secret with `username` and `password`. */
  readonly secretArn: string;
  /** A security group the database already admits on its port: the mover tasks run in it too. */
  readonly clientSecurityGroupId: string;
}

/** Thresholds of cell zero's alarms. */
export interface AdoptionAlarmThresholds {
  readonly errorRatePercent: number;
  readonly p99LatencyMs: number;
  readonly evaluationPeriods: number;
}

/** Names the routers, the pipeline and `cellctl move` find cell zero's parts by: the same as a cell's. */
export interface AdoptionNames {
  /** `/<app>/cell/<id>/endpoint-service-name`. */
  readonly endpointServiceParameter: string;
  /** `<app>-<id>-ep-reader`. */
  readonly endpointReaderRole: string;
  /** `<app>-<id>-bake-watcher`. */
  readonly bakeWatcherRole: string;
}

export interface CellZeroStackProps extends Omit<StackProps, 'env'> {
  readonly app: string;
  /** Cell zero's id in the mapping. */
  readonly cellId: string;
  /** The existing stack's account and region: the adoption stack deploys beside it. */
  readonly account: string;
  readonly region: string;
  /** The region's Availability Zones as the fleet lists them (synth reads no context). */
  readonly availabilityZones: readonly string[];
  readonly vpcId: string;
  /** Private subnets with a route out: the NLB and the mover tasks. */
  readonly privateSubnetIds: readonly string[];
  readonly loadBalancer: AdoptedLoadBalancer;
  readonly database: AdoptedDatabase;
  readonly routerAccount: string;
  /** The account of the pipeline, whose bake reads the health alarm. */
  readonly toolingAccount: string;
  /** Other regions whose routers reach cell zero. @default - none */
  readonly consumerRegions?: readonly string[];
  readonly alarms: AdoptionAlarmThresholds;
  readonly names: AdoptionNames;
  /** For tests: a prebuilt mover image instead of the bundled Dockerfile. @default - the mover bundle (images/mover) */
  readonly moverImage?: ecs.ContainerImage;
}

/** Stack name of cell zero's adoption stack: `<app>-cell-<id>-adoption`. */

/**
 * Cell zero's adoption stack, in the existing stack's account and region: only what the routers and
 * moves need, and none of it a change to the existing stack's resources (they are referenced by id
 * and ARN, never imported into this template):
 *
 * - AdoptionEntry: an NLB targeting the existing ALB, published as a PrivateLink endpoint service;
 * - CellEndpointRecord: the parameter and reader role the router stacks read its service name through;
 * - CellMover: the mover task and its launcher, on the existing database and secret;
 * - AdoptionAlarms: `<app>-<id>-health` from the ALB's metrics, and CellBakeAccess for the pipeline.
 *
 * Every resource is tagged `cell` = cell zero's id and `app`, like a cell's.
 */
export class CellZeroStack extends Stack {
  public readonly entry: AdoptionEntry;
  public readonly mover: CellMover;
  public readonly alarms: AdoptionAlarms;
  public readonly endpointRecord: CellEndpointRecord;
  private readonly zones: readonly string[];

  constructor(scope: Construct, id: string, props: CellZeroStackProps) {
    const {
      app,
      cellId,
      account,
      region,
      availabilityZones,
      vpcId,
      privateSubnetIds,
      loadBalancer,
      database,
      routerAccount,
      toolingAccount,
      consumerRegions,
      alarms,
      names,
      moverImage,
      ...stackProps
    } = props;
    super(scope, id, {
      stackName: cellZeroStackName(app, cellId),
      description: `${app} cell zero (${cellId}, ${region}): the routers' and moves' way into an existing stack, which it does not change`,
      terminationProtection: true,
      ...stackProps,
      env: { account, region },
    });
    if (privateSubnetIds.length < 2)
      throw new Error(`CellZeroStack: privateSubnetIds lists ${privateSubnetIds.length} subnet(s); give at least two (one per Availability Zone)`);
    this.zones = availabilityZones;
    Tags.of(this).add('cell', cellId);
    Tags.of(this).add('app', app);
    Aspects.of(this).add(new TagRawResources({ cell: cellId, app }));

    const vpc = ec2.Vpc.fromVpcAttributes(this, 'Vpc', { vpcId, availabilityZones: [...availabilityZones] });
    const subnets: ec2.SubnetSelection = {
      subnets: privateSubnetIds.map((subnetId, i) => {
        const subnet = ec2.Subnet.fromSubnetId(this, `Subnet${i + 1}`, subnetId);
        Annotations.of(subnet).acknowledgeWarning(
          '@aws-cdk/aws-ec2:noSubnetRouteTableId',
          "The existing VPC's routes are its own: the adoption stack places an NLB and tasks in these subnets and adds no route.",
        );
        return subnet;
      }),
    };
    const port = loadBalancer.protocol === 'https' ? 443 : 80;
    this.entry = new AdoptionEntry(this, 'Entry', {
      cellId,
      vpc,
      subnets,
      loadBalancerArn: loadBalancer.arn,
      listenerPort: loadBalancer.listenerPort,
      port,
      healthCheckPath: loadBalancer.healthCheckPath ?? '/',
      healthCheckProtocol: loadBalancer.protocol === 'https' ? elbv2.Protocol.HTTPS : elbv2.Protocol.HTTP,
      routerAccount,
      consumerRegions,
    });
    this.endpointRecord = new CellEndpointRecord(this, 'EndpointRecord', {
      endpointService: this.entry.endpointService,
      parameterName: names.endpointServiceParameter,
      readerRoleName: names.endpointReaderRole,
      routerAccount,
      routerRolePrefix: `${app}-router-`,
    });

    const key = new CellKey(this, 'Key', { cellId }).key;
    const secret = secretsmanager.Secret.fromSecretCompleteArn(this, 'DatabaseSecret', database.secretArn);
    this.mover = new CellMover(this, 'Mover', {
      app,
      cellId,
      vpc,
      subnets,
      routerAccount,
      encryptionKey: key,
      database: { host: database.host, port: database.port, name: database.name, secret },
      additionalSecurityGroups: [ec2.SecurityGroup.fromSecurityGroupId(this, 'DatabaseClient', database.clientSecurityGroupId, { mutable: false })],
      ...(moverImage ? { image: moverImage } : {}),
    });

    this.alarms = new AdoptionAlarms(this, 'Alarms', {
      namePrefix: `${app}-${cellId}`,
      loadBalancerFullName: loadBalancer.fullName,
      entry: this.entry,
      encryptionKey: key,
      ...alarms,
    });
    new CellBakeAccess(this, 'BakeAccess', { roleName: names.bakeWatcherRole, toolingAccount });

    new CfnOutput(this, 'EndpointServiceName', {
      description: 'PrivateLink service the routers create their interface endpoints for',
      value: this.entry.endpointService.vpcEndpointServiceName,
    });
    new CfnOutput(this, 'HealthAlarmName', { value: this.alarms.health.alarmName });
    new CfnOutput(this, 'MoverSecurityGroupId', {
      description: "The mover tasks' own security group (they also run in the database client group)",
      value: this.mover.securityGroup.securityGroupId,
    });
  }

  /** AZs come from the fleet config: no lookup, so synth works offline. */
  public override get availabilityZones(): string[] {
    return [...this.zones];
  }
}
