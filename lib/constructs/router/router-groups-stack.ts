import { Annotations, Aws, Duration, Fn, Stack, StackProps, Tags } from 'aws-cdk-lib';
import * as arczonalshift from 'aws-cdk-lib/aws-arczonalshift';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import {
  mappingBucketParameter,
  routerAlarmTopicName,
  routerGroupHealthAlarmName,
  routerGroupsDeletionProtectorRoleName,
  RouterGroupsPart,
  routerGroupsStackName,
  routerParameters,
  routerServiceName,
  routerStackName,
  routerTaskRoleName,
} from '../../domain/names';
import { RouterRouting } from '../../runtime/router/task-config';
import { DeletionProtectionAccess } from '../shared/deletion-protection-access';
import { connectionUseMetric, RouterGroup } from './router-group';
import { LaneAliasTarget, RouterLaneEntry, ShardRecords } from './router-lane';

/** The CloudWatch namespace of the router agent's metrics (EMF). */
export const ROUTER_METRICS_NAMESPACE = 'CellRouter';

/** The `<group>-connection-use` alarm pages when the busiest task stays above this share of its limit. */
export const CONNECTION_USE_ALARM_PERCENT = 80;

/** One router group's service. */
export interface RouterGroupServiceSettings {
  readonly name: string;
  /** Tasks the service keeps running (scaling adds more). */
  readonly tasks: number;
  /**
   * With lanes: the lane this group is, which brings its own NLB and target group into this stack.
   * @default - no lane: the group's target group is the region's NLB's (RouterStack)
   */
  readonly lane?: number;
}

/** With lanes (docs/lanes.md): what a group stack needs beyond its groups. */
export interface RouterLanesSettings {
  /** The pipeline's account: its protect step assumes this stack's deletion-protector role to protect the lane NLBs. */
  readonly toolingAccount: string;
  /** @default - a TCP listener on port 80 */
  readonly certificateArn?: string;
  /**
   * The public zone of the shard names, given to the stack that holds the last lanes (the rest part),
   * which names every shard of the region (lane 1's NLB read from its SSM parameters).
   * @default - no shard names
   */
  readonly hostedZone?: { readonly id: string; readonly name: string };
  /** Every shard (lane numbers), for the shard names. */
  readonly shards: readonly (readonly number[])[];
}

export interface RouterGroupsStackProps extends Omit<StackProps, 'env'> {
  /** The fleet's name: every name the stack stamps starts with it (lib/domain/names). */
  readonly app: string;
  readonly region: string;
  /** The router account, where the region's RouterStack is. */
  readonly account: string;
  /** The region's zones, as the RouterStack's (the task subnets come one per zone). */
  readonly availabilityZones: readonly string[];
  /** Which of the region's group stacks this is: it names the stack. */
  readonly part: RouterGroupsPart;
  /** The part's groups, in rollout order (the canary part holds the first group alone). */
  readonly groups: readonly RouterGroupServiceSettings[];
  /** How the router tasks route: partition key, buckets, slots, connection limits (lib/runtime/router/task-config). */
  readonly routing: RouterRouting;
  /**
   * Other regions' cells by the URL of their region (`router.regionUrls`): the agent answers their
   * requests `307` there while their link is not in this VPC (`router.reach`). @default - none
   */
  readonly elsewhere?: Readonly<Record<string, readonly string[]>>;
  /** Minutes without a successful mapping refresh before a group's stale-mapping alarm. */
  readonly stalenessMinutes: number;
  /**
   * Every group is a lane (`groups[].lane`): each gets its own NLB here.
   * @default - no lanes
   */
  readonly lanes?: RouterLanesSettings;
  /**
   * ARC zonal autoshift on the router NLBs, with weekly practice runs (`router.zonalAutoshift`): each
   * lane NLB here, or (without lanes, in the `rest` part) the region's entry NLB, whose outcome alarm
   * is then one composite over every group's health, `allGroups`.
   * @default false
   */
  readonly zonalAutoshift?: boolean;
  /** Every router group of the region, in rollout order (the entry NLB's outcome alarm). @default - this part's groups */
  readonly allGroups?: readonly string[];
}

/**
 * Router groups of one region, in the router account: each group's Fargate service (HAProxy and the
 * mapping agent), its scaling and its alarms, registered in the group's target group of the
 * region's NLB (in RouterStack). The canary group has a stack of its own, so the pipeline deploys
 * it, bakes on its alarms, and only then deploys the stack of the other groups (one after the
 * other inside it, each waiting for the previous one to be stable).
 */
/**
 * ARC zonal autoshift on `resourceIdentifier` (a router NLB), with the practice runs it requires
 * (AWS::ARCZonalShift::ZonalAutoshiftConfiguration): weekly practice shifts end and count as failed
 * when `outcome` goes to ALARM (its ARN orders the alarm first).
 */
