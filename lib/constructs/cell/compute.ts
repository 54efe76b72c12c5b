import { Duration, Fn, Lazy, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as autoscaling from 'aws-cdk-lib/aws-autoscaling';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ComputeUnit } from '../../domain/capacity/signals';
import { ComputeKind, PartitionKeySource, workloadPartitionKey } from '../../domain/fleet';

/**
 * The application a cell runs, named as aws-cdk's `ApplicationLoadBalancedTaskImageOptions` names
 * it. The cell adds its own variables (docs/workload.md, "Environment") to `environment`.
 */
export interface CellWorkloadOptions {
  /**
   * The image: `ecs.ContainerImage.fromRegistry(...)`, `fromAsset(...)`, `fromEcrRepository(...)`.
   * On the `ec2` compute kind the instances run it with docker and get its pull permission.
   */
  readonly image: ecs.ContainerImage;
  /**
   * The port the workload listens on: the load balancer's target port and `PORT`.
   * @default 80
   */
  readonly containerPort?: number;
  /**
   * The path the load balancer checks; the workload serves its health there (`HEALTH_CHECK_PATH`).
   * @default '/'
   */
  readonly healthCheckPath?: string;
  /**
   * More environment variables, not secret (the values are in the template). The cell's own
   * variables (`CELL_ID`, `DB_HOST`, ...) cannot be replaced.
   * @default - the cell's own variables only
   */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Secrets ECS puts into the environment when a task starts (Fargate only: an instance of the `ec2`
   * kind runs the image with docker, which resolves no ECS secret). The database password is not
   * one of them: it rotates under running tasks, so the workload reads `DB_SECRET_ARN` at connect time.
   * @default - none
   */
  readonly secrets?: Readonly<Record<string, ecs.Secret>>;
}

/** What runs the workload, and how much of it: a cell shape's compute part. */
export interface CellComputeOptions {
  /**
   * ECS Fargate tasks, or EC2 instances of an Auto Scaling group running the image with docker.
   * @default 'fargate'
   */
  readonly kind?: ComputeKind;
  /** Fargate task CPU units (256, 512, 1024, …); not used by the `ec2` kind. */
  readonly cpu: number;
  /** Fargate task memory and the container's hard limit, MiB; not used by the `ec2` kind. */
  readonly memoryMiB: number;
  /**
   * The instance type of the `ec2` kind.
   * @default 't3.medium'
   */
  readonly instanceType?: string;
  /** Tasks or instances: 1 <= min <= desired <= max. */
  readonly capacity: { readonly min: number; readonly desired: number; readonly max: number };
  /**
   * Target CPU utilisation for auto scaling, percent.
   * @default 60
   */
  readonly targetCpuPercent?: number;
}

/** The port a workload listens on when its props give none (aws-cdk's `taskImageOptions` default). */
export const DEFAULT_CONTAINER_PORT = 80;
/** The path the load balancer checks when the workload's props give none (the ALB's default). */
export const DEFAULT_HEALTH_CHECK_PATH = '/';

/** Where the workload finds its database (contract 1: the password is read at connect time). */
export interface WorkloadDatabase {
  readonly host: string;
  readonly port: number;
  readonly name: string;
  /** JSON `username` / `password`, rotated on a schedule. */
  readonly secret: secretsmanager.ISecret;
}

