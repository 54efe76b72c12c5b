import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as autoscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { repositoryImageAsset } from '../shared/image-asset';
import { connectionLimits, READY_PORT, ROUTER_TASK_MEMORY_MIB } from '../../runtime/router/haproxy-config';
import { RouterRouting, routerStateFiles, routerTaskConfig, ROUTER_TASK_DEFAULTS } from '../../runtime/router/task-config';
import { grantMappingRead, grantServedReport } from './mapping-bucket';

export const ROUTER_PORT = ROUTER_TASK_DEFAULTS.port;
/**
 * HAProxy's readiness (the NLB's health check): 200 while a mapping is in force, and 503 while the
 * task is full and the agent found at least half of the group's other tasks healthy (FullReadinessGate).
 */
export { READY_PORT };
/** The agent's own health endpoint (`/healthz`, `/ready`), for its container health check only. */
export const AGENT_HEALTH_PORT = 8082;
/**
 * ECS waits this long after SIGUSR1 (HAProxy's soft stop: listeners close, in-flight requests
 * finish) before SIGKILL; HAProxy's `hard-stop-after` (25 s) ends what is left a little earlier.
 */
export const HAPROXY_STOP_TIMEOUT = Duration.seconds(30);
/**
 * How long the NLB keeps a deregistered task's open connections (a stopping task, a scale-in):
 * the stop timeout, so ECS does not stop the task before HAProxy's soft stop ends.
 */
export const ROUTER_DEREGISTRATION_DELAY = HAPROXY_STOP_TIMEOUT;
/**
 * The task volume HAProxy and the agent share (map files, server state, last-known-good). The
 * HAProxy image declares it a VOLUME so ECS copies the generated maps into it, owned by the user
 * both containers run as.
 */
export const STATE_DIR = ROUTER_TASK_DEFAULTS.stateDir;
/** HAProxy's runtime API, which the agent drives over the task's shared localhost. */
export const HAPROXY_ADMIN = ROUTER_TASK_DEFAULTS.adminSocket;
/** uid:gid of the official HAProxy image's `haproxy` user; the agent container runs as it too. */
export const ROUTER_USER = '99:99';

export interface RouterGroupProps {
  readonly name: string;
  readonly cluster: ecs.ICluster;
  readonly subnets: ec2.SubnetSelection;
  readonly securityGroup: ec2.ISecurityGroup;
  readonly tasks: number;
  /**
   * How the group's HAProxy routes (partition key, bucket count, slots, zones, per-cell limits, the
   * cells' health-check path): rendered into its configuration at synth, with the task's ports,
   * state directory and connection limit, and given to the agent (slots, zones, cellMaxConn).
   */
  readonly routing: RouterRouting;
  /** RouterGroupsStackProps.elsewhere: given to the agent (`ELSEWHERE`). @default - none */
  readonly elsewhere?: Readonly<Record<string, readonly string[]>>;
  /** Upper bound for auto scaling. @default 4 × tasks */
  readonly maxTasks?: number;
  readonly targetGroup: elbv2.INetworkTargetGroup;
  readonly mappingBucket: string;
  /**
   * The task role's name (routerTaskRoleName): the region's mapping bucket policy names it as the
   * only writer of this group's `served/` reports.
   */
  readonly taskRoleName: string;
  /**
   * The agent also emits each cell's requests and 5xx by `Cell` alone (what the routers' per-cell
   * alarms read when the region has more groups than one alarm can sum: lanes).
   * @default false
   */
  readonly metricsAcrossGroups?: boolean;
  /** Region of the mapping bucket (routers in other regions read it cross-region). */
  readonly mappingBucketRegion: string;
  /**
   * The task's images.
   * @default built from this repository's images/: HAProxy with `haproxyConfig` (rendered from
   * `routing`), the agent bundled from bin/router-agent.ts
   */
  readonly images?: { readonly haproxy?: ecs.ContainerImage; readonly agent?: ecs.ContainerImage };
  /**
   * The group's metric alarms its deployments roll back on (ECS `DeploymentAlarms`): metric alarms,
   * not the group's composite health alarm, which no ECS reference says a deployment accepts (the
   * cells' deployment alarms are metric alarms for the same reason, CellAlarms).
   */
  readonly deploymentAlarms: readonly cloudwatch.IAlarm[];
  /**
   * The router VPC's cell-endpoint subnets by AZ ID, then its task subnets, as the agent's
   * ZONE_NETWORKS (JSON, or a token resolving to it at deploy): each cell's server per zone, weighted
   * by the region's zones document; a task's own zone (router.zoneAffinity) by its subnet.
   * @default - servers by address, no zone weights
   */
  readonly zoneNetworks?: string;
}

