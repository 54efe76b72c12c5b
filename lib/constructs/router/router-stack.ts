import { CfnOutput, Stack, StackProps, Tags } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { CellBakeAccess } from '../shared/bake-access';
import { DeletionProtectionAccess } from '../shared/deletion-protection-access';
import { MappingDocument } from '../../domain/mapping';
import {
  routerBakeWatcherRoleName,
  routerDeletionProtectorRoleName,
  routerGroupHealthAlarmName,
  routerNamePrefix,
  routerStackName,
} from '../../domain/names';
import { CellLink } from './cell-links';
import { MappingBucket, MappingPublisher } from './mapping-bucket';
import { MoveBucket } from './move-bucket';
import {
  RouterAlarms,
  RouterAlarmTopic,
  RouterCellReach,
  RouterCellTarget,
  RouterDashboards,
  RouterEntry,
  RouterGroupHandOver,
  RouterGroupSettings,
  RouterMappings,
  RouterNetwork,
} from './router-parts';

export interface RouterStackProps extends Omit<StackProps, 'env'> {
  /** The fleet's name: every name the stack stamps starts with it (lib/domain/names). */
  readonly app: string;
  readonly region: string;
  /** The router account: the stack deploys there. */
  readonly account: string;
  /** The pipeline's account: its bake and deletion-protection steps assume this stack's roles from there. */
  readonly toolingAccount: string;
  /** The region's zones, at least three, in the order the router VPC's subnets take them. */
  readonly availabilityZones: readonly string[];
  /** The router VPC's CIDR. */
  readonly cidr: string;
  /**
   * The public listener's certificate.
   * @default - a TCP listener on port 80
   */
  readonly certificateArn?: string;
  /** The router groups, in rollout order (the canary group first): one target group each, weighted. */
  readonly groups: readonly RouterGroupSettings[];
  /**
   * The groups are lanes (docs/lanes.md): each has its own NLB in its group stack, so this stack
   * has none; it hands the lane stacks its VPC, public subnets, NLB security group and log bucket.
   * @default false
   */
  readonly lanes?: boolean;
  /** Every cell of the fleet, in every region (moves may go between any two). */
  readonly cells: readonly RouterCellTarget[];
  /**
   * The cells this region's routers link (an interface endpoint, a name, an alarm and a dashboard
   * row each): `router.reach`. @default every cell
   */
  readonly linkedCells?: readonly string[];
  /**
   * The private zone naming each cell after its interface endpoint (`<cell>.<zone>`).
   * @default - no zone: the endpoints' names are yours to create
   */
  readonly cellZoneName?: string;
  /** `router.mappingBucket`: the prefix of the region's mapping bucket name. */
  readonly mappingBucketPrefix: string;
  /** Old versions of each mapping object kept. */
  readonly keptMappingVersions: number;
  /** The first mapping, seeded at the first deploy. */
  readonly seedMapping: MappingDocument;
  /**
   * Bounds the cross-account grants (reader roles, move launchers) to the organization.
   * @default - no organization condition
   */
  readonly organizationId?: string;
  /**
   * Every region of the fleet, given to the home region's stack only (`router.homeRegion`): it holds
   * the publisher role (IAM is global), which writes every region's bucket, and the move bucket.
   * @default - not the home region
   */
  readonly homeOf?: readonly string[];
  /**
   * `router.homeRegion`: every region's stack keeps it and refuses a deploy that changes it
   * (HomeRegionGuard), since it would move the publisher and move operator roles and the move bucket.
   * @default - no guard
   */
  readonly homeRegion?: string;
  /**
   * Each cell's endpointServiceFingerprint (lib/constructs/cell/entry.ts), from the cell stacks of the same
   * app: a cell whose endpoint service may have been replaced has its name read again.
   * @default - each name is read once, when its link is created
   */
  readonly cellEndpointFingerprints?: Readonly<Record<string, string>>;
}