export interface CellComputeProps {
  readonly cellId: string;
  readonly vpc: ec2.IVpc;
  /** Private subnets with egress (image pulls, AWS APIs through NAT). */
  readonly subnets: ec2.SubnetSelection;
  /** What runs the workload, and how much of it. */
  readonly compute: CellComputeOptions;
  /** The image, its port and health path, its own variables and secrets. */
  readonly workload: CellWorkloadOptions;
  /** The fleet's partition key and bucket count: the workload reads the tenant the way the router does. */
  readonly partitionKey: PartitionKeySource;
  readonly bucketCount: number;
  /** Registered targets: IP targets for Fargate, instances for EC2. */
  readonly targetGroup: elbv2.ApplicationTargetGroup;
  /** The only source allowed to reach the containers. */
  readonly loadBalancer: ec2.IConnectable;
  readonly database: WorkloadDatabase;
  readonly workQueue: sqs.IQueue;
  /**
   * The cell's request-path metric alarms (`CellAlarms.deploymentGate`): a deployment or instance
   * refresh rolls back when any of them goes into ALARM. Metric alarms, not the composite: see CellAlarms.
   */
  readonly deploymentAlarms: readonly cloudwatch.IAlarm[];
  /** Encrypts the workload's log group. */
  readonly encryptionKey: kms.IKey;
}

/**
 * Lets the workload read the database secret at connect time: `secretsmanager:GetSecretValue` on
 * that one secret, and decrypt with the secret's key only through Secrets Manager.
 */
function grantSecretRead(secret: secretsmanager.ISecret, grantee: iam.IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['secretsmanager:GetSecretValue'],
      resources: [secret.secretArn],
    }),
  );
  if (secret.encryptionKey) {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['kms:Decrypt'],
        resources: [secret.encryptionKey.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `secretsmanager.${Stack.of(secret).region}.amazonaws.com` } },
      }),
    );
  }
}

/**
 * The workload's environment (the contract in docs/workload.md, "Environment"). No secret values:
 * DB_SECRET_ARN names the secret, which the workload reads for each new connection.
 */
export function workloadEnvironment(props: CellComputeProps): Record<string, string> {
  return {
    CELL_ID: props.cellId,
    PORT: String(props.workload.containerPort ?? DEFAULT_CONTAINER_PORT),
    HEALTH_CHECK_PATH: props.workload.healthCheckPath ?? DEFAULT_HEALTH_CHECK_PATH,
    PARTITION_KEY: JSON.stringify(workloadPartitionKey(props.partitionKey)),
    BUCKET_COUNT: String(props.bucketCount),
    DB_HOST: props.database.host,
    DB_PORT: String(props.database.port),
    DB_NAME: props.database.name,
    DB_SECRET_ARN: props.database.secret.secretArn,
    QUEUE_URL: props.workQueue.queueUrl,
    AWS_REGION: Stack.of(props.workQueue).region,
  };
}

/**
 * Send and consume on the work queue, with exactly the KMS actions SQS needs on the cell key
 * (the CDK queue grants add `kms:ReEncrypt*` and `kms:GenerateDataKey*`, which the workload never uses).
 */
function grantWorkQueue(queue: sqs.IQueue, grantee: iam.IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: [
        'sqs:SendMessage',
        'sqs:ReceiveMessage',
        'sqs:DeleteMessage',
        'sqs:ChangeMessageVisibility',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
      ],
      resources: [queue.queueArn],
    }),
  );
  if (queue.encryptionMasterKey) {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['kms:GenerateDataKey', 'kms:Decrypt'],
        resources: [queue.encryptionMasterKey.keyArn],
      }),
    );
  }
}

/** Whether instances log in to ECR to pull `imageName`: an image of the app's own (an asset, an ECR repository: a token) or a private ECR URI. */
function pullsFromEcr(imageName: string): boolean {
  return Token.isUnresolved(imageName) || /^\d{12}\.dkr\.ecr\./.test(imageName);
}

/**
 * The workload image as an `ec2` instance runs it: its name, with the pull permission ECS gives a
 * task's execution role given to `role` instead. aws-cdk's images (registry, ECR, asset, tarball)
 * read nothing of the container they are bound to but its task definition's execution role, so the
 * instances are granted exactly what a Fargate task's execution role would be, and an asset image
 * is built and published the same way.
 */
function bindForInstances(image: ecs.ContainerImage, scope: Construct, role: iam.IRole): ecs.ContainerImageConfig {
  const instances = { taskDefinition: { obtainExecutionRole: () => role } };
  return image.bind(scope, instances as unknown as ecs.ContainerDefinition);
}

