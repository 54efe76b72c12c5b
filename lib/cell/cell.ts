import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import { Construct } from 'constructs';
import { Cell as CellModel, Fleet, postgresVersionOf } from '../fleet';
import { CellAlarmOptions, CellAlarms } from './alarms';
import { CellCompute, workloadImage } from './compute';
import { CellDashboard } from './dashboard';
import { CellData } from './data';
import { CellEntry } from './entry';
import { applyCellExtension, CellExtension } from './extension';
import { CellKey } from './key';
import { CellMover } from './mover';
import { CellNetwork } from './network';
import { CellQueues } from './queues';

/** The database the workload keeps its tables in, inside the cell's PostgreSQL. */
export const WORKLOAD_DATABASE = 'cell';

export interface CellProps {
  /** The cell, as resolved from the fleet config. */
  readonly cell: CellModel;
  /** The fleet it belongs to (app name, router account, workload, alarm thresholds). */
  readonly fleet: Fleet;
  /**
   * The fleet's own resources in the cell, built last, from the cell's building blocks.
   * @default - none
   */
  readonly extension?: CellExtension;
}

/** The header WAF throttles on: the configured one, or the one the router forwards the key in. */
export function tenantHeaderOf(fleet: Fleet): string {
  return fleet.partitionKey.source === 'header' ? fleet.partitionKey.name : 'x-tenant-id';
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
    const { cell, fleet } = props;
    if (!fleet.cells.some((c) => c.id === cell.id)) {
      throw new Error(`Cell: cell \`${cell.id}\` is not part of fleet \`${fleet.app}\``);
    }
    const namePrefix = `${fleet.app}-${cell.id}`;
    this.key = new CellKey(this, 'Key', { cellId: cell.id });
    const encryptionKey = this.key.key;
    this.network = new CellNetwork(this, 'Network', { cidr: cell.cidr, availabilityZones: cell.availabilityZones, encryptionKey });
    this.queues = new CellQueues(this, 'Queues', { encryptionKey });
    this.data = new CellData(this, 'Data', {
      vpc: this.network.vpc,
      subnets: this.network.dataSubnets,
      rotationSubnets: this.network.appSubnets,
      engine: cell.shape.database.engine,
      encryptionKey,
      instanceClass: cell.shape.database.instanceClass,
      port: fleet.workload.databasePort,
      allocatedStorageGiB: cell.shape.database.allocatedStorageGiB,
      backupRetentionDays: cell.shape.database.backupRetentionDays,
      engineVersion: postgresVersionOf(cell.shape.database),
    });
    this.entry = new CellEntry(this, 'Entry', {
      cellId: cell.id,
      namePrefix,
      encryptionKey,
      vpc: this.network.vpc,
      subnets: this.network.appSubnets,
      routerAccount: fleet.accounts.router,
      consumerRegions: Object.keys(fleet.regions).filter((r) => r !== cell.region),
      tenantHeader: tenantHeaderOf(fleet),
      tenantRequestsPer5Min: cell.shape.limits.tenantRequestsPer5Min,
      targetType: cell.shape.compute === 'fargate' ? elbv2.TargetType.IP : elbv2.TargetType.INSTANCE,
      targetPort: fleet.workload.containerPort,
      healthCheckPath: fleet.workload.healthCheckPath,
      certificateArn: cell.certificateArn,
    });
    this.alarms = new CellAlarms(this, 'Alarms', {
      namePrefix,
      thresholds: fleet.alarms,
      loadBalancer: this.entry.loadBalancer,
      targetGroup: this.entry.targetGroup,
      data: this.data,
      queues: this.queues,
      encryptionKey,
      capacity: { testedRequestsPerSecond: cell.shape.limits.requestsPerSecond, targetUtilisation: fleet.capacity.targetUtilisation },
    });
    this.compute = new CellCompute(this, 'Compute', {
      cellId: cell.id,
      vpc: this.network.vpc,
      subnets: this.network.appSubnets,
      shape: cell.shape,
      image: workloadImage(this, 'WorkloadImage', fleet.workload.image),
      containerPort: fleet.workload.containerPort,
      healthCheckPath: fleet.workload.healthCheckPath,
      partitionKey: fleet.partitionKey,
      bucketCount: fleet.bucketCount,
      targetGroup: this.entry.targetGroup,
      loadBalancer: this.entry.loadBalancer,
      // The workload creates its database on first start (RDS/Aurora create only `postgres`).
      database: { host: this.data.hostname, port: this.data.port, name: WORKLOAD_DATABASE, secret: this.data.secret },
      workQueue: this.queues.work,
      deploymentAlarms: this.alarms.deploymentGate,
      encryptionKey,
    });
    this.data.allowFrom(this.compute, `${cell.id}: workload to database`);
    this.mover = new CellMover(this, 'Mover', {
      app: fleet.app,
      cellId: cell.id,
      vpc: this.network.vpc,
      subnets: this.network.appSubnets,
      database: { host: this.data.hostname, port: this.data.port, name: WORKLOAD_DATABASE, secret: this.data.secret },
      encryptionKey,
      routerAccount: fleet.accounts.router,
      workQueue: this.queues.work,
    });
    this.data.allowFrom(this.mover, `${cell.id}: mover tasks to database`);
    this.dashboard = new CellDashboard(this, 'Dashboard', { name: namePrefix, alarms: this.alarms });
    if (props.extension) {
      applyCellExtension(props.extension, {
        scope: new Construct(this, 'Extension'),
        cellId: cell.id,
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