/**
 * One router group: a Fargate service whose tasks run HAProxy and the mapping agent side by side
 * (shared localhost and a shared state volume). The task role reads only this group's mapping
 * pointer and the immutable versions. Circuit breaker and deployment alarms roll a bad deploy back.
 */
export class RouterGroup extends Construct {
  public readonly service: ecs.FargateService;
  public readonly taskDefinition: ecs.FargateTaskDefinition;
  public readonly scaling: ecs.ScalableTaskCount;
  /**
   * The HAProxy configuration the group's image holds, rendered at synth from `routing` and the
   * task's own ports, state directory and connection limit (the CellIsolation pack audits it).
   */
  public readonly haproxyConfig: string;

  constructor(scope: Construct, id: string, props: RouterGroupProps) {
    super(scope, id);
    if (!Number.isInteger(props.tasks) || props.tasks < 1)
      throw new Error(`RouterGroup ${props.name}: tasks ${props.tasks} must be a positive integer`);
    // A year: Control Tower's CT.CLOUDWATCH.PR.2, and what an incident review looks back over.
    const logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.ONE_YEAR, removalPolicy: RemovalPolicy.RETAIN });
    Validations.of(logGroup).acknowledge({
      id: 'ControlTower::CT.CLOUDWATCH.PR.3',
      reason:
        'Router logs hold HAProxy failures and agent events (hashed tenant keys, no bodies); CloudWatch Logs encrypts them at rest with its own key. A customer key would need a key policy for CloudWatch Logs in every router region.',
    });
    // HAProxy's maxconn and the file-descriptor limit follow from the task's memory (connectionLimits).
    const limits = connectionLimits(ROUTER_TASK_MEMORY_MIB);
    const leaves = props.routing.fullTaskLeaves !== false;
    this.haproxyConfig = routerTaskConfig(props.routing, {
      port: ROUTER_PORT,
      readyPort: READY_PORT,
      stateDir: STATE_DIR,
      adminSocket: HAPROXY_ADMIN,
      maxConn: limits.maxConn,
    });
    // Same routing, same configuration, same image: every group of a fleet shares one asset.
    const images = {
      haproxy:
        props.images?.haproxy ??
        ecs.ContainerImage.fromDockerImageAsset(
          repositoryImageAsset(this, 'HaproxyImage', 'router-haproxy', routerStateFiles(this.haproxyConfig, props.routing.partitionKey)),
        ),
      agent: props.images?.agent ?? ecs.ContainerImage.fromDockerImageAsset(repositoryImageAsset(this, 'AgentImage', 'router-agent')),
    };
    const taskRole = new iam.Role(this, 'TaskRole', {
      roleName: props.taskRoleName,
      description: `Router group ${props.name}: reads its mapping pointer, reports the version its tasks serve`,
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'),
    });
    this.taskDefinition = new ecs.FargateTaskDefinition(this, 'Task', { cpu: 1024, memoryLimitMiB: ROUTER_TASK_MEMORY_MIB, taskRole });
    Validations.of(this.taskDefinition).acknowledge({
      id: 'ControlTower::CT.ECS.PR.7',
      reason:
        "The task's memory (ROUTER_TASK_MEMORY_MIB) is the hard limit Fargate enforces on both containers together, and HAProxy's maxconn is derived from it (connectionLimits); a per-container split would have to follow that calculation.",
    });
    this.taskDefinition.addVolume({ name: 'state' });
    this.taskDefinition.addVolume({ name: 'agent-tmp' });
    const haproxy = this.taskDefinition.addContainer('haproxy', {
      image: images.haproxy,
      essential: true,
      user: ROUTER_USER,
      portMappings: [{ containerPort: ROUTER_PORT }, { containerPort: READY_PORT }],
      logging: ecs.LogDrivers.awsLogs({ logGroup, streamPrefix: `${props.name}-haproxy` }),
      ulimits: [{ name: ecs.UlimitName.NOFILE, softLimit: limits.nofile, hardLimit: limits.nofile }],
      // HAProxy writes only to the state volume.
      readonlyRootFilesystem: true,
      stopTimeout: HAPROXY_STOP_TIMEOUT,
    });
    haproxy.addMountPoints({ containerPath: STATE_DIR, sourceVolume: 'state', readOnly: false });
    // The agent is not essential: when it dies, HAProxy keeps serving the maps it has and ECS restarts
    // the agent in place, which re-reads the last-known-good from the shared volume. An essential
    // agent would take HAProxy and every open connection down with it. Exit code 2 is a
    // configuration error that a restart cannot fix; the task then fails its readiness check
    // (served by the agent) and ECS replaces it, as it does when the agent dies within a minute.
    const agent = this.taskDefinition.addContainer('agent', {
      image: images.agent,
      essential: false,
      enableRestartPolicy: true,
      restartAttemptPeriod: Duration.seconds(60),
      restartIgnoredExitCodes: [2],
      user: ROUTER_USER,
      logging: ecs.LogDrivers.awsLogs({ logGroup, streamPrefix: `${props.name}-agent` }),
      // The agent writes the state volume and nothing else (one bundled file, no compiler cache).
      readonlyRootFilesystem: true,
      environment: {
        MAPPING_BUCKET: props.mappingBucket,
        ROUTER_GROUP: props.name,
        AWS_REGION: props.mappingBucketRegion,
        STATE_DIR,
        HAPROXY_ADMIN,
        SLOTS: String(props.routing.slots),
        ZONES: String(props.routing.zones),
        CELL_MAX_CONN: String(props.routing.cellMaxConn),
        HEALTH_PORT: String(AGENT_HEALTH_PORT),
        ...(props.metricsAcrossGroups ? { METRICS_ACROSS_GROUPS: 'true' } : {}),
        // Connection use against what HAProxy serves, not its frontend limit (which adds the overflow it only answers 503 in).
        CONNECTION_LIMIT: String(limits.maxConn),
        // A full task may leave its target group's rotation while half of the group stays in.
        ...(leaves ? { TARGET_GROUP_ARN: props.targetGroup.targetGroupArn } : {}),
        // The zones: the cell endpoints' subnets by AZ ID, and this region's zones document (zones/<REGION>.json).
        REGION: Stack.of(this).region,
        ...(props.zoneNetworks ? { ZONE_NETWORKS: props.zoneNetworks } : {}),
        // router.zoneAffinity: each cell's server in the task's own zone first.
        ...(props.routing.zoneAffinity === 'own-zone' ? { ZONE_AFFINITY: 'own-zone' } : {}),
        // router.reach: other regions' cells by their region's URL, for when their link is not here.
        ...(props.elsewhere && Object.keys(props.elsewhere).length > 0 ? { ELSEWHERE: JSON.stringify(props.elsewhere) } : {}),
      },
    });
    agent.addMountPoints({ containerPath: STATE_DIR, sourceVolume: 'state', readOnly: false });
    agent.addMountPoints({ containerPath: '/tmp', sourceVolume: 'agent-tmp', readOnly: false });
    agent.addContainerDependencies({ container: haproxy, condition: ecs.ContainerDependencyCondition.START });
    Validations.of(this.taskDefinition).acknowledge({
      id: 'AwsSolutions-ECS2',
      reason:
        'The agent environment holds only the bucket name, group name, region, local paths and which cells are served from other regions (their public URLs); the task role supplies credentials.',
    });
    grantMappingRead(this.taskDefinition.taskRole, props.mappingBucket, props.name, Stack.of(this).region);
    grantServedReport(this.taskDefinition.taskRole, props.mappingBucket, props.name);
    // The group's target health, for a full task's readiness (FullReadinessGate). DescribeTargetHealth
    // takes no resource (Service Authorization Reference, Elastic Load Balancing V2).
    if (leaves) {
      taskRole.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['elasticloadbalancing:DescribeTargetHealth'], resources: ['*'] }));
      Validations.of(taskRole).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          "elasticloadbalancing:DescribeTargetHealth supports no resource-level permissions; it reads which targets are healthy (what a full task's readiness waits on) and changes nothing.",
      });
    }
    Validations.of(this.taskDefinition.obtainExecutionRole()).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ecr:GetAuthorizationToken has no resource-level permissions; image pulls themselves are scoped to the two router repositories.',
    });

    if (props.deploymentAlarms.length === 0)
      throw new Error(`RouterGroup ${props.name}: deploymentAlarms is empty; a deployment must roll back on the group's own metric alarms`);
    this.service = new ecs.FargateService(this, 'Service', {
      cluster: props.cluster,
      taskDefinition: this.taskDefinition,
      desiredCount: props.tasks,
      vpcSubnets: props.subnets,
      securityGroups: [props.securityGroup],
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      circuitBreaker: { enable: true, rollback: true },
      deploymentAlarms: { alarmNames: props.deploymentAlarms.map((a) => a.alarmName), behavior: ecs.AlarmBehavior.ROLLBACK_ON_ALARM },
      healthCheckGracePeriod: Duration.seconds(30),
      propagateTags: ecs.PropagatedTagSource.SERVICE,
      enableECSManagedTags: true,
    });
    props.targetGroup.addTarget(this.service.loadBalancerTarget({ containerName: 'haproxy', containerPort: ROUTER_PORT }));
    this.scaling = scaleOnConnectionUse(this.service, props.name, props.tasks, props.maxTasks ?? props.tasks * 4);
  }
}