const ECR_LOGIN_ACKNOWLEDGMENT = {
  id: 'AwsSolutions-IAM5[Resource::*]',
  reason: "ecr:GetAuthorizationToken has no resource-level permissions; image pulls themselves are scoped to the image's repository.",
};

/**
 * The cell's compute: an ECS Fargate service (default) or an EC2 Auto Scaling group, sized by the
 * cell shape. Both roll a bad change back on this cell's health alarm: ECS through its deployment
 * circuit breaker and deployment alarms, the ASG through instance refresh alarms.
 */
export class CellCompute extends Construct {
  public readonly connections: ec2.Connections;
  /** The workload's security group: inbound only from the cell's load balancer. */
  public readonly securityGroup: ec2.ISecurityGroup;
  /** The identity the workload's code runs as: the task role (Fargate) or the instance role (EC2). */
  public readonly role: iam.IRole;
  /** Set when the compute kind is `fargate`. */
  public readonly service?: ecs.FargateService;
  /** Set when the compute kind is `ec2`. */
  public readonly autoScalingGroup?: autoscaling.AutoScalingGroup;
  /**
   * The workload's CPU, per minute, averaged over what runs it: the ECS service's `CPUUtilization`
   * (Fargate) or the instances' of the Auto Scaling group (EC2, detailed monitoring). What the
   * scaling policy tracks. An average over what runs says nothing of the room left (under load it
   * sits at the scaling target), so `cellctl capacity` reads it with `running` against `maxCount`.
   */
  public readonly cpu: cloudwatch.IMetric;
  /**
   * How many run, per minute: the service's `RunningTaskCount` (Container Insights, Fargate) or the
   * group's `GroupInServiceInstances` (group metrics, EC2).
   */
  public readonly running: cloudwatch.IMetric;
  /** The most tasks or instances the compute scales out to: its scaling's maximum capacity. */
  public readonly maxCount: number;
  /** What `running` and `maxCount` count. */
  public readonly countUnit: ComputeUnit;
  public readonly logs: logs.LogGroup;
  /** The workload's own variables, and those added with `addEnvironment`. */
  private readonly environment: Record<string, string>;
  /** The workload container (Fargate); the EC2 user data reads `environment` at synth. */
  private container?: ecs.ContainerDefinition;