/**
 * The routers of one region, in the router account: a VPC over at least three AZs, an interface
 * endpoint to every cell it links (every cell of the fleet, or with `router.reach`
 * home-and-failover the cells of its region and those it is the failover of; cross-region
 * PrivateLink for other regions' cells) named in a
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
  /** The region's one NLB; undefined with lanes (each lane's is in its group stack). */
  public readonly loadBalancer?: elbv2.NetworkLoadBalancer;
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

  constructor(
    scope: Construct,
    id: string,
    {
      app,
      region,
      account,
      toolingAccount,
      availabilityZones,
      cidr,
      certificateArn,
      groups,
      lanes,
      cells,
      linkedCells,
      cellZoneName,
      mappingBucketPrefix,
      keptMappingVersions,
      seedMapping,
      organizationId,
      homeOf,
      homeRegion,
      cellEndpointFingerprints,
      ...props
    }: RouterStackProps,
  ) {
    super(scope, id, {
      stackName: routerStackName(app, region),
      description: `${app} routers in ${region}`,
      terminationProtection: true,
      // Compact JSON: with a region's per-cell endpoints, alarms and dashboard widgets the template
      // stays under CloudFormation's 1 MB up to about 320 cells, against 220 indented (docs/performance.md).
      suppressTemplateIndentation: true,
      ...props,
      env: { account, region },
    });
    if (availabilityZones.length < 3)
      throw new Error(
        `RouterStack ${region}: routers span at least 3 Availability Zones; availabilityZones lists ${availabilityZones.length} for ${region}`,
      );
    if (groups.length === 0) throw new Error(`RouterStack ${region}: groups is empty; list at least one router group (the canary group first)`);
    this.zones = availabilityZones;
    Tags.of(this).add('app', app);
    Tags.of(this).add('component', 'router');
    const namePrefix = routerNamePrefix(app, region);
    const mappings = new RouterMappings(this, {
      app,
      region,
      account,
      toolingAccount,
      groups,
      cells,
      bucketPrefix: mappingBucketPrefix,
      keptVersions: keptMappingVersions,
      seed: seedMapping,
      organizationId,
      homeOf,
      homeRegion,
      lanes,
    });
    this.mappingBucket = mappings.mappingBucket;
    this.publisher = mappings.publisher;
    this.moves = mappings.moves;
    const linked = linkedCells ? cells.filter((c) => linkedCells.includes(c.id)) : cells;
    const { vpc } = new RouterNetwork(this, { cidr, availabilityZones });
    const entry = new RouterEntry(this, { namePrefix, vpc, groups, certificateArn, lanes });
    this.loadBalancer = entry.loadBalancer;
    this.targetGroups = entry.targetGroups;
    const reach = new RouterCellReach(this, {
      app,
      namePrefix,
      vpc,
      taskSecurityGroup: entry.taskSecurityGroup,
      cells,
      ...(linkedCells ? { linked: new Set(linkedCells) } : {}),
      cellZoneName,
      lookupRole: mappings.customResourceRole,
      cellEndpointFingerprints,
    });
    this.cellZone = reach.cellZone;
    this.cellLinks = reach.links;
    this.cluster = new RouterGroupHandOver(this, {
      app,
      namePrefix,
      vpc,
      taskSecurityGroup: entry.taskSecurityGroup,
      targetGroups: entry.targetGroups,
      groups,
      loadBalancer: entry.loadBalancer,
      ...(lanes ? { lanes: { loadBalancerSecurityGroup: entry.loadBalancerSecurityGroup, accessLogs: entry.accessLogs } } : {}),
    }).cluster;
    const alarms = new RouterAlarms(this, {
      namePrefix,
      region,
      loadBalancer: entry.loadBalancer,
      targetGroups: entry.targetGroups,
      groups,
      cells: linked,
      linkStackOf: reach.linkStackOf,
      acrossGroups: lanes,
    });
    this.alarms = [...alarms.alarms, ...alarms.cellAlarms];
    this.groupHealthAlarms = groups.map((g) => ({ group: g.name, alarmName: routerGroupHealthAlarmName(app, region, g.name) }));
    this.bakeWatcher = new CellBakeAccess(this, 'BakeWatcher', { roleName: routerBakeWatcherRoleName(app, region), toolingAccount });
    // With lanes the NLBs are the group stacks', each with a protector role of its own.
    if (this.loadBalancer)
      new DeletionProtectionAccess(this, 'DeletionProtection', {
        roleName: routerDeletionProtectorRoleName(app, region),
        toolingAccount,
        loadBalancerArns: [this.loadBalancer.loadBalancerArn],
      });
    this.alarmTopic = new RouterAlarmTopic(this, { app, region, alarms: [...alarms.alarms, ...alarms.cellAlarms] }).topic;
    this.dashboards = new RouterDashboards(this, { namePrefix, groups, cells: linked, acrossGroups: lanes }).dashboards;
    if (this.loadBalancer) new CfnOutput(this, 'LoadBalancerDns', { value: this.loadBalancer.loadBalancerDnsName });
  }

  public override get availabilityZones(): string[] {
    return [...this.zones];
  }
}
