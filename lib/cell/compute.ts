import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
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
import { CellShape } from '../fleet';

export interface CellComputeProps {
  readonly cellId: string;
  readonly vpc: ec2.IVpc;
  /** Private subnets with egress (image pulls, AWS APIs through NAT). */
  readonly subnets: ec2.SubnetSelection;
  readonly shape: CellShape;
  readonly image: string;
  readonly containerPort: number;
  /** Registered targets: IP targets for Fargate, instances for EC2. */
  readonly targetGroup: elbv2.ApplicationTargetGroup;
  /** The only source allowed to reach the containers. */
  readonly loadBalancer: ec2.IConnectable;
  readonly databaseSecret: secretsmanager.ISecret;
  readonly workQueue: sqs.IQueue;
  /**
   * The cell's request-path metric alarms (`CellAlarms.deploymentGate`): a deployment or instance
   * refresh rolls back when any of them goes into ALARM. Metric alarms, not the composite: see CellAlarms.
   */
  readonly deploymentAlarms: readonly cloudwatch.IAlarm[];
  /** Encrypts the workload's log group. */
  readonly encryptionKey: kms.IKey;
  /**
   * Target CPU utilisation for auto scaling, percent.
   * @default 60
   */
  readonly targetCpuPercent?: number;
}

/**
 * Send and consume on the work queue, with exactly the KMS actions SQS needs on the cell key
 * (the CDK queue grants add `kms:ReEncrypt*` and `kms:GenerateDataKey*`, which the workload never uses).
 */
function grantWorkQueue(queue: sqs.IQueue, grantee: iam.IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({
    actions: ['sqs:SendMessage', 'sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'],
    resources: [queue.queueArn],
  }));
  if (queue.encryptionMasterKey) {
    grantee.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({
      actions: ['kms:GenerateDataKey', 'kms:Decrypt'],
      resources: [queue.encryptionMasterKey.keyArn],
    }));
  }
}

/**
 * The cell's compute: an ECS Fargate service (default) or an EC2 Auto Scaling group, sized by the
 * cell shape. Both roll a bad change back on this cell's health alarm: ECS through its deployment
 * circuit breaker and deployment alarms, the ASG through instance refresh alarms.
 */
export class CellCompute extends Construct {
  public readonly connections: ec2.Connections;
  /** Set when the shape's compute is `fargate`. */
  public readonly service?: ecs.FargateService;
  /** Set when the shape's compute is `ec2`. */
  public readonly autoScalingGroup?: autoscaling.AutoScalingGroup;
  public readonly logs: logs.LogGroup;

  constructor(scope: Construct, id: string, props: CellComputeProps) {
    super(scope, id);
    const { min, desired, max } = props.shape.capacity;
    if (!(min >= 1 && min <= desired && desired <= max)) {
      throw new Error(`CellCompute: capacity must satisfy 1 <= min <= desired <= max (got ${min}/${desired}/${max})`);
    }
    this.logs = new logs.LogGroup(this, 'Logs', {
      retention: logs.RetentionDays.THREE_MONTHS,
      encryptionKey: props.encryptionKey,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      description: `${props.cellId}: workload; inbound only from the cell ALB`,
    });
    securityGroup.connections.allowFrom(props.loadBalancer, ec2.Port.tcp(props.containerPort), 'from the cell ALB only');
    this.connections = securityGroup.connections;

    if (props.shape.compute === 'fargate') {
      this.service = this.fargate(props, securityGroup);
    } else {
      this.autoScalingGroup = this.ec2(props, securityGroup);
    }
  }

  private fargate(props: CellComputeProps, securityGroup: ec2.SecurityGroup): ecs.FargateService {
    const cluster = new ecs.Cluster(this, 'Cluster', {
      vpc: props.vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
      enableFargateCapacityProviders: true,
    });
    const task = new ecs.FargateTaskDefinition(this, 'Task', {
      cpu: props.shape.cpu,
      memoryLimitMiB: props.shape.memoryMiB,
      runtimePlatform: { cpuArchitecture: ecs.CpuArchitecture.X86_64, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
    });
    task.addContainer('Workload', {
      image: ecs.ContainerImage.fromRegistry(props.image),
      portMappings: [{ containerPort: props.containerPort }],
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logs, streamPrefix: props.cellId }),
      environment: { CELL_ID: props.cellId, WORK_QUEUE_URL: props.workQueue.queueUrl },
      secrets: {
        DB_HOST: ecs.Secret.fromSecretsManager(props.databaseSecret, 'host'),
        DB_PORT: ecs.Secret.fromSecretsManager(props.databaseSecret, 'port'),
        DB_USER: ecs.Secret.fromSecretsManager(props.databaseSecret, 'username'),
        DB_PASSWORD: ecs.Secret.fromSecretsManager(props.databaseSecret, 'password'),
      },
      readonlyRootFilesystem: false,
    });
    Validations.of(task).acknowledge({
      id: 'AwsSolutions-ECS2',
      reason: 'The environment holds only non-secret identifiers (cell id, queue URL); database credentials come from Secrets Manager.',
    });
    grantWorkQueue(props.workQueue, task.taskRole);