/** Target tracking keeps the group's average task at this share of its connection limit. */
export const CONNECTION_USE_TARGET_PERCENT = 60;
/**
 * Step scaling on the group's busiest task: one more task from here, two more from
 * `CONNECTION_USE_STEPS[1]`. Both fire before HAProxy's readiness turns false (90% of the limit,
 * see lib/runtime/router/haproxy-config), so new tasks come while every task still takes new flows.
 */
export const CONNECTION_USE_STEPS = [75, 85] as const;

/**
 * The group's per-task connection use (`ConnectionUsePercent`: HAProxy's current client connections
 * against its `maxconn`, one sample per task per minute from the agent's EMF line, dimension
 * `RouterGroup`). Average is the typical task; Maximum the busiest one.
 */
export function connectionUseMetric(group: string, statistic: 'Average' | 'Maximum'): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: 'CellRouter',
    metricName: 'ConnectionUsePercent',
    dimensionsMap: { RouterGroup: group },
    statistic,
    period: Duration.minutes(1),
  });
}

/**
 * Scaling per task, not per load balancer: CPU and the average task's connection use are tracked,
 * and a step policy on the busiest task adds tasks before any task reaches its readiness cut-off.
 * Every signal is this group's own tasks (the NLB's ActiveFlowCount counts every group, so a
 * group's step on it could fire only once the whole load balancer is busy). Scale-in comes from target
 * tracking only, which scales in slowly and never below `tasks`.
 */