  constructor(scope: Construct, id: string, props: CellComputeProps) {
    super(scope, id);
    const { min, desired, max } = props.compute.capacity;
    if (!(min >= 1 && min <= desired && desired <= max)) {
      throw new Error(`CellCompute: capacity must satisfy 1 <= min <= desired <= max (got ${min}/${desired}/${max})`);
    }
    const port = props.workload.containerPort ?? DEFAULT_CONTAINER_PORT;
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new Error(`CellCompute: workload.containerPort ${port} is not a port; give 1-65535`);
    const healthCheckPath = props.workload.healthCheckPath ?? DEFAULT_HEALTH_CHECK_PATH;
    if (!healthCheckPath.startsWith('/')) throw new Error(`CellCompute: workload.healthCheckPath \`${healthCheckPath}\` must start with /`);
    const kind = props.compute.kind ?? 'fargate';
    if (kind === 'ec2' && Object.keys(props.workload.secrets ?? {}).length > 0) {
      throw new Error(
        'CellCompute: workload.secrets needs the fargate compute kind (an ec2 instance runs the image with docker, which resolves no ECS secret); read the secret at run time instead, as the workload reads DB_SECRET_ARN',
      );
    }
    this.environment = workloadEnvironment(props);
    for (const [name, value] of Object.entries(props.workload.environment ?? {})) this.addEnvironment(name, value);
    this.logs = new logs.LogGroup(this, 'Logs', {
      // A year: Control Tower's CT.CLOUDWATCH.PR.2, and what an incident review looks back over.
      retention: logs.RetentionDays.ONE_YEAR,
      encryptionKey: props.encryptionKey,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      description: `${props.cellId}: workload; inbound only from the cell ALB`,
    });
    securityGroup.connections.allowFrom(props.loadBalancer, ec2.Port.tcp(port), 'from the cell ALB only');
    this.connections = securityGroup.connections;
    this.securityGroup = securityGroup;

    this.maxCount = max;
    if (kind === 'fargate') {
      this.service = this.fargate(props, port, securityGroup);
      this.role = this.service.taskDefinition.taskRole;
      this.cpu = this.service.metricCpuUtilization({ period: Duration.minutes(1), statistic: 'Average' });
      // The cluster has Container Insights (below), which publishes the service's running tasks.
      this.running = new cloudwatch.Metric({
        namespace: 'ECS/ContainerInsights',
        metricName: 'RunningTaskCount',
        dimensionsMap: { ClusterName: this.service.cluster.clusterName, ServiceName: this.service.serviceName },
        statistic: 'Average',
        period: Duration.minutes(1),
      });
      this.countUnit = 'tasks';
    } else {
      [this.autoScalingGroup, this.role] = this.ec2(props, port, securityGroup);
      this.cpu = new cloudwatch.Metric({
        namespace: 'AWS/EC2',
        metricName: 'CPUUtilization',
        dimensionsMap: { AutoScalingGroupName: this.autoScalingGroup.autoScalingGroupName },
        statistic: 'Average',
        period: Duration.minutes(1),
      });
      // Published because the group collects it (`groupMetrics` below).
      this.running = new cloudwatch.Metric({
        namespace: 'AWS/AutoScaling',
        metricName: 'GroupInServiceInstances',
        dimensionsMap: { AutoScalingGroupName: this.autoScalingGroup.autoScalingGroupName },
        statistic: 'Average',
        period: Duration.minutes(1),
      });
      this.countUnit = 'instances';
    }
  }

  /**
   * Gives the workload one more environment variable (a fleet's own resource's name, for example).
   * Not a secret: the value is in the template. The workload's own variables cannot be replaced.
   */
  public addEnvironment(name: string, value: string): void {
    if (!/^[A-Z_][A-Z0-9_]*$/.test(name))
      throw new Error(`workload environment: \`${name}\` is not a variable name; use upper case letters, digits and _`);
    if (name in this.environment) throw new Error(`workload environment: \`${name}\` is already set; choose another name`);
    this.environment[name] = value;
    this.container?.addEnvironment(name, value);
  }

  private fargate(props: CellComputeProps, port: number, securityGroup: ec2.SecurityGroup): ecs.FargateService {
    const cluster = new ecs.Cluster(this, 'Cluster', {
      vpc: props.vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
      enableFargateCapacityProviders: true,
    });
    const task = new ecs.FargateTaskDefinition(this, 'Task', {
      cpu: props.compute.cpu,
      memoryLimitMiB: props.compute.memoryMiB,
      runtimePlatform: { cpuArchitecture: ecs.CpuArchitecture.X86_64, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
    });
    this.container = task.addContainer('Workload', {
      image: props.workload.image,
      // A hard limit (Control Tower CT.ECS.PR.7): a leaking workload is stopped at the task's size.
      memoryLimitMiB: props.compute.memoryMiB,
      portMappings: [{ containerPort: port }],
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logs, streamPrefix: props.cellId }),
      // The database password is not among the secrets: ECS resolves them only when a task starts, and the password
      // rotates under running tasks. The workload reads DB_SECRET_ARN at connect time (docs/workload.md, "Database credentials and rotation").
      environment: { ...this.environment },
      secrets: props.workload.secrets ? { ...props.workload.secrets } : undefined,
      readonlyRootFilesystem: false,
    });
    for (const [id, reason] of Object.entries({
      'ControlTower::CT.ECS.PR.3':
        "The user comes from the fleet's workload image (`workload.image`, any image): the example's reference workload declares `USER node`, so it already runs as non-root; the task definition does not repeat a user name that another image may not have.",
      'ControlTower::CT.ECS.PR.6':
        "Whether the workload can run on a read-only root is the image's property: the reference workload runs through tsx, which writes a compile cache under /tmp and exits on a read-only root unless TSX_DISABLE_CACHE=1 (checked).",
    }))
      Validations.of(task).acknowledge({ id, reason });
    Validations.of(task).acknowledge({
      id: 'AwsSolutions-ECS2',
      reason:
        'The environment holds only non-secret identifiers (cell id, endpoints, queue URL, the secret ARN); the workload reads the database password from Secrets Manager at connect time.',
    });
    grantSecretRead(props.database.secret, task.taskRole);
    if (pullsFromEcr(this.container.imageName)) Validations.of(task.obtainExecutionRole()).acknowledge(ECR_LOGIN_ACKNOWLEDGMENT);
    grantWorkQueue(props.workQueue, task.taskRole);

