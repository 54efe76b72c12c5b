import { Aws, CfnOutput, Duration, Fn, RemovalPolicy, Stack, StackProps, Tags, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { acknowledgeDefaultSecurityGroupProvider, denyGrantsExceptForAwsServices } from '../cell';
import { cellZoneName, Fleet, ROUTER_SUBNET_MASKS, seedMapping } from '../fleet';
import {
  cellEndpointReaderRoleName, cellEndpointServiceParameter, mappingBucketParameter, moveBucketParameter, moveOperatorRoleName, publisherRoleName, routerAlarmTopicName,
  routerBakeWatcherRoleName, routerClusterParameter, routerCustomResourceRoleName, routerDeletionProtectorRoleName, routerGroupHealthAlarmName, routerNamePrefix, routerParameters,
  routerStackName, routerTaskRoleName,
} from '../names';
import { CellBakeAccess } from '../cell/bake-access';
import { DELETION_PROTECTION_AFTER_CREATE } from '../cell/data';
import { DeletionProtectionAccess } from '../cell/deletion-protection-access';
import { LogBucket } from '../cell/log-bucket';
import { placeSubnetsByZoneId } from '../cell/network';
import { serializeMapping } from '../mapping-store';
import { CellEndpointLookup, CellLink, CellLinksStack, CELLS_PER_LINK_STACK } from './cell-links';
import { MappingBucket, MappingPublisher, MappingSeed } from './mapping-bucket';
import { MoveBucket } from './move-bucket';
import { configureRouterTargetGroup, connectionUseMetric, READY_PORT, ROUTER_DEREGISTRATION_DELAY, ROUTER_PORT } from './router-group';
import { CONNECTION_USE_ALARM_PERCENT } from './router-groups-stack';

export interface RouterStackProps extends Omit<StackProps, 'env'> {
  readonly fleet: Fleet;
  readonly region: string;
  /**
   * Each cell's endpointServiceFingerprint (lib/cell/entry.ts), from the cell stacks of the same
   * app: a cell whose endpoint service may have been replaced has its name read again.
   * @default - each name is read once, when its link is created
   */
  readonly cellEndpointFingerprints?: Readonly<Record<string, string>>;
}


/** The router VPC's subnets that hold the interface endpoints to the cells. */
const CELL_ENDPOINT_SUBNETS = 'cell-endpoints';

/** The region whose router stack holds the router account's one-per-fleet resources (`router.homeRegion`). */
export const publisherRegion = (fleet: Fleet) => fleet.router.homeRegion;

const EMF = 'CellRouter';

/** Cells per router dashboard page: 3 widgets each, leaving room for the router groups' rows. */
export const CELLS_PER_DASHBOARD = 150;


/**
 * The routers of one region, in the router account: a VPC over at least three AZs, an interface
 * endpoint to every cell of the fleet (cross-region PrivateLink for other regions' cells) named in a
 * private zone, the region's own mapping bucket (seeded with the fleet's first mapping), the ECS
 * cluster, and one Network Load Balancer whose listener forwards to one target group per router
 * group by the groups' weights; dashboards and the cells' alarms. The groups' services, scaling and
 * alarms are in RouterGroupsStack (the canary group's stack, then the others'), which reads what it
 * needs from this stack's SSM parameters (see routerParameters). The home region's stack (`router.homeRegion`) also holds
 * the publisher role.
 *
 * First deploy: the cells deploy before the routers (their stacks need nothing from the routers),
 * so every cell's endpoint service exists when this stack links it; this stack deploys before its
 * group stacks, so the seeded mapping's endpoints resolve, and the target groups and parameters
 * exist, before the first router task starts.
 */
export class RouterStack extends Stack {
  public readonly loadBalancer: elbv2.NetworkLoadBalancer;
  /** One per router group, by group name; the listener forwards to them by the groups' weights. */
  public readonly targetGroups: ReadonlyMap<string, elbv2.NetworkTargetGroup>;
  /** The region's ECS cluster; the router groups' services (RouterGroupsStack) run in it. */
  public readonly cluster: ecs.Cluster;
  /** This region's mapping bucket: the routers here read only it. */
  public readonly mappingBucket: MappingBucket;
  /** Only in the home region's stack (IAM is global). */
  public readonly publisher?: MappingPublisher;
  /** The fleet's move bucket and move operator role: only in the home region's stack. */
  public readonly moves?: MoveBucket;
  /** The way to each cell of the fleet, by cell id. */
  public readonly cellLinks: ReadonlyMap<string, CellLink>;
  /** `<app>.cells.internal` (from `router.cellEndpointTemplate`), naming each cell in this router VPC. */
  public readonly cellZone?: route53.PrivateHostedZone;
  public readonly alarms: readonly cloudwatch.IAlarm[];
  /** The region's router dashboard, then one more per `CELLS_PER_DASHBOARD` cells past the first page. */
  public readonly dashboards: readonly cloudwatch.Dashboard[];
  /** Each group's composite health alarm, in rollout order: what the pipeline's router bake watches. */
  public readonly groupHealthAlarms: readonly { readonly group: string; readonly alarmName: string }[];
  /** The role the pipeline's bake step assumes (from the tooling account) to read the router alarms. */
  public readonly bakeWatcher: CellBakeAccess;
  /** Every router alarm of the region notifies this topic on ALARM and OK: subscribe on-call here. */
  public readonly alarmTopic: sns.Topic;
  private readonly zones: readonly string[];

  constructor(scope: Construct, id: string, { fleet, region, cellEndpointFingerprints, ...props }: RouterStackProps) {
    super(scope, id, {
      stackName: routerStackName(fleet.app, region),
      description: `${fleet.app} routers in ${region}`,
      terminationProtection: true,
      // Compact JSON: with a region's per-cell endpoints, alarms and dashboard widgets the template
      // stays under CloudFormation's 1 MB up to about 320 cells, against 220 indented (docs/performance.md).
      suppressTemplateIndentation: true,
      ...props,
      env: { account: fleet.accounts.router, region },
    });
    const zones = fleet.regions[region]?.availabilityZones ?? [];
    if (zones.length < 3) throw new Error(`RouterStack ${region}: routers span at least 3 Availability Zones; the fleet lists ${zones.length} for ${region}`);
    this.zones = zones;
    Tags.of(this).add('app', fleet.app);
    Tags.of(this).add('component', 'router');
    const prefix = routerNamePrefix(fleet.app, region);
    const publisherArn = `arn:${Aws.PARTITION}:iam::${fleet.accounts.router}:role/${publisherRoleName(fleet.app)}`;
    // Moves publish their freeze, flip and unfreeze as mapping versions.
    const moveOperatorArn = `arn:${Aws.PARTITION}:iam::${fleet.accounts.router}:role/${moveOperatorRoleName(fleet.app)}`;
    if (region === publisherRegion(fleet)) {
      this.publisher = new MappingPublisher(this, 'Publisher', {
        roleName: publisherRoleName(fleet.app), bucketNamePrefix: fleet.router.mappingBucket, regions: Object.keys(fleet.regions), parameterName: mappingBucketParameter(fleet.app),
      });
    }
    // The stack's custom resources (seeding the mapping, reading the cells' endpoint service names)
    // run as this role; the cells' reader roles trust `<app>-router-*` roles of this account.
    const customResourceRole = new iam.Role(this, 'CustomResourceRole', {
      roleName: routerCustomResourceRoleName(fleet.app, region),
      description: `${prefix}: seeds the mapping bucket, reads the cells' endpoint service names`,
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    });
    this.mappingBucket = new MappingBucket(this, 'Mappings', {
      namePrefix: fleet.router.mappingBucket, parameterName: mappingBucketParameter(fleet.app), keptVersions: fleet.router.keptVersions,
      writerRoleArns: [publisherArn, moveOperatorArn, customResourceRole.roleArn],
      // Named (the group stacks deploy after this one): each group's tasks report the version they serve.
      routerTaskRoles: fleet.router.groups.map((g) => ({ group: g.name, roleArn: `arn:${Aws.PARTITION}:iam::${fleet.accounts.router}:role/${routerTaskRoleName(fleet.app, region, g.name)}` })),
    });
    if (region === publisherRegion(fleet)) {
      this.moves = new MoveBucket(this, 'Moves', {
        app: fleet.app, routerAccount: fleet.accounts.router, toolingAccount: fleet.accounts.tooling,
        cells: fleet.cells.map((c) => ({ id: c.id, account: c.account })), organizationId: fleet.pipeline?.organizationId, accessLogs: this.mappingBucket.accessLogs,
        parameterName: moveBucketParameter(fleet.app), mappingBucketPrefix: fleet.router.mappingBucket,
        mappingRegions: Object.keys(fleet.regions), mappingBucketParameter: mappingBucketParameter(fleet.app), routerClusterParameter: routerClusterParameter(fleet.app),
      });
    }
    const seed = seedMapping(fleet);
    const mappingSeed = new MappingSeed(this, 'MappingSeed', {
      bucket: this.mappingBucket.bucket, documentText: serializeMapping(seed), version: seed.version, groups: fleet.router.groups.map((g) => g.name), role: customResourceRole,
    });
    customResourceRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: mappingSeed.keys.map((key) => this.mappingBucket.bucket.arnForObjects(key)) }));
    const readerRoles = `arn:${Aws.PARTITION}:iam::*:role/${cellEndpointReaderRoleName(fleet.app, '*')}`;
    // Bounded by the organization when the fleet names it, as the move operator's launcher grant is.
    const organizationId = fleet.pipeline?.organizationId;
    customResourceRole.addToPolicy(new iam.PolicyStatement({
      actions: ['sts:AssumeRole'], resources: [readerRoles], ...(organizationId ? { conditions: { StringEquals: { 'aws:ResourceOrgID': organizationId } } } : {}),
    }));
    Validations.of(customResourceRole).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::*:role/${cellEndpointReaderRoleName(fleet.app, '*')}]`,
      reason: 'One reader role per cell account (<app>-<cell>-ep-reader), each trusting only this account\'s <app>-router-* roles and allowed only to read its cell\'s endpoint service name; cells are added by configuration.',
    });

    const flowLogs = new logs.LogGroup(this, 'FlowLogs', { retention: logs.RetentionDays.ONE_YEAR, removalPolicy: RemovalPolicy.RETAIN });
    Validations.of(flowLogs).acknowledge({
      id: 'ControlTower::CT.CLOUDWATCH.PR.3',
      reason: 'Router VPC flow logs (addresses and ports, no payloads); CloudWatch Logs encrypts them at rest with its own key. A customer key would need a key policy for CloudWatch Logs in every router region.',
    });
    const vpc = new ec2.Vpc(this, 'Vpc', {
      ipAddresses: ec2.IpAddresses.cidr(fleet.router.cidrs[region]),
      availabilityZones: [...zones],
      natGateways: zones.length,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24, mapPublicIpOnLaunch: false },
        { name: 'routers', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 24 },
        // One address per AZ for each cell's interface endpoint: a /23 holds 507 (AWS keeps 5 per
        // subnet), where sharing the routers' /24 would stop the fleet at about 230 cells.
        { name: CELL_ENDPOINT_SUBNETS, subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: ROUTER_SUBNET_MASKS.cellEndpoints },
      ],
      // Rejected traffic only: accepted flows at the router's connection rates would cost more than
      // the routers (docs/router.md, "VPC flow logs") and add nothing the NLB and HAProxy logs lack.
      flowLogs: { rejected: { destination: ec2.FlowLogDestination.toCloudWatchLogs(flowLogs), trafficType: ec2.FlowLogTrafficType.REJECT } },
    });
    placeSubnetsByZoneId(vpc);
    vpc.addGatewayEndpoint('S3', { service: ec2.GatewayVpcEndpointAwsService.S3 });
    acknowledgeDefaultSecurityGroupProvider(vpc);
    Validations.of(vpc).acknowledge({ id: 'CloudFormation-Validate::W3010', reason: 'AZs are explicit in the fleet config: synth runs offline and routers must not move AZs between deploys.' });

    const lbSecurityGroup = new ec2.SecurityGroup(this, 'LoadBalancerSecurityGroup', { vpc, description: `${prefix}: public entry`, allowAllOutbound: false });
    const certificateArn = fleet.router.certificateArns[region];
    const listenerPort = certificateArn ? 443 : 80;
    lbSecurityGroup.addIngressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(listenerPort), 'clients');
    const taskSecurityGroup = new ec2.SecurityGroup(this, 'TaskSecurityGroup', { vpc, description: `${prefix}: router tasks` });
    taskSecurityGroup.addIngressRule(lbSecurityGroup, ec2.Port.tcp(ROUTER_PORT), 'traffic from the NLB');
    taskSecurityGroup.addIngressRule(lbSecurityGroup, ec2.Port.tcp(READY_PORT), 'readiness checks from the NLB');
    lbSecurityGroup.addEgressRule(taskSecurityGroup, ec2.Port.tcp(ROUTER_PORT), 'to router tasks');
    lbSecurityGroup.addEgressRule(taskSecurityGroup, ec2.Port.tcp(READY_PORT), 'readiness checks');

    const accessLogs = new LogBucket(this, 'AccessLogs', {
      receives: 'the router NLB\'s access logs',
      whyNotKms: 'NLB access logs are connection metadata (TLS listeners only); SSE-S3 keeps their delivery free of a key policy for the log delivery service in every router region.',
    });
    this.loadBalancer = new elbv2.NetworkLoadBalancer(this, 'LoadBalancer', {
      vpc, internetFacing: true, vpcSubnets: { subnetType: ec2.SubnetType.PUBLIC }, crossZoneEnabled: true, securityGroups: [lbSecurityGroup],
    });
    // Deletion protection is switched on by the pipeline after the first successful deploy (see
    // DeletionProtectionAccess), never in the template: a failed first create must delete the NLB.
    this.loadBalancer.removeAttribute('deletion_protection.enabled');
    Validations.of(this.loadBalancer).acknowledge({ id: 'ControlTower::CT.ELASTICLOADBALANCING.PR.5', reason: DELETION_PROTECTION_AFTER_CREATE });
    this.loadBalancer.logAccessLogs(accessLogs, 'nlb');
    Validations.of(lbSecurityGroup).acknowledge({
      id: 'AwsSolutions-EC23',
      reason: 'The router NLB is the fleet\'s public entry point: clients connect from anywhere, on the listener port only.',
    });
    // One target group per router group, and the listener forwards to them by the groups' weights
    // (router.groups[].weight): a group's share of new connections is its weight, whatever its task
    // count, so auto scaling never moves traffic between groups, and weight 0 drains a group.
    // Network Load Balancers take weighted target groups in a listener's default action since
    // 2025-11-19 (Elastic Load Balancing, Network Load Balancers, "Document history": "Weighted
    // target groups ... default action with weighted target groups"; weights 0-999, AWS blog
    // "Network Load Balancers now support Weighted Target Groups"). Only the default action: NLB
    // listener rules match the source address type and nothing else.
    const targetGroups = new Map<string, elbv2.NetworkTargetGroup>();
    for (const group of fleet.router.groups) {
      const tg = new elbv2.NetworkTargetGroup(this, `Targets-${group.name}`, {
        vpc, port: ROUTER_PORT, protocol: elbv2.Protocol.TCP, targetType: elbv2.TargetType.IP, deregistrationDelay: ROUTER_DEREGISTRATION_DELAY,
      });
      // HAProxy's readiness (a mapping in force), proxy protocol v2,
      // no connection termination for unhealthy targets: see configureRouterTargetGroup.
      configureRouterTargetGroup(tg);
      targetGroups.set(group.name, tg);
    }
    this.targetGroups = targetGroups;
    const forward = elbv2.NetworkListenerAction.weightedForward(fleet.router.groups.map((g) => ({ targetGroup: targetGroups.get(g.name)!, weight: g.weight })));
    this.loadBalancer.addListener('Listener', certificateArn
      ? { port: 443, protocol: elbv2.Protocol.TLS, certificates: [elbv2.ListenerCertificate.fromArn(certificateArn)], sslPolicy: elbv2.SslPolicy.RECOMMENDED_TLS, defaultAction: forward }
      : { port: 80, protocol: elbv2.Protocol.TCP, defaultAction: forward });

    // Every router reaches every cell of the fleet: an interface endpoint to each (cross-region
    // PrivateLink for other regions' cells), named `<cell>.<zone>` in this VPC's private zone. The
    // endpoints accept only the router tasks, on the cells' listener ports.
    const zoneName = cellZoneName(fleet);
    if (zoneName) this.cellZone = new route53.PrivateHostedZone(this, 'CellZone', { zoneName, vpc, comment: `${prefix}: one name per cell, aliasing its interface endpoint` });
    const endpointSecurityGroup = new ec2.SecurityGroup(this, 'CellEndpointSecurityGroup', { vpc, description: `${prefix}: interface endpoints to the cells`, allowAllOutbound: false });
    for (const port of [...new Set(fleet.cells.map((c) => (c.certificateArn ? 443 : 80)))]) {
      endpointSecurityGroup.addIngressRule(taskSecurityGroup, ec2.Port.tcp(port), 'router tasks to the cells');
    }
    const lookup = new CellEndpointLookup(this, 'CellEndpointLookup', { role: customResourceRole });
    const links = new Map<string, CellLink>();
    const linkStacks: CellLinksStack[] = [];
    for (let i = 0; i < fleet.cells.length; i += CELLS_PER_LINK_STACK) {
      const batch = fleet.cells.slice(i, i + CELLS_PER_LINK_STACK);
      const linkStack = new CellLinksStack(this, `CellLinks${i / CELLS_PER_LINK_STACK + 1}`, {
        vpc, subnets: { subnetGroupName: CELL_ENDPOINT_SUBNETS }, securityGroup: endpointSecurityGroup, zone: this.cellZone, lookup,
        cells: batch.map((cell) => ({
          id: cell.id, region: cell.region, account: cell.account, port: cell.certificateArn ? 443 : 80,
          serviceNameParameter: cellEndpointServiceParameter(fleet.app, cell.id), readerRoleName: cellEndpointReaderRoleName(fleet.app, cell.id),
          ...(cellEndpointFingerprints?.[cell.id] ? { fingerprint: cellEndpointFingerprints[cell.id] } : {}),
        })),
      });
      linkStack.node.addDependency(customResourceRole);
      linkStacks.push(linkStack);
      batch.forEach((cell, j) => links.set(cell.id, linkStack.links[j]));
    }
    this.cellLinks = links;

    const cluster = new ecs.Cluster(this, 'Cluster', { vpc, containerInsightsV2: ecs.ContainerInsights.ENABLED });
    this.cluster = cluster;

    // What the group stacks (RouterGroupsStack) need from this one, as SSM parameters rather than
    // exports (see routerParameters): they deploy after this stack, canary group first.
    const taskSubnets = vpc.selectSubnets({ subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS });
    const handOver: [string, string, string][] = [
      ['ClusterName', routerParameters.clusterName(fleet.app), cluster.clusterName],
      ['TaskSubnetIds', routerParameters.taskSubnetIds(fleet.app), Fn.join(',', taskSubnets.subnetIds)],
      ['TaskSecurityGroupId', routerParameters.taskSecurityGroupId(fleet.app), taskSecurityGroup.securityGroupId],
      ...fleet.router.groups.map((g): [string, string, string] => [`TargetGroupArn-${g.name}`, routerParameters.targetGroupArn(fleet.app, g.name), this.targetGroups.get(g.name)!.targetGroupArn]),
    ];
    for (const [id, parameterName, stringValue] of handOver) {
      new ssm.StringParameter(this, `Parameter-${id}`, { parameterName, stringValue, description: `${prefix}: read by the router group stacks at deploy time` });
    }

    const alarms: (cloudwatch.Alarm | cloudwatch.CompositeAlarm)[] = [];
    const groupMetric = (group: string, name: string, statistic = 'Sum') =>
      new cloudwatch.Metric({ namespace: EMF, metricName: name, dimensionsMap: { RouterGroup: group }, statistic, period: Duration.minutes(1) });
    // The target groups are here, so are their readiness alarms; the groups' other alarms are in
    // their own stacks (RouterGroupsStack) with the services.
    for (const group of fleet.router.groups) {
      const g = group.name;
      alarms.push(new cloudwatch.Alarm(this, `${g}-unhealthy-targets`, {
        alarmName: `${prefix}-${g}-unhealthy-targets`,
        alarmDescription: `Router group ${g} in ${region}: a task has failed the NLB's readiness check (no mapping in force, or near its connection limit) for 5 minutes`,
        metric: new cloudwatch.Metric({
          namespace: 'AWS/NetworkELB', metricName: 'UnHealthyHostCount',
          dimensionsMap: { LoadBalancer: this.loadBalancer.loadBalancerFullName, TargetGroup: this.targetGroups.get(g)!.targetGroupFullName }, statistic: 'Maximum', period: Duration.minutes(1),
        }),
        threshold: 0, comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD, evaluationPeriods: 5, datapointsToAlarm: 5,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }));
    }
    this.groupHealthAlarms = fleet.router.groups.map((g) => ({ group: g.name, alarmName: routerGroupHealthAlarmName(fleet.app, region, g.name) }));
    this.bakeWatcher = new CellBakeAccess(this, 'BakeWatcher', { roleName: routerBakeWatcherRoleName(fleet.app, region), toolingAccount: fleet.accounts.tooling });
    new DeletionProtectionAccess(this, 'DeletionProtection', {
      roleName: routerDeletionProtectorRoleName(fleet.app, region), toolingAccount: fleet.accounts.tooling, loadBalancerArns: [this.loadBalancer.loadBalancerArn],
    });

    // Per cell, as the routers see it: the error rate of its traffic across every group (in the
    // cell's links stack: a region routes to every cell, and this stack has 500 resources at most).
    const cellMetric = (cell: string, name: string, group: string) =>
      new cloudwatch.Metric({ namespace: EMF, metricName: name, dimensionsMap: { RouterGroup: group, Cell: cell }, statistic: 'Sum', period: Duration.minutes(1) });
    const regionCells = fleet.cells;
    for (const [index, cell] of regionCells.entries()) {
      const using: Record<string, cloudwatch.IMetric> = {};
      fleet.router.groups.forEach((group, i) => {
        using[`r${i}`] = cellMetric(cell.id, 'Requests', group.name);
        using[`e${i}`] = cellMetric(cell.id, 'Responses5xx', group.name);
      });
      const sum = (p: string) => fleet.router.groups.map((_, i) => `FILL(${p}${i}, 0)`).join(' + ');
      alarms.push(new cloudwatch.Alarm(linkStacks[Math.floor(index / CELLS_PER_LINK_STACK)], `cell-${cell.id}-errors`, {
        alarmName: `${prefix}-cell-${cell.id}-errors`,
        alarmDescription: `Cell ${cell.id} (${cell.region}) as seen by the routers in ${region}: 5xx above 5% of its requests`,
        metric: new cloudwatch.MathExpression({ expression: `IF((${sum('r')}) > 0, 100 * (${sum('e')}) / (${sum('r')}), 0)`, usingMetrics: using, period: Duration.minutes(1) }),
        threshold: 5, evaluationPeriods: 3, datapointsToAlarm: 3, treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }));
    }
    this.alarms = alarms;
    // Encrypted with a key of its own that CloudWatch may use to publish.
    const topicKey = new kms.Key(this, 'AlarmTopicKey', {
      description: `${prefix} alarm notifications`, enableKeyRotation: true, removalPolicy: RemovalPolicy.RETAIN,
    });
    topicKey.grant(new iam.ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey*');
    topicKey.addToResourcePolicy(denyGrantsExceptForAwsServices());
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', { topicName: routerAlarmTopicName(fleet.app, region), masterKey: topicKey, enforceSSL: true });
    const notify = new cloudwatchActions.SnsAction(this.alarmTopic);
    for (const a of alarms) {
      a.addAlarmAction(notify);
      a.addOkAction(notify);
    }

    // CloudWatch allows 500 widgets per dashboard: the router groups and the first cells on
    // `<prefix>`, then further pages of cells (`<prefix>-cells-2`, …), each well under the limit.
    const dashboards = [new cloudwatch.Dashboard(this, 'Dashboard', { dashboardName: prefix })];
    for (const group of fleet.router.groups) {
      dashboards[0].addWidgets(
        new cloudwatch.GraphWidget({ title: `group ${group.name}: mapping version`, width: 6, left: [groupMetric(group.name, 'MappingVersion', 'Minimum'), groupMetric(group.name, 'MappingVersion', 'Maximum')] }),
        new cloudwatch.GraphWidget({ title: `group ${group.name}: seconds since refresh`, width: 6, left: [groupMetric(group.name, 'SecondsSinceRefresh', 'Maximum')] }),
        new cloudwatch.GraphWidget({ title: `group ${group.name}: requests, 4xx, 5xx`, width: 6, left: ['Requests', 'Responses4xx', 'Responses5xx'].map((m) => groupMetric(group.name, m)) }),
        new cloudwatch.GraphWidget({
          title: `group ${group.name} (weight ${group.weight}): connection use per task %`, width: 6,
          left: [connectionUseMetric(group.name, 'Average'), connectionUseMetric(group.name, 'Maximum')],
          leftAnnotations: [{ value: CONNECTION_USE_ALARM_PERCENT, label: 'alarm' }, { value: 90, label: 'readiness off' }],
        }),
      );
    }
    regionCells.forEach((cell, i) => {
      const page = Math.floor(i / CELLS_PER_DASHBOARD);
      dashboards[page] ??= new cloudwatch.Dashboard(this, `Dashboard${page + 1}`, { dashboardName: `${prefix}-cells-${page + 1}` });
      dashboards[page].addWidgets(
        new cloudwatch.GraphWidget({ title: `cell ${cell.id}: requests`, width: 8, left: fleet.router.groups.map((g) => cellMetric(cell.id, 'Requests', g.name)) }),
        new cloudwatch.GraphWidget({ title: `cell ${cell.id}: 5xx`, width: 8, left: fleet.router.groups.map((g) => cellMetric(cell.id, 'Responses5xx', g.name)) }),
        new cloudwatch.GraphWidget({ title: `cell ${cell.id}: queue time`, width: 8, left: fleet.router.groups.map((g) => new cloudwatch.Metric({ namespace: EMF, metricName: 'QueueTime', dimensionsMap: { RouterGroup: g.name, Cell: cell.id }, statistic: 'p99', period: Duration.minutes(1) })) }),
      );
    });
    this.dashboards = dashboards;
    new CfnOutput(this, 'LoadBalancerDns', { value: this.loadBalancer.loadBalancerDnsName });
  }

  public override get availabilityZones(): string[] {
    return [...this.zones];
  }
}
