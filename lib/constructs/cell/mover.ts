import { ArnFormat, Aws, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { HANDOFF_PREFIX, MOVER_CONTAINER, MoverTaskInfo, TASKS_PREFIX } from '../../domain/names/move-bucket';
import { moveBucketNamePrefix, moveOperatorRoleName, moverLauncherRoleName, moverParameter, moverTaskRoleName } from '../../domain/names';
import { imageDockerfile } from '../../runtime/images';
import { repositoryImageAsset } from '../shared/image-asset';
import { regionPartition } from '../../domain/fleet/regions';

/** The mover's image: a small bundle of this repository's mover entrypoint (bin/mover.ts), not the workload's image. */
export const MOVER_DOCKERFILE = imageDockerfile('mover');

export interface CellMoverProps {
  readonly app: string;
  readonly cellId: string;
  readonly vpc: ec2.IVpc;
  /** Private subnets with egress: the task reaches S3 and Secrets Manager (through NAT) and the database. */
  readonly subnets: ec2.SubnetSelection;
  readonly database: { readonly host: string; readonly port: number; readonly name: string; readonly secret: secretsmanager.ISecret };
  /** The cell key: the mover's log group. */
  readonly encryptionKey: kms.IKey;
  /** The account holding the move bucket and the move operator role. */
  readonly routerAccount: string;
  /**
   * The cell's work queue: after a flip the mover re-sends the moved subject's pending work to it
   * (`requeue`; SQS cannot hand one tenant's messages over). Send only.
   * @default - no queue: a move carries no SQS work into this cell
   */
  readonly workQueue?: sqs.IQueue;
  /** @default 512 (0.5 vCPU): one step at a time, bound by the database and S3 */
  readonly cpu?: number;
  /** @default 1024 */
  readonly memoryMiB?: number;
  /** For tests: a prebuilt image instead of the bundled Dockerfile. */
  readonly image?: ecs.ContainerImage;
  /**
   * Security groups the mover tasks run in besides their own: one an existing database already
   * admits (cell zero, lib/constructs/cell-zero), so reaching it changes no rule of the existing stack.
   * @default - only the mover's own
   */
  readonly additionalSecurityGroups?: readonly ec2.ISecurityGroup[];
}

/**
 * The cell side of moves: an ECS task definition run on demand (never a service) whose entrypoint
 * performs one step of a move inside the cell (export, import, clear, fence, checksums, forget…,
 * lib/operations/moves/aws-task.ts running lib/operations/moves' PostgresCellData), and the roles around it:
 *
 * - the task role `<app>-<cell>-mover`: `secretsmanager:GetSecretValue` on the cell's database
 *   secret (and decrypt through Secrets Manager only), the cell's own lanes of the move bucket
 *   (write `handoff/*\/from=<account>/*` and its task results, read `handoff/*\/to=<account>/*` and its
 *   task requests, in buckets of the router account only), nothing else;
 * - the launcher role `<app>-<cell>-mover-launcher`, which only the router account's move operator
 *   role may assume: run this task definition in this cluster (passing only the mover's two roles),
 *   describe and stop its tasks, read the parameter describing how to run it;
 * - a security group the cell database admits (CellData.allowFrom).
 *
 * The image is this repository's mover bundle, not `workload.image`: the workload may be any image,
 * and the mover's code is lib/operations/moves, which only this repository has.
 */
export class CellMover extends Construct implements ec2.IConnectable {
  public readonly connections: ec2.Connections;
  public readonly cluster: ecs.Cluster;
  public readonly taskDefinition: ecs.FargateTaskDefinition;
  public readonly taskRole: iam.Role;
  public readonly launcher: iam.Role;
  public readonly securityGroup: ec2.SecurityGroup;
  public readonly logs: logs.LogGroup;
  public readonly parameter: ssm.StringParameter;

  constructor(scope: Construct, id: string, props: CellMoverProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const account = stack.account;
    const partition = Aws.PARTITION;
    const family = `${props.app}-${props.cellId}-mover`;
    this.cluster = new ecs.Cluster(this, 'Cluster', { vpc: props.vpc, containerInsightsV2: ecs.ContainerInsights.ENABLED });
    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      description: `${props.cellId}: mover tasks (database, S3 and Secrets Manager); no inbound`,
    });
    this.connections = this.securityGroup.connections;
    this.logs = new logs.LogGroup(this, 'Logs', {
      retention: logs.RetentionDays.ONE_YEAR,
      encryptionKey: props.encryptionKey,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.taskRole = new iam.Role(this, 'TaskRole', {
      roleName: moverTaskRoleName(props.app, props.cellId),
      description: `${props.cellId}: mover task (its database secret, its own lanes of the move bucket)`,
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com', { conditions: { StringEquals: { 'aws:SourceAccount': account } } }),
    });
    this.taskRole.addToPolicy(new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [props.database.secret.secretArn] }));
    if (props.database.secret.encryptionKey) {
      this.taskRole.addToPolicy(
        new iam.PolicyStatement({
          actions: ['kms:Decrypt'],
          resources: [props.database.secret.encryptionKey.keyArn],
          conditions: { StringEquals: { 'kms:ViaService': `secretsmanager.${stack.region}.amazonaws.com` } },
        }),
      );
    }
    const buckets = `arn:${partition}:s3:::${moveBucketNamePrefix(props.app, props.routerAccount)}-*`;
    const routerOwned = { StringEquals: { 's3:ResourceAccount': props.routerAccount } };
    const writes = [`${buckets}/${HANDOFF_PREFIX}*/from=${account}/*`, `${buckets}/${TASKS_PREFIX}${account}/*/result.json`];
    const reads = [`${buckets}/${HANDOFF_PREFIX}*/to=${account}/*`, `${buckets}/${TASKS_PREFIX}${account}/*/request.json`];
    this.taskRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: writes, conditions: routerOwned }));
    this.taskRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: reads, conditions: routerOwned }));
    for (const resource of [...writes, ...reads]) {
      Validations.of(this.taskRole).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${resource.replace(`arn:${partition}`, 'arn:<AWS::Partition>')}]`,
        reason:
          "The move bucket is named <prefix>-<part of its stack id> in the router account; this cell's lanes are keyed by its account, the move and request ids are made at run time.",
      });
    }

    Validations.of((this.taskRole.node.findChild('DefaultPolicy') as iam.Policy).node.defaultChild!).acknowledge({
      id: 'CellIsolation-CI1[account:router]',
      reason:
        "The move bucket is in the router account: the only way data leaves or enters a cell in a move, limited to this cell's own lanes (by its account) and its own task requests and results; no other cell's resource is named.",
    });

    this.taskDefinition = new ecs.FargateTaskDefinition(this, 'Task', {
      family,
      cpu: props.cpu ?? 512,
      memoryLimitMiB: props.memoryMiB ?? 1024,
      taskRole: this.taskRole,
      runtimePlatform: { cpuArchitecture: ecs.CpuArchitecture.X86_64, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
    });
    const image = props.image ?? ecs.ContainerImage.fromDockerImageAsset(repositoryImageAsset(this, 'Image', 'mover'));
    this.taskDefinition.addContainer(MOVER_CONTAINER, {
      image,
      memoryLimitMiB: props.memoryMiB ?? 1024,
      readonlyRootFilesystem: true,
      user: '1000',
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logs, streamPrefix: 'mover' }),
      // No password: the entrypoint reads DB_SECRET_ARN when it connects. The bucket and the request
      // come as overrides at RunTask (the bucket's name is known only once the router stack exists).
      environment: {
        CELL_ID: props.cellId,
        DB_HOST: props.database.host,
        DB_PORT: String(props.database.port),
        DB_NAME: props.database.name,
        DB_SECRET_ARN: props.database.secret.secretArn,
        AWS_REGION: stack.region,
        ...(props.workQueue ? { QUEUE_URL: props.workQueue.queueUrl } : {}),
      },
    });
    if (props.workQueue) {
      this.taskDefinition.taskRole.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [props.workQueue.queueArn] }),
      );
      if (props.workQueue.encryptionMasterKey) {
        this.taskDefinition.taskRole.addToPrincipalPolicy(
          new iam.PolicyStatement({ actions: ['kms:GenerateDataKey', 'kms:Decrypt'], resources: [props.workQueue.encryptionMasterKey.keyArn] }),
        );
      }
    }
    Validations.of(this.taskDefinition).acknowledge({
      id: 'AwsSolutions-ECS2',
      reason:
        'The environment holds only non-secret identifiers (cell id, database endpoint, the secret ARN); the mover reads the password from Secrets Manager when it connects.',
    });
    Validations.of(this.taskDefinition.obtainExecutionRole()).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ecr:GetAuthorizationToken has no resource-level permissions; image pulls themselves are scoped to the image asset repository.',
    });

    // Only the move operator of the router account may assume it (a condition on the principal's ARN,
    // not the role as principal: the operator need not exist when this cell deploys first, IAM User
    // Guide, "AWS JSON policy elements: Principal").
    this.launcher = new iam.Role(this, 'Launcher', {
      roleName: moverLauncherRoleName(props.app, props.cellId),
      description: `${props.cellId}: lets the move operator run and watch this cell's mover task, nothing else`,
      assumedBy: new iam.AccountPrincipal(props.routerAccount).withConditions({
        ArnEquals: { 'aws:PrincipalArn': `arn:${partition}:iam::${props.routerAccount}:role/${moveOperatorRoleName(props.app)}` },
      }),
    });
    Validations.of(this.launcher.node.defaultChild!).acknowledge({
      id: 'CellIsolation-CI1[account:router]',
      reason:
        "Only the router account's move operator role may assume it, to run and watch this cell's mover task and nothing else: how a move reaches inside a cell without the cells talking to each other.",
    });
    const taskDefinitions = stack.formatArn({
      service: 'ecs',
      resource: 'task-definition',
      resourceName: `${family}:*`,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });
    this.launcher.addToPolicy(
      new iam.PolicyStatement({
        actions: ['ecs:RunTask'],
        resources: [taskDefinitions],
        conditions: { ArnEquals: { 'ecs:cluster': this.cluster.clusterArn } },
      }),
    );
    const tasks = stack.formatArn({
      service: 'ecs',
      resource: 'task',
      resourceName: `${this.cluster.clusterName}/*`,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });
    this.launcher.addToPolicy(new iam.PolicyStatement({ actions: ['ecs:DescribeTasks', 'ecs:StopTask'], resources: [tasks] }));
    this.launcher.addToPolicy(
      new iam.PolicyStatement({
        actions: ['iam:PassRole'],
        resources: [this.taskRole.roleArn, this.taskDefinition.obtainExecutionRole().roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } },
      }),
    );
    const parameterName = moverParameter(props.app, props.cellId);
    this.launcher.addToPolicy(
      new iam.PolicyStatement({
        actions: ['ssm:GetParameter'],
        resources: [stack.formatArn({ service: 'ssm', resource: 'parameter', resourceName: parameterName.replace(/^\//, '') })],
      }),
    );
    // The acknowledgment id is a plain string (a token cannot key it), spelled as cdk-nag prints the
    // ARNs: the literal partition when formatArn wrote one (the partition-literals feature flag of
    // cdk.json), `<AWS::Partition>` when it wrote the pseudo parameter (an app without that flag).
    const literalPartition = Token.isUnresolved(stack.partition) ? '<AWS::Partition>' : regionPartition(stack.region);
    for (const [resource, reason] of [
      [
        `arn:${literalPartition}:ecs:${stack.region}:${account}:task-definition/${family}:*`,
        "Every revision of this cell's mover task definition (RunTask takes the family's latest), only in this cell's mover cluster.",
      ],
      [
        `arn:${literalPartition}:ecs:${stack.region}:${account}:task/<${stack.getLogicalId(this.cluster.node.defaultChild as ecs.CfnCluster)}>/*`,
        "The mover tasks of this cell's mover cluster; their ids are made at run time.",
      ],
    ])
      Validations.of(this.launcher).acknowledge({ id: `AwsSolutions-IAM5[Resource::${resource}]`, reason });

    const subnets = props.vpc.selectSubnets(props.subnets).subnetIds;
    const info: MoverTaskInfo = {
      cluster: this.cluster.clusterName,
      taskDefinition: family,
      container: MOVER_CONTAINER,
      subnets,
      securityGroups: [this.securityGroup.securityGroupId, ...(props.additionalSecurityGroups ?? []).map((g) => g.securityGroupId)],
    };
    this.parameter = new ssm.StringParameter(this, 'Parameter', {
      parameterName,
      description: `${props.cellId}: how cellctl move runs this cell's mover task`,
      stringValue: stack.toJsonString(info),
    });
  }
}