    const service = new ecs.FargateService(this, 'Service', {
      cluster,
      taskDefinition: task,
      desiredCount: props.compute.capacity.desired,
      vpcSubnets: props.subnets,
      securityGroups: [securityGroup],
      assignPublicIp: false,
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      circuitBreaker: { enable: true, rollback: true },
      deploymentAlarms: { alarmNames: props.deploymentAlarms.map((a) => a.alarmName), behavior: ecs.AlarmBehavior.ROLLBACK_ON_ALARM },
      propagateTags: ecs.PropagatedTagSource.SERVICE,
      enableECSManagedTags: true,
      healthCheckGracePeriod: Duration.seconds(60),
    });
    // ECS checks the alarms exist when a deployment starts: the Refs of their names above order them
    // first (an explicit DependsOn would repeat it; cfn-lint W3005).
    service.attachToApplicationTargetGroup(props.targetGroup);
    const scaling = service.autoScaleTaskCount({ minCapacity: props.compute.capacity.min, maxCapacity: props.compute.capacity.max });
    scaling.scaleOnCpuUtilization('Cpu', { targetUtilizationPercent: props.compute.targetCpuPercent ?? 60 });
    return service;
  }

  private ec2(props: CellComputeProps, port: number, securityGroup: ec2.SecurityGroup): [autoscaling.AutoScalingGroup, iam.IRole] {
    const region = Stack.of(this).region;
    // Its commands follow once the image is bound to the instance role (below).
    const userData = ec2.UserData.forLinux();
    const role = new iam.Role(this, 'InstanceRole', {
      assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
      description: `${props.cellId}: workload instances`,
    });
    const launchTemplate = new ec2.LaunchTemplate(this, 'LaunchTemplate', {
      role,
      instanceType: new ec2.InstanceType(props.compute.instanceType ?? 't3.medium'),
      machineImage: ec2.MachineImage.latestAmazonLinux2023(),
      userData,
      securityGroup,
      requireImdsv2: true,
      // The workload runs in a container (docker bridge: one more network hop) and gets the instance
      // role's credentials from IMDSv2; a PUT response hop limit of 1 would stop the token at the host
      // (EC2 user guide, "Configure the instance metadata options for new instances": hop limit 2 for containers).
      httpPutResponseHopLimit: 2,
      detailedMonitoring: true,
      blockDevices: [
        { deviceName: '/dev/xvda', volume: ec2.BlockDeviceVolume.ebs(30, { encrypted: true, volumeType: ec2.EbsDeviceVolumeType.GP3 }) },
      ],
    });
    Validations.of(launchTemplate).acknowledge({
      id: 'ControlTower::CT.EC2.PR.2',
      reason:
        "Hop limit 2 is what lets the workload container (docker bridge, one hop more) fetch an IMDSv2 token for the instance role; IMDSv2 stays required, and the instance runs only the cell's own workload container.",
    });
    const asg = new autoscaling.AutoScalingGroup(this, 'Fleet', {
      vpc: props.vpc,
      vpcSubnets: props.subnets,
      launchTemplate,
      minCapacity: props.compute.capacity.min,
      maxCapacity: props.compute.capacity.max,
      // Instances in service, one point a minute (no charge for group metrics): with their CPU, the
      // share of the group's maximum in use that `cellctl capacity` judges.
      groupMetrics: [new autoscaling.GroupMetrics(autoscaling.GroupMetric.IN_SERVICE_INSTANCES)],
      healthChecks: autoscaling.HealthChecks.withAdditionalChecks({
        additionalTypes: [autoscaling.AdditionalHealthCheckType.ELB],
        gracePeriod: Duration.minutes(3),
      }),
      updatePolicy: autoscaling.UpdatePolicy.instanceRefresh({
        strategy: autoscaling.InstanceRefreshStrategy.ROLLING,
        minHealthyPercentage: 100,
        maxHealthyPercentage: 200,
        instanceWarmup: Duration.minutes(3),
        // Instance refresh takes at most 10 alarms (Auto Scaling API Reference, AlarmSpecification).
        alarms: [...props.deploymentAlarms],
      }),
    });
    // ARC zonal shift and autoshift move the group's launches out of a shifted zone, and while the zone
    // is impaired its instances failing health checks are not replaced into it (Auto Scaling's
    // "Availability Zone impairment policy"; docs/operating.md, "Draining a zone").
    (asg.node.defaultChild as autoscaling.CfnAutoScalingGroup).availabilityZoneImpairmentPolicy = {
      zonalShiftEnabled: true,
      impairedZoneHealthCheckBehavior: 'IgnoreUnhealthy',
    };
    grantSecretRead(props.database.secret, role);
    const image = bindForInstances(props.workload.image, this, role).imageName;
    const ecr = pullsFromEcr(image);
    if (ecr) Validations.of(role).acknowledge(ECR_LOGIN_ACKNOWLEDGMENT);
    const registry = Token.isUnresolved(image) ? Fn.select(0, Fn.split('/', image)) : image.split('/')[0];
    // The instance runs the same image as the Fargate kind, with the same environment: no secret
    // is read at boot (the password rotates under running instances); the workload reads it at connect time.
    const env = Lazy.string({
      produce: () =>
        Object.entries(this.environment)
          .map(([k, v]) => `-e ${k}='${v}'`)
          .join(' '),
    });
    userData.addCommands(
      'set -euo pipefail',
      'dnf install -y docker',
      'systemctl enable --now docker',
      ...(ecr ? [`aws ecr get-login-password --region ${region} | docker login --username AWS --password-stdin ${registry}`] : []),
      `docker run -d --restart always --name workload -p ${port}:${port} ` +
        `--log-driver awslogs --log-opt awslogs-region=${region} --log-opt awslogs-group=${this.logs.logGroupName} ` +
        `${env} ${image}`,
    );
    this.logs.grantWrite(role);
    grantWorkQueue(props.workQueue, role);
    asg.attachToApplicationTargetGroup(props.targetGroup);
    asg.scaleOnCpuUtilization('Cpu', { targetUtilizationPercent: props.compute.targetCpuPercent ?? 60 });
    Validations.of(asg).acknowledge({
      id: 'ControlTower::CT.AUTOSCALING.PR.1',
      reason:
        'The group spans every zone of the cell through its subnets (VPCZoneIdentifier, one per zone); the fleet names zones by AZ ID, which the AvailabilityZones property this hook reads does not take.',
    });
    Validations.of(asg).acknowledge({
      id: 'AwsSolutions-AS3',
      reason: 'Scaling events are watched through the cell alarms and dashboard; a per-cell SNS topic for them would have no subscriber.',
    });
    Validations.of(asg).acknowledge({
      id: 'ControlTower::CT.AUTOSCALING.PR.6',
      reason:
        'A cell shape is load-tested on one instance type (`shapes.<name>.instanceType`); its tested limits hold for that type only, so mixing types would change the capacity the cell is placed against.',
    });
    return [asg, role];
  }
}