function autoshift(
  scope: Construct,
  id: string,
  resourceIdentifier: string,
  outcome: cloudwatch.IAlarm,
): arczonalshift.CfnZonalAutoshiftConfiguration {
  const config = new arczonalshift.CfnZonalAutoshiftConfiguration(scope, id, {
    resourceIdentifier,
    zonalAutoshiftStatus: 'ENABLED',
    practiceRunConfiguration: { outcomeAlarms: [{ alarmIdentifier: outcome.alarmArn, type: 'CLOUDWATCH' }] },
  });
  return config;
}

export class RouterGroupsStack extends Stack {
  public readonly groups: readonly RouterGroup[];
  /** Each group's composite health alarm, in rollout order: what the pipeline's bake after this stack watches. */
  public readonly groupHealthAlarms: readonly { readonly group: string; readonly alarmName: string }[];
  public readonly alarms: readonly (cloudwatch.Alarm | cloudwatch.CompositeAlarm)[];
  /** With lanes: each lane's NLB in this stack, in lane order. */
  public readonly laneLoadBalancers: readonly elbv2.NetworkLoadBalancer[];

  constructor(
    scope: Construct,
    id: string,
    {
      app,
      region,
      account,
      availabilityZones: zones,
      part,
      groups,
      routing,
      elsewhere,
      stalenessMinutes,
      lanes,
      zonalAutoshift,
      allGroups,
      ...props
    }: RouterGroupsStackProps,
  ) {
    super(scope, id, {
      stackName: routerGroupsStackName(app, region, part),
      description: `${app} router groups ${groups.map((g) => g.name).join(', ')} in ${region}`,
      terminationProtection: true,
      suppressTemplateIndentation: true,
      ...props,
      env: { account, region },
    });
    if (groups.length === 0) throw new Error(`RouterGroupsStack ${region}/${part}: groups is empty; a group stack deploys at least one router group`);
    if (lanes && groups.some((g) => g.lane === undefined))
      throw new Error(
        `RouterGroupsStack ${region}/${part}: with lanes every group is a lane; ${groups
          .filter((g) => g.lane === undefined)
          .map((g) => g.name)
          .join(', ')} has no lane`,
      );
    Tags.of(this).add('app', app);
    Tags.of(this).add('component', 'router');
    const prefix = routerStackName(app, region);
    const param = (name: string) => ssm.StringParameter.valueForStringParameter(this, name);
    // Read once for every group of the stack (one template parameter).
    let zoneNetworks: string | undefined;

    // CDK's ECS constructs want an IVpc; the service gets explicit subnets and a security group, so
    // without lanes the id is never rendered (reading it from SSM would leave an unused template
    // parameter). A lane's target group needs the real one, and its NLB the public subnets.
    const vpc = ec2.Vpc.fromVpcAttributes(this, 'Vpc', {
      vpcId: lanes ? param(routerParameters.vpcId(app)) : 'vpc-of-the-router-stack',
      availabilityZones: [...zones],
      privateSubnetIds: Fn.split(',', param(routerParameters.taskSubnetIds(app)), zones.length),
      ...(lanes ? { publicSubnetIds: Fn.split(',', param(routerParameters.publicSubnetIds(app)), zones.length) } : {}),
    });
    // The services need the subnets' ids only, never their route tables.
    for (const subnet of [...vpc.privateSubnets, ...vpc.publicSubnets])
      Annotations.of(subnet).acknowledgeWarning(
        '@aws-cdk/aws-ec2:noSubnetRouteTableId',
        'router tasks are placed by subnet id; no route is added here',
      );
    const cluster = ecs.Cluster.fromClusterAttributes(this, 'Cluster', { clusterName: param(routerParameters.clusterName(app)), vpc });
    const securityGroup = ec2.SecurityGroup.fromSecurityGroupId(this, 'TaskSecurityGroup', param(routerParameters.taskSecurityGroupId(app)), {
      mutable: false,
    });
    const mappingBucket = param(mappingBucketParameter(app));
    // Created by RouterStack (same account and region), so its name is known.
    const topic = sns.Topic.fromTopicArn(this, 'AlarmTopic', `arn:${Aws.PARTITION}:sns:${region}:${account}:${routerAlarmTopicName(app, region)}`);
    const notify = new cloudwatchActions.SnsAction(topic);

    const alarms: (cloudwatch.Alarm | cloudwatch.CompositeAlarm)[] = [];
    const groupMetric = (group: string, name: string, statistic = 'Sum') =>
      new cloudwatch.Metric({
        namespace: ROUTER_METRICS_NAMESPACE,
        metricName: name,
        dimensionsMap: { RouterGroup: group },
        statistic,
        period: Duration.minutes(1),
      });
    const alarm = (id: string, name: string, alarmProps: Omit<cloudwatch.AlarmProps, 'alarmName'>) => {
      const a = new cloudwatch.Alarm(this, id, { alarmName: `${prefix}-${name}`, ...alarmProps });
      alarms.push(a);
      return a;
    };
    const built: RouterGroup[] = [];
    const groupHealthAlarms: { group: string; alarmName: string }[] = [];
    const laneEntries = new Map<number, RouterLaneEntry>();
    const laneNetwork = lanes
      ? {
          securityGroup: ec2.SecurityGroup.fromSecurityGroupId(
            this,
            'LoadBalancerSecurityGroup',
            param(routerParameters.loadBalancerSecurityGroupId(app)),
            {
              mutable: false,
            },
          ),
          accessLogBucket: s3.Bucket.fromBucketName(this, 'AccessLogs', param(routerParameters.accessLogBucket(app))),
        }
      : undefined;
    for (const group of groups) {
      const g = group.name;
      const requests = groupMetric(g, 'Requests');
      const errors = alarm(`${g}-5xx`, `${g}-5xx`, {
        alarmDescription: `Router group ${g} in ${region}: 5xx responses above 5% of requests`,
        metric: new cloudwatch.MathExpression({
          expression: 'IF(r > 0, 100 * e / r, 0)',
          usingMetrics: { r: requests, e: groupMetric(g, 'Responses5xx') },
          period: Duration.minutes(1),
        }),
        threshold: 5,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      alarm(`${g}-rejected-keys`, `${g}-rejected-keys`, {
        alarmDescription: `Router group ${g} in ${region}: 4xx (mostly missing or invalid partition keys) above 20% of requests`,
        metric: new cloudwatch.MathExpression({
          expression: 'IF(r > 100, 100 * b / r, 0)',
          usingMetrics: { r: requests, b: groupMetric(g, 'Responses4xx') },
          period: Duration.minutes(1),
        }),
        threshold: 20,
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      alarm(`${g}-stale-mapping`, `${g}-stale-mapping`, {
        alarmDescription: `Router group ${g} in ${region}: no successful mapping refresh for ${stalenessMinutes} minutes (or no agent metrics at all)`,
        metric: groupMetric(g, 'SecondsSinceRefresh', 'Maximum'),
        threshold: stalenessMinutes * 60,
        evaluationPeriods: 2,
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      });
      alarm(`${g}-rejected-documents`, `${g}-rejected-documents`, {
        alarmDescription: `Router group ${g} in ${region}: a published mapping was rejected (the last-known-good is still served)`,
        metric: groupMetric(g, 'RejectedDocuments'),
        threshold: 1,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      alarm(`${g}-connection-use`, `${g}-connection-use`, {
        alarmDescription: `Router group ${g} in ${region}: its busiest task above ${CONNECTION_USE_ALARM_PERCENT}% of its connection limit for 3 minutes (readiness turns false at 90%; scaling should have added tasks)`,
        metric: connectionUseMetric(g, 'Maximum'),
        threshold: CONNECTION_USE_ALARM_PERCENT,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      const serviceName = routerServiceName(app, region, g);
      const unhealthy = alarm(`${g}-unhealthy-tasks`, `${g}-unhealthy-tasks`, {
        alarmDescription: `Router group ${g} in ${region}: fewer running tasks than the ${group.tasks} wanted`,
        metric: new cloudwatch.Metric({
          namespace: 'ECS/ContainerInsights',
          metricName: 'RunningTaskCount',
          dimensionsMap: { ClusterName: cluster.clusterName, ServiceName: serviceName },
          statistic: 'Minimum',
          period: Duration.minutes(1),
        }),
        threshold: group.tasks,
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: 3,
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      });
      const health = new cloudwatch.CompositeAlarm(this, `${g}-health`, {
        compositeAlarmName: routerGroupHealthAlarmName(app, region, g),
        alarmRule: cloudwatch.AlarmRule.anyOf(
          cloudwatch.AlarmRule.fromAlarm(errors, cloudwatch.AlarmState.ALARM),
          cloudwatch.AlarmRule.fromAlarm(unhealthy, cloudwatch.AlarmState.ALARM),
        ),
      });
      alarms.push(health);
      groupHealthAlarms.push({ group: g, alarmName: routerGroupHealthAlarmName(app, region, g) });
      let targetGroup: elbv2.INetworkTargetGroup;
      if (lanes && laneNetwork && group.lane !== undefined) {
        const entry = new RouterLaneEntry(this, `Lane-${group.lane}`, {
          app,
          lane: group.lane,
          vpc,
          ...laneNetwork,
          certificateArn: lanes.certificateArn,
        });
        laneEntries.set(group.lane, entry);
        if (zonalAutoshift) autoshift(this, `Lane-${group.lane}-Autoshift`, entry.loadBalancer.loadBalancerArn, health);
        targetGroup = entry.targetGroup;
        alarm(`${g}-unhealthy-targets`, `${g}-unhealthy-targets`, {
          alarmDescription: `Router lane ${group.lane} in ${region}: a task has failed its NLB's readiness check (no mapping in force, or near its connection limit) for 5 minutes`,
          metric: entry.unhealthyTargets(),
          threshold: 0,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 5,
          datapointsToAlarm: 5,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        });
      } else {
        targetGroup = elbv2.NetworkTargetGroup.fromTargetGroupAttributes(this, `Targets-${g}`, {
          targetGroupArn: param(routerParameters.targetGroupArn(app, g)),
        });
      }
      const routerGroup = new RouterGroup(this, `Group-${g}`, {
        name: g,
        cluster,
        subnets: { subnets: vpc.privateSubnets },
        securityGroup,
        tasks: group.tasks,
        routing,
        ...(elsewhere ? { elsewhere } : {}),
        targetGroup,
        mappingBucket,
        mappingBucketRegion: region,
        // The 5xx rate only: it counts requests, so a first start (no traffic before readiness) cannot
        // trip it. Unhealthy tasks (RunningTaskCount below `tasks`, missing data breaching) would be in
        // ALARM while a new group's first tasks start; tasks that never become healthy trip the
        // circuit breaker instead. Both stay in the group's composite, which the bake and on-call watch.
        deploymentAlarms: [errors],
        taskRoleName: routerTaskRoleName(app, region, g),
        metricsAcrossGroups: lanes !== undefined,
        zoneNetworks: (zoneNetworks ??= param(routerParameters.zoneNetworks(app))),
      });
      (routerGroup.service.node.defaultChild as ecs.CfnService).serviceName = serviceName;
      // Group by group: a deploy reaches the next group only once the previous one is stable.
      const previous = built[built.length - 1];
      if (previous) routerGroup.service.node.addDependency(previous.service);
      built.push(routerGroup);
    }
    if (lanes) {
      this.laneLoadBalancers = [...laneEntries.values()].map((e) => e.loadBalancer);
      new DeletionProtectionAccess(this, 'DeletionProtection', {
        roleName: routerGroupsDeletionProtectorRoleName(app, region, part),
        toolingAccount: lanes.toolingAccount,
        loadBalancerArns: this.laneLoadBalancers.map((lb) => lb.loadBalancerArn),
      });
      // The shard names are the last group stack's (it deploys after lane 1's): the canary stack must
      // not read the other lanes' parameters, which do not exist yet when it deploys (CloudFormation
      // resolves every SSM-typed template parameter, used or not).
      if (lanes.hostedZone && part === 'rest') {
        // Lanes of the other group stack (lane 1, deployed first) are read from their SSM parameters.
        const targets = new Map<number, LaneAliasTarget>();
        for (const lane of new Set(lanes.shards.flat())) {
          const own = laneEntries.get(lane);
          targets.set(
            lane,
            own
              ? { dnsName: own.loadBalancer.loadBalancerDnsName, hostedZoneId: own.loadBalancer.loadBalancerCanonicalHostedZoneId }
              : { dnsName: param(routerParameters.laneDnsName(app, lane)), hostedZoneId: param(routerParameters.laneHostedZoneId(app, lane)) },
          );
        }
        new ShardRecords(this, 'ShardNames', { region, hostedZone: lanes.hostedZone, shards: lanes.shards, lanes: targets });
      }
    } else {
      this.laneLoadBalancers = [];
      if (zonalAutoshift && part === 'rest') {
        // One outcome alarm per resource: a composite over every group's health (the canary's is in
        // the canary stack, deployed before this one; composite rules name alarms by name).
        const entryHealth = new cloudwatch.CompositeAlarm(this, 'entry-health', {
          compositeAlarmName: `${prefix}-entry-health`,
          alarmDescription: `Any router group of ${region} unhealthy: the entry NLB's zonal autoshift practice runs end on it`,
          alarmRule: cloudwatch.AlarmRule.anyOf(
            ...(allGroups ?? groups.map((g) => g.name)).map((g) =>
              cloudwatch.AlarmRule.fromString(`ALARM("${routerGroupHealthAlarmName(app, region, g)}")`),
            ),
          ),
        });
        for (const a of alarms.filter((x) => x instanceof cloudwatch.CompositeAlarm)) entryHealth.node.addDependency(a);
        alarms.push(entryHealth);
        autoshift(this, 'EntryAutoshift', param(routerParameters.loadBalancerArn(app)), entryHealth);
      }
    }
    for (const a of alarms) {
      a.addAlarmAction(notify);
      a.addOkAction(notify);
    }
    this.groups = built;
    this.groupHealthAlarms = groupHealthAlarms;
    this.alarms = alarms;
  }
}
