import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import { Construct } from 'constructs';
import {
  AlarmThresholds,
  APP_NAME,
  CELL_ID,
  DEFAULT_ALARMS,
  DEFAULT_BUCKET_COUNT,
  DEFAULT_CAPACITY,
  DEFAULT_PARTITION_KEY,
  PartitionKeySource,
  ROUTED_KEY_HEADER,
} from '../../domain/fleet';
import { cellNamePrefix } from '../../domain/names';
import { CellAlarmOptions, CellAlarms } from './alarms';
import { CellCompute, CellComputeOptions, CellWorkloadOptions, DEFAULT_CONTAINER_PORT, DEFAULT_HEALTH_CHECK_PATH } from './compute';
import { CellDashboard } from './dashboard';
import { CellData, CellDatabaseOptions } from './data';
import { CellEntry } from './entry';
import { applyCellExtension, CellExtension } from './extension';
import { CellKey } from '../shared/key';
import { CellMover } from './mover';
import { CellNetwork, CellNetworkOptions } from './network';
import { CellQueues } from './queues';

/** The database the workload keeps its tables in, inside the cell's PostgreSQL. */
export const WORKLOAD_DATABASE = 'cell';

/** How the fleet's routers reach the cell and find a request's tenant. */
export interface CellRoutingOptions {
  /** The routers' account: the only one allowed to connect to the cell's endpoint service, and home of the move bucket. */
  readonly routerAccount: string;
  /**
   * Other regions whose routers connect to the cell (cross-region PrivateLink). Every router reaches
   * every cell, so a fleet gives every region it has besides the cell's.
   * @default - routers in the cell's own region only
   */
  readonly consumerRegions?: readonly string[];
  /**
   * Where the routers read the partition key (tenant id): the workload reads it the same way
   * (`PARTITION_KEY`), and WAF throttles per tenant on the header the router forwards it in.
   * @default DEFAULT_PARTITION_KEY (header `x-tenant-id`)
   */
  readonly partitionKey?: PartitionKeySource;
  /**
   * Buckets keys hash into (`BUCKET_COUNT`), the same in the whole fleet.
   * @default DEFAULT_BUCKET_COUNT (16384)
   */
  readonly bucketCount?: number;
}

/** What the cell was load-tested at: what it is allowed to take. */
export interface CellTestedLimits {
  /** Sustained requests per second: the capacity alarms page above `targetUtilisation` of it, and above it. */
  readonly requestsPerSecond: number;
  /** Requests one tenant may send in 5 minutes before WAF blocks it. */
  readonly tenantRequestsPer5Min: number;
}

/** When the cell's alarms fire. */
export interface CellAlarmSettings {
  /**
   * Thresholds, each defaulting to DEFAULT_ALARMS' value.
   * @default DEFAULT_ALARMS
   */
  readonly thresholds?: Partial<AlarmThresholds>;
  /**
   * Share of `limits.requestsPerSecond` the cell is placed against (0 < x < 1): `above-target` pages
   * above it.
   * @default DEFAULT_CAPACITY.targetUtilisation (0.5)
   */
  readonly targetUtilisation?: number;
}

export interface CellProps {
  /**
   * The application, `[a-z][a-z0-9-]{1,20}`: with `cellId` it prefixes every physical name of the
   * cell (`<app>-<cellId>-health`, the mover's roles).
   */
  readonly app: string;
  /** The cell's id, `[a-z][a-z0-9-]{1,30}`, unique among the application's cells. */
  readonly cellId: string;
  /** The cell's own VPC. */
  readonly network: CellNetworkOptions;
  /** What runs the workload, and how much of it. */
  readonly compute: CellComputeOptions;
  /** The workload: image, port, health check path, environment, secrets. */
  readonly workload: CellWorkloadOptions;
  /** The cell's PostgreSQL. */
  readonly database: CellDatabaseOptions;
  /** How the routers reach the cell and find a request's tenant. */
  readonly routing: CellRoutingOptions;
  /** What the cell was load-tested at. */
  readonly limits: CellTestedLimits;
  /**
   * When the cell's alarms fire.
   * @default - DEFAULT_ALARMS, target utilisation 0.5
   */
  readonly alarms?: CellAlarmSettings;
  /**
   * ACM certificate for the cell entry's HTTPS listener.
   * @default - HTTP inside PrivateLink
   */
  readonly certificateArn?: string;
  /**
   * Your own resources in the cell, built last, from the cell's building blocks.
   * @default - none
   */
  readonly extension?: CellExtension;
}

/** The header WAF throttles on: the configured one, or the one the router forwards the key in. */
export function tenantHeaderOf(partitionKey: PartitionKeySource): string {
  return partitionKey.source === 'header' ? partitionKey.name : ROUTED_KEY_HEADER;
}

/** Every problem with `props` that a construct further down would report less clearly, or not at all. */
function cellPropsProblems(props: CellProps): string[] {
  const problems: string[] = [];
  if (!APP_NAME.test(props.app)) problems.push(`app \`${props.app}\` must match ${APP_NAME.source} (it prefixes every name in the cell)`);
  if (!CELL_ID.test(props.cellId)) problems.push(`cellId \`${props.cellId}\` must match ${CELL_ID.source}`);
  const target = props.alarms?.targetUtilisation;
  if (target !== undefined && !(target > 0 && target < 1)) problems.push(`alarms.targetUtilisation ${target} must be between 0 and 1`);
  for (const [name, value] of Object.entries(props.limits)) {
    if (!(typeof value === 'number' && value > 0)) problems.push(`limits.${name} ${value} must be a positive number`);
  }
  return problems;
}