export function scaleOnConnectionUse(service: ecs.FargateService, group: string, minTasks: number, maxTasks: number): ecs.ScalableTaskCount {
  if (!Number.isInteger(maxTasks) || maxTasks < minTasks)
    throw new Error(`RouterGroup ${group}: maxTasks ${maxTasks} must be an integer of at least tasks (${minTasks})`);
  const scaling = service.autoScaleTaskCount({ minCapacity: minTasks, maxCapacity: maxTasks });
  scaling.scaleOnCpuUtilization('Cpu', { targetUtilizationPercent: 50 });
  scaling.scaleToTrackCustomMetric('ConnectionUse', {
    metric: connectionUseMetric(group, 'Average'),
    targetValue: CONNECTION_USE_TARGET_PERCENT,
    scaleOutCooldown: Duration.minutes(1),
    scaleInCooldown: Duration.minutes(5),
  });
  const [one, two] = CONNECTION_USE_STEPS;
  scaling.scaleOnMetric('BusiestTask', {
    metric: connectionUseMetric(group, 'Maximum'),
    scalingSteps: [
      { upper: one, change: 0 },
      { lower: one, change: +1 },
      { lower: two, change: +2 },
    ],
    adjustmentType: autoscaling.AdjustmentType.CHANGE_IN_CAPACITY,
    evaluationPeriods: 2,
    datapointsToAlarm: 2,
    cooldown: Duration.minutes(2),
  });
  return scaling;
}

/**
 * What the router's HAProxy relies on in its target group:
 * - PROXY protocol v2, because HAProxy's bind has `accept-proxy` (the two go together): IP targets
 *   behind a TCP or TLS listener do not see the client's address otherwise (Elastic Load Balancing,
 *   Network Load Balancers, "Target groups": client IP preservation and proxy protocol).
 * - Connections to a target that turns unhealthy are not terminated
 *   (`target_health_state.unhealthy.connection_termination.enabled` false; it is true by default):
 *   a task that turns unready (no mapping in force) must stop taking new flows only.
 * - The health check is HAProxy's readiness (`READY_PORT`), which survives an agent restart.
 */
export function configureRouterTargetGroup(targetGroup: elbv2.INetworkTargetGroup): void {
  if (!(targetGroup instanceof elbv2.NetworkTargetGroup))
    throw new Error('RouterGroup: the target group must be an elbv2.NetworkTargetGroup defined in this app');
  targetGroup.setAttribute('proxy_protocol_v2.enabled', 'true');
  targetGroup.setAttribute('target_health_state.unhealthy.connection_termination.enabled', 'false');
  targetGroup.configureHealthCheck({
    protocol: elbv2.Protocol.HTTP,
    port: String(READY_PORT),
    path: '/ready',
    interval: Duration.seconds(10),
    healthyThresholdCount: 2,
    unhealthyThresholdCount: 2,
  });
}