    const service = new ecs.FargateService(this, 'Service', {
      cluster,
      taskDefinition: task,
      desiredCount: props.shape.capacity.desired,
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
    // ECS checks the alarms exist when a deployment starts.
    for (const alarm of props.deploymentAlarms) service.node.addDependency(alarm);
    service.attachToApplicationTargetGroup(props.targetGroup);
    const scaling = service.autoScaleTaskCount({ minCapacity: props.shape.capacity.min, maxCapacity: props.shape.capacity.max });
    scaling.scaleOnCpuUtilization('Cpu', { targetUtilizationPercent: props.targetCpuPercent ?? 60 });
    return service;
  }

  private ec2(props: CellComputeProps, securityGroup: ec2.SecurityGroup): autoscaling.AutoScalingGroup {
    const region = Stack.of(this).region;
    const userData = ec2.UserData.forLinux();
    // The instance runs the same image as the Fargate shape; credentials are read at boot, never baked in.
    userData.addCommands(
      'set -euo pipefail',
      'dnf install -y docker jq',
      'systemctl enable --now docker',
      `SECRET=$(aws secretsmanager get-secret-value --region ${region} --secret-id ${props.databaseSecret.secretArn} --query SecretString --output text)`,
      `docker run -d --restart always --name workload -p ${props.containerPort}:${props.containerPort} ` +
        `--log-driver awslogs --log-opt awslogs-region=${region} --log-opt awslogs-group=${this.logs.logGroupName} ` +
        `-e CELL_ID=${props.cellId} -e WORK_QUEUE_URL=${props.workQueue.queueUrl} ` +
        '-e DB_HOST="$(jq -r .host <<<"$SECRET")" -e DB_PORT="$(jq -r .port <<<"$SECRET")" ' +
        '-e DB_USER="$(jq -r .username <<<"$SECRET")" -e DB_PASSWORD="$(jq -r .password <<<"$SECRET")" ' +
        props.image,
    );
    const role = new iam.Role(this, 'InstanceRole', {
      assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
      description: `${props.cellId}: workload instances`,
    });
    const launchTemplate = new ec2.LaunchTemplate(this, 'LaunchTemplate', {
      role,
      instanceType: new ec2.InstanceType(props.shape.instanceType ?? 't3.medium'),
      machineImage: ec2.MachineImage.latestAmazonLinux2023(),
      userData,
      securityGroup,
      requireImdsv2: true,
      detailedMonitoring: true,
      blockDevices: [{ deviceName: '/dev/xvda', volume: ec2.BlockDeviceVolume.ebs(30, { encrypted: true, volumeType: ec2.EbsDeviceVolumeType.GP3 }) }],
    });
    const asg = new autoscaling.AutoScalingGroup(this, 'Fleet', {
      vpc: props.vpc,
      vpcSubnets: props.subnets,
      launchTemplate,
      minCapacity: props.shape.capacity.min,
      maxCapacity: props.shape.capacity.max,
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
    props.databaseSecret.grantRead(role);
    this.logs.grantWrite(role);
    grantWorkQueue(props.workQueue, role);
    for (const alarm of props.deploymentAlarms) asg.node.addDependency(alarm);
    asg.attachToApplicationTargetGroup(props.targetGroup);
    asg.scaleOnCpuUtilization('Cpu', { targetUtilizationPercent: props.targetCpuPercent ?? 60 });
    Validations.of(asg).acknowledge({
      id: 'AwsSolutions-AS3',
      reason: 'Scaling events are watched through the cell alarms and dashboard; a per-cell SNS topic for them would have no subscriber.',
    });
    return asg;
  }
}