/**
 * One complete, independent copy of the workload: network, entry, compute, data, queues, alarms
 * and dashboard. Cells share nothing; every name carries the cell id.
 */
export class Cell extends Construct {
  public readonly key: CellKey;
  public readonly network: CellNetwork;
  public readonly entry: CellEntry;
  public readonly compute: CellCompute;
  public readonly data: CellData;
  public readonly queues: CellQueues;
  public readonly alarms: CellAlarms;
  public readonly dashboard: CellDashboard;
  /** The cell side of moves: a task run on demand, its roles. */
  public readonly mover: CellMover;

  constructor(scope: Construct, id: string, props: CellProps) {
    super(scope, id);
    const problems = cellPropsProblems(props);
    if (problems.length > 0) throw new Error(`Cell ${props.cellId}: ${problems.join('; ')}`);
    const { app, cellId, routing, limits, workload } = props;
    const namePrefix = cellNamePrefix(app, cellId);
    const partitionKey = routing.partitionKey ?? DEFAULT_PARTITION_KEY;
    const containerPort = workload.containerPort ?? DEFAULT_CONTAINER_PORT;
    const healthCheckPath = workload.healthCheckPath ?? DEFAULT_HEALTH_CHECK_PATH;
    this.key = new CellKey(this, 'Key', { cellId });
    const encryptionKey = this.key.key;
    this.network = new CellNetwork(this, 'Network', { ...props.network, encryptionKey });
    this.queues = new CellQueues(this, 'Queues', { encryptionKey });
    this.data = new CellData(this, 'Data', {
      ...props.database,
      vpc: this.network.vpc,
      subnets: this.network.dataSubnets,
      rotationSubnets: this.network.appSubnets,
      encryptionKey,
    });
    this.entry = new CellEntry(this, 'Entry', {
      cellId,
      namePrefix,
      encryptionKey,
      vpc: this.network.vpc,
      subnets: this.network.appSubnets,
      routerAccount: routing.routerAccount,
      consumerRegions: routing.consumerRegions,
      tenantHeader: tenantHeaderOf(partitionKey),
      tenantRequestsPer5Min: limits.tenantRequestsPer5Min,
      targetType: (props.compute.kind ?? 'fargate') === 'fargate' ? elbv2.TargetType.IP : elbv2.TargetType.INSTANCE,
      targetPort: containerPort,
      healthCheckPath,
      certificateArn: props.certificateArn,
    });
    this.alarms = new CellAlarms(this, 'Alarms', {
      namePrefix,
      thresholds: { ...DEFAULT_ALARMS, ...props.alarms?.thresholds },
      loadBalancer: this.entry.loadBalancer,
      targetGroup: this.entry.targetGroup,
      data: this.data,
      queues: this.queues,
      encryptionKey,
      capacity: {
        testedRequestsPerSecond: limits.requestsPerSecond,
        targetUtilisation: props.alarms?.targetUtilisation ?? DEFAULT_CAPACITY.targetUtilisation,
      },
    });
    // The workload creates its database on first start (RDS/Aurora create only `postgres`).
    const database = { host: this.data.hostname, port: this.data.port, name: WORKLOAD_DATABASE, secret: this.data.secret };
    this.compute = new CellCompute(this, 'Compute', {
      cellId,
      vpc: this.network.vpc,
      subnets: this.network.appSubnets,
      compute: props.compute,
      workload,
      partitionKey,
      bucketCount: routing.bucketCount ?? DEFAULT_BUCKET_COUNT,
      targetGroup: this.entry.targetGroup,
      loadBalancer: this.entry.loadBalancer,
      database,
      workQueue: this.queues.work,
      deploymentAlarms: this.alarms.deploymentGate,
      encryptionKey,
    });
    this.data.allowFrom(this.compute, `${cellId}: workload to database`);
    this.mover = new CellMover(this, 'Mover', {
      app,
      cellId,
      vpc: this.network.vpc,
      subnets: this.network.appSubnets,
      database,
      encryptionKey,
      routerAccount: routing.routerAccount,
      workQueue: this.queues.work,
    });
    this.data.allowFrom(this.mover, `${cellId}: mover tasks to database`);
    this.dashboard = new CellDashboard(this, 'Dashboard', { name: namePrefix, alarms: this.alarms });
    if (props.extension) {
      applyCellExtension(props.extension, {
        scope: new Construct(this, 'Extension'),
        cellId,
        namePrefix,
        vpc: this.network.vpc,
        appSubnets: this.network.appSubnets,
        dataSubnets: this.network.dataSubnets,
        encryptionKey,
        workloadSecurityGroup: this.compute.securityGroup,
        workloadRole: this.compute.role,
        alarmTopic: this.alarms.topic,
        addWorkloadEnvironment: (name, value) => this.compute.addEnvironment(name, value),
        addAlarm: (alarm, options) => this.addAlarm(alarm, options),
      });
    }
  }

  /** Makes `alarm` one of the cell's: in its health (unless `health: false`) and on its dashboard. */
  public addAlarm(alarm: cloudwatch.IAlarm, options?: CellAlarmOptions): void {
    this.alarms.addAlarm(alarm, options);
    this.dashboard.addAlarm(alarm);
  }
}
