import { ArnFormat, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { DatabaseEngine, DEFAULT_DATABASE_PORT, postgresVersionOf } from '../../domain/fleet';

/** The cell's PostgreSQL, as a cell's props describe it. */
export interface CellDatabaseOptions {
  /** Aurora PostgreSQL (writer and reader) or Multi-AZ RDS PostgreSQL. */
  readonly engine: DatabaseEngine;
  /** Instance class without the `db.` prefix, for example `r6g.large`. */
  readonly instanceClass: string;
  /**
   * Listener port; a non-default port on purpose.
   * @default DEFAULT_DATABASE_PORT (5433)
   */
  readonly port?: number;
  /**
   * RDS PostgreSQL storage (Aurora grows on its own).
   * @default 100
   */
  readonly allocatedStorageGiB?: number;
  /**
   * Days of automated backups.
   * @default 7
   */
  readonly backupRetentionDays?: number;
  /**
   * PostgreSQL `major.minor` (RDS and Aurora use the same numbers), for example `17.9`.
   * @default DEFAULT_POSTGRES_VERSION
   */
  readonly engineVersion?: string;
  /**
   * Days between credential rotations.
   * @default 30
   */
  readonly rotationDays?: number;
}

export interface CellDataProps extends CellDatabaseOptions {
  readonly vpc: ec2.IVpc;
  /** Isolated subnets: no route to or from the internet. */
  readonly subnets: ec2.SubnetSelection;
  /** Where the rotation function runs: it needs to reach Secrets Manager. */
  readonly rotationSubnets: ec2.SubnetSelection;
  /** The cell's own key: storage, the credentials secret and the exported logs. */
  readonly encryptionKey: kms.IKey;
}

const ADMIN_USER = 'cell_admin';

/** Why a load balancer or database of the fleet has no deletion protection in its template (cdk-nag and Control Tower acknowledgments). */
export const DELETION_PROTECTION_AFTER_CREATE =
  "Deletion protection is switched on by the pipeline right after the first successful deploy (its protect step, through the stack's protector role, DeletionProtectionAccess) and re-applied after every deploy; in the template it would turn the rollback of a failed first create into ROLLBACK_FAILED, which needs hand work before any retry.";

/** What `CellWriterFailoverAccess` acts on (`CellData.failover`). */
export type WriterFailoverTarget =
  | { readonly kind: 'cluster'; readonly clusterArn: string; readonly instanceArns: readonly string[] }
  | { readonly kind: 'instance'; readonly instanceArn: string };

/**
 * The cell's relational database: Aurora PostgreSQL (writer + reader in another AZ) or Multi-AZ
 * RDS PostgreSQL. Encrypted, IAM auth, snapshots on removal, credentials in
 * Secrets Manager rotated on a schedule, isolated subnets, reachable only from what `allowFrom` names.
 */
export class CellData extends Construct {
  /**
   * The admin credentials (JSON `username`, `password`, `host`, `port`), rotated every `rotationDays`
   * by a single-user rotation: the username stays, the password changes under running workloads.
   */
  public readonly secret: secretsmanager.ISecret;
  /** The writer's endpoint hostname (Aurora: the cluster endpoint, which follows a failover). */
  public readonly hostname: string;
  public readonly port: number;
  public readonly connections: ec2.Connections;
  public readonly engine: DatabaseEngine;
  /** CPU of the writer (Aurora: cluster-wide) instance. */
  public readonly cpu: cloudwatch.IMetric;
  public readonly databaseConnections: cloudwatch.IMetric;
  /** Free storage in bytes: Aurora's local storage or RDS's allocated storage. */
  public readonly freeStorageBytes: cloudwatch.IMetric;
  /**
   * The ARN deletion protection is set on: the Aurora cluster (a setting of the cluster, not of its
   * instances) or the RDS instance. The template leaves it off: a create that fails must be able to
   * roll the database back; the pipeline switches it on after the first successful deploy
   * (`DeletionProtectionAccess`).
   */
  public readonly deletionProtectionArn: string;
  /**
   * What a writer failover acts on: the Aurora cluster and its instances (a failover promotes the
   * reader), or the Multi-AZ RDS instance (a reboot with failover moves it to its standby's zone).
   */
  public readonly failover: WriterFailoverTarget;

  constructor(scope: Construct, id: string, props: CellDataProps) {
    super(scope, id);
    const retention = props.backupRetentionDays ?? 7;
    if (!Number.isInteger(retention) || retention < 1 || retention > 35) {
      throw new Error(`CellData: backupRetentionDays ${retention} must be 1-35`);
    }
    const engineVersion = postgresVersionOf(props);
    const port = props.port ?? DEFAULT_DATABASE_PORT;
    const version = /^(\d+)\.\d+$/.exec(engineVersion);
    if (!version) throw new Error(`CellData: engineVersion \`${engineVersion}\` must be a PostgreSQL major.minor such as 17.9`);
    const instanceType = new ec2.InstanceType(props.instanceClass);
    const credentials = rds.Credentials.fromGeneratedSecret(ADMIN_USER, { encryptionKey: props.encryptionKey });
    const common = {
      vpc: props.vpc,
      vpcSubnets: props.subnets,
      credentials,
      storageEncrypted: true,
      storageEncryptionKey: props.encryptionKey,
      monitoringInterval: Duration.seconds(60),
      iamAuthentication: true,
      port,
      removalPolicy: RemovalPolicy.SNAPSHOT,
      copyTagsToSnapshot: true,
    };
    let database: rds.DatabaseCluster | rds.DatabaseInstance;
    if (props.engine === 'aurora-postgresql') {
      const cluster = new rds.DatabaseCluster(this, 'Cluster', {
        ...common,
        engine: rds.DatabaseClusterEngine.auroraPostgres({ version: rds.AuroraPostgresEngineVersion.of(engineVersion, version[1]) }),
        writer: rds.ClusterInstance.provisioned('Writer', { instanceType }),
        // A reader in another AZ is what makes Aurora Multi-AZ: failover promotes it.
        readers: [rds.ClusterInstance.provisioned('Reader', { instanceType, promotionTier: 1 })],
        backup: { retention: Duration.days(retention) },
        cloudwatchLogsExports: ['postgresql'],
      });
      this.hostname = cluster.clusterEndpoint.hostname;
      this.cpu = cluster.metricCPUUtilization({ period: Duration.minutes(1) });
      this.databaseConnections = cluster.metricDatabaseConnections({ period: Duration.minutes(1) });
      this.freeStorageBytes = cluster.metricFreeLocalStorage({ period: Duration.minutes(1), statistic: 'Minimum' });
      this.deletionProtectionArn = cluster.clusterArn;
      const stack = Stack.of(this);
      this.failover = {
        kind: 'cluster',
        clusterArn: cluster.clusterArn,
        instanceArns: cluster.instanceIdentifiers.map((id) =>
          stack.formatArn({ service: 'rds', resource: 'db', resourceName: id, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
        ),
      };
      database = cluster;
    } else {
      const instance = new rds.DatabaseInstance(this, 'Instance', {
        ...common,
        engine: rds.DatabaseInstanceEngine.postgres({ version: rds.PostgresEngineVersion.of(engineVersion, version[1]) }),
        instanceType,
        multiAz: true,
        allocatedStorage: props.allocatedStorageGiB ?? 100,
        storageType: rds.StorageType.GP3,
        backupRetention: Duration.days(retention),
        autoMinorVersionUpgrade: true,
        cloudwatchLogsExports: ['postgresql', 'upgrade'],
      });
      this.hostname = instance.dbInstanceEndpointAddress;
      this.cpu = instance.metricCPUUtilization({ period: Duration.minutes(1) });
      this.databaseConnections = instance.metricDatabaseConnections({ period: Duration.minutes(1) });
      this.freeStorageBytes = instance.metricFreeStorageSpace({ period: Duration.minutes(1), statistic: 'Minimum' });
      this.deletionProtectionArn = instance.instanceArn;
      this.failover = { kind: 'instance', instanceArn: instance.instanceArn };
      database = instance;
    }
    for (const id of ['AwsSolutions-RDS10', props.engine === 'aurora-postgresql' ? 'ControlTower::CT.RDS.PR.3' : 'ControlTower::CT.RDS.PR.13']) {
      Validations.of(database).acknowledge({ id, reason: DELETION_PROTECTION_AFTER_CREATE });
    }
    this.engine = props.engine;
    this.port = port;
    this.secret = database.secret!;
    this.connections = database.connections;
    const monitoringRole = database.node.tryFindChild('MonitoringRole');
    if (monitoringRole) {
      Validations.of(monitoringRole).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonRDSEnhancedMonitoringRole]',
        reason: 'AWS documents this managed policy as the one for RDS enhanced monitoring; it only lets RDS write OS metrics to its own log group.',
      });
    }
    for (const rule of ['EC2RestrictedCommonPorts', 'EC2RestrictedSSH']) {
      Validations.of(database.connections.securityGroups[0]).acknowledge({
        id: `NIST.800.53.R5-${rule}`,
        reason:
          'Ingress is the database port (a token the rule cannot resolve) and only from named security groups (workload, rotation), never from a CIDR.',
      });
    }
    database.addRotationSingleUser({
      automaticallyAfter: Duration.days(props.rotationDays ?? 30),
      vpcSubnets: props.rotationSubnets,
    });
  }

  /** Lets `peer` open connections to the database port, and nothing else. */
  public allowFrom(peer: ec2.IConnectable, description: string): void {
    this.connections.allowDefaultPortFrom(peer, description);
  }
}
