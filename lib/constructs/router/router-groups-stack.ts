import { Annotations, Aws, Duration, Fn, Stack, StackProps, Tags } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import {
  mappingBucketParameter,
  routerAlarmTopicName,
  routerGroupHealthAlarmName,
  RouterGroupsPart,
  routerGroupsStackName,
  routerParameters,
  routerServiceName,
  routerStackName,
  routerTaskRoleName,
} from '../../domain/names';
import { RouterRouting } from '../../runtime/router/task-config';
import { connectionUseMetric, RouterGroup } from './router-group';

/** The CloudWatch namespace of the router agent's metrics (EMF). */
export const ROUTER_METRICS_NAMESPACE = 'CellRouter';

/** The `<group>-connection-use` alarm pages when the busiest task stays above this share of its limit. */
export const CONNECTION_USE_ALARM_PERCENT = 80;

/** One router group's service. */
export interface RouterGroupServiceSettings {
  readonly name: string;
  /** Tasks the service keeps running (scaling adds more). */
  readonly tasks: number;
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
  /** Minutes without a successful mapping refresh before a group's stale-mapping alarm. */
  readonly stalenessMinutes: number;
}

/**
 * Router groups of one region, in the router account: each group's Fargate service (HAProxy and the
 * mapping agent), its scaling and its alarms, registered in the group's target group of the
 * region's NLB (in RouterStack). The canary group has a stack of its own, so the pipeline deploys
 * it, bakes on its alarms, and only then deploys the stack of the other groups (one after the
 * other inside it, each waiting for the previous one to be stable).
 */
export class RouterGroupsStack extends Stack {
  public readonly groups: readonly RouterGroup[];
  /** Each group's composite health alarm, in rollout order: what the pipeline's bake after this stack watches. */
  public readonly groupHealthAlarms: readonly { readonly group: string; readonly alarmName: string }[];
  public readonly alarms: readonly (cloudwatch.Alarm | cloudwatch.CompositeAlarm)[];

  constructor(
    scope: Construct,
    id: string,
    { app, region, account, availabilityZones: zones, part, groups, routing, stalenessMinutes, ...props }: RouterGroupsStackProps,
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
    Tags.of(this).add('app', app);
    Tags.of(this).add('component', 'router');
    const prefix = routerStackName(app, region);
    const param = (name: string) => ssm.StringParameter.valueForStringParameter(this, name);

    // CDK's ECS constructs want an IVpc; the service gets explicit subnets and a security group, so
    // the id is never rendered (reading it from SSM would leave an unused template parameter).
    const vpc = ec2.Vpc.fromVpcAttributes(this, 'Vpc', {
      vpcId: 'vpc-of-the-router-stack',
      availabilityZones: [...zones],
      privateSubnetIds: Fn.split(',', param(routerParameters.taskSubnetIds(app)), zones.length),
    });
    // The services need the subnets' ids only, never their route tables.
    for (const subnet of vpc.privateSubnets)
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
      const targetGroup = elbv2.NetworkTargetGroup.fromTargetGroupAttributes(this, `Targets-${g}`, {
        targetGroupArn: param(routerParameters.targetGroupArn(app, g)),
      });
      const routerGroup = new RouterGroup(this, `Group-${g}`, {
        name: g,
        cluster,
        subnets: { subnets: vpc.privateSubnets },
        securityGroup,
        tasks: group.tasks,
        routing,
        targetGroup,
        mappingBucket,
        mappingBucketRegion: region,
        // The 5xx rate only: it counts requests, so a first start (no traffic before readiness) cannot
        // trip it. Unhealthy tasks (RunningTaskCount below `tasks`, missing data breaching) would be in
        // ALARM while a new group's first tasks start; tasks that never become healthy trip the
        // circuit breaker instead. Both stay in the group's composite, which the bake and on-call watch.
        deploymentAlarms: [errors],
        taskRoleName: routerTaskRoleName(app, region, g),
      });
      (routerGroup.service.node.defaultChild as ecs.CfnService).serviceName = serviceName;
      // Group by group: a deploy reaches the next group only once the previous one is stable.
      const previous = built[built.length - 1];
      if (previous) routerGroup.service.node.addDependency(previous.service);
      built.push(routerGroup);
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
