import { Aws, Duration, Fn, NestedStack, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { acknowledgeDefaultSecurityGroupProvider, denyGrantsExceptForAwsServices } from '../cell';
import { DELETION_PROTECTION_AFTER_CREATE } from '../cell/data';
import { LogBucket } from '../shared/log-bucket';
import { placeSubnetsByZoneId } from '../cell/network';
import { ROUTER_SUBNET_MASKS } from '../../domain/fleet';
import { MappingDocument } from '../../domain/mapping';
import { serializeMapping } from '../../adapters/mapping-store';
import {
  cellEndpointReaderRoleName,
  cellEndpointServiceParameter,
  mappingBucketParameter,
  moveBucketParameter,
  moveOperatorRoleName,
  publisherRoleName,
  routerAlarmTopicName,
  routerClusterParameter,
  routerCustomResourceRoleName,
  routerHomeRegionParameter,
  routerNamePrefix,
  routerParameters,
  routerTaskRoleName,
} from '../../domain/names';
import { CellEndpointLookup, CellLink, CellLinksStack, CELLS_PER_LINK_STACK } from './cell-links';
import { MappingBucket, MappingPublisher, MappingSeed } from './mapping-bucket';
import { HomeRegionGuard } from './home-region-guard';
import { MoveBucket } from './move-bucket';
import { configureRouterTargetGroup, connectionUseMetric, READY_PORT, ROUTER_DEREGISTRATION_DELAY, ROUTER_PORT } from './router-group';
import { CONNECTION_USE_ALARM_PERCENT, ROUTER_METRICS_NAMESPACE } from './router-groups-stack';
import { NLB_ACCESS_LOG_PREFIX } from './router-lane';

/*
 * The parts a RouterStack is composed of. Each builds into the stack's own scope, with the ids the
 * router stack has always had, rather than under a construct level of its own: a new level would
 * change every logical id below it, and CloudFormation would replace a deployed router's VPC and its
 * public load balancer (a new DNS name for every client). Each takes its own readonly props and
 * exposes what the next part needs.
 */

/** One router group as the region's stack sees it: its target group and its share of new connections. */
export interface RouterGroupSettings {
  readonly name: string;
  /** Share of the listener's new connections (0 drains the group). */
  readonly weight: number;
}

/** A cell every router of the region reaches through an interface endpoint. */
export interface RouterCellTarget {
  readonly id: string;
  readonly region: string;
  readonly account: string;
  /** The cell's PrivateLink listener port: 443 with a certificate, else 80. */
  readonly port: number;
  /** `endpointGeneration` of the cell: a new one reads its endpoint service name again. @default - none */
  readonly endpointGeneration?: number;
}

/** The router VPC's subnets that hold the interface endpoints to the cells. */
export const CELL_ENDPOINT_SUBNETS = 'cell-endpoints';

export interface RouterMappingsProps {
  readonly app: string;
  readonly region: string;
  /** The router account. */
  readonly account: string;
  readonly groups: readonly RouterGroupSettings[];
  readonly cells: readonly RouterCellTarget[];
  /** `router.mappingBucket`: the prefix of each region's mapping bucket name. */
  readonly bucketPrefix: string;
  /** Old versions of each mapping object kept. */
  readonly keptVersions: number;
  /** The first mapping, written at the first deploy. */
  readonly seed: MappingDocument;
  /** @default - the reader-role grant and the move operator's are not bounded by an organization */
  readonly organizationId?: string;
  /** The pipeline's account (the move bucket's operator grants). */
  readonly toolingAccount: string;
  /**
   * Every region of the fleet, given to the home region's stack only: it holds the publisher role
   * (IAM is global) and the fleet's move bucket.
   * @default - not the home region: no publisher, no move bucket
   */
  readonly homeOf?: readonly string[];
  /** `router.homeRegion`: every region's stack refuses a deploy that changes it (HomeRegionGuard). @default - no guard */
  /**
   * The fleet's routers are lanes: the publisher may read the lanes' NLB names (`cellctl lanes where`).
   * @default false
   */
  readonly lanes?: boolean;
  readonly homeRegion?: string;
}

/** The region's mapping bucket, seeded; the role the stack's custom resources run as; in the home region the publisher and the move bucket. */
export class RouterMappings {
  public readonly mappingBucket: MappingBucket;
  public readonly customResourceRole: iam.Role;
  public readonly publisher?: MappingPublisher;
  public readonly moves?: MoveBucket;

  constructor(scope: Stack, props: RouterMappingsProps) {
    const { app, region, account } = props;
    const publisherArn = `arn:${Aws.PARTITION}:iam::${account}:role/${publisherRoleName(app)}`;
    // Moves publish their freeze, flip and unfreeze as mapping versions.
    const moveOperatorArn = `arn:${Aws.PARTITION}:iam::${account}:role/${moveOperatorRoleName(app)}`;
    // The stack's custom resources (seeding the mapping, reading the cells' endpoint service names,
    // guarding the home region) run as this role; the cells' reader roles trust `<app>-router-*`
    // roles of this account.
    const prefix = routerNamePrefix(app, region);
    const customResourceRole = new iam.Role(scope, 'CustomResourceRole', {
      roleName: routerCustomResourceRoleName(app, region),
      description: `${prefix}: seeds the mapping bucket, reads the cells' endpoint service names`,
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    });
    this.customResourceRole = customResourceRole;
    // In every region's stack, before anything of the home region's is touched: a deploy that
    // changes router.homeRegion fails here, in whichever region deploys first, and rolls back.
    const guard = props.homeRegion
      ? new HomeRegionGuard(scope, 'HomeRegionGuard', {
          homeRegion: props.homeRegion,
          parameterName: routerHomeRegionParameter(app),
          role: customResourceRole,
        })
      : undefined;
    if (props.homeOf) {
      this.publisher = new MappingPublisher(scope, 'Publisher', {
        roleName: publisherRoleName(app),
        bucketNamePrefix: props.bucketPrefix,
        regions: props.homeOf,
        parameterName: mappingBucketParameter(app),
        ...(props.lanes ? { laneParameters: routerParameters.lanes(app) } : { loadBalancerParameter: routerParameters.loadBalancerArn(app) }),
        routerAlarmPrefixes: Object.fromEntries(props.homeOf.map((region) => [region, routerNamePrefix(app, region)])),
      });
      if (guard) this.publisher.node.addDependency(guard.guard);
    }
    this.mappingBucket = new MappingBucket(scope, 'Mappings', {
      namePrefix: props.bucketPrefix,
      parameterName: mappingBucketParameter(app),
      keptVersions: props.keptVersions,
      writerRoleArns: [publisherArn, moveOperatorArn, customResourceRole.roleArn],
      // Named (the group stacks deploy after this one): each group's tasks report the version they serve.
      routerTaskRoles: props.groups.map((g) => ({
        group: g.name,
        roleArn: `arn:${Aws.PARTITION}:iam::${account}:role/${routerTaskRoleName(app, region, g.name)}`,
      })),
    });
    if (props.homeOf) {
      this.moves = new MoveBucket(scope, 'Moves', {
        app,
        routerAccount: account,
        toolingAccount: props.toolingAccount,
        cells: props.cells.map((c) => ({ id: c.id, account: c.account })),
        organizationId: props.organizationId,
        accessLogs: this.mappingBucket.accessLogs,
        parameterName: moveBucketParameter(app),
        mappingBucketPrefix: props.bucketPrefix,
        mappingRegions: props.homeOf,
        mappingBucketParameter: mappingBucketParameter(app),
        routerClusterParameter: routerClusterParameter(app),
      });
      if (guard) this.moves.node.addDependency(guard.guard);
    }
    // The access-log bucket's policy names the move bucket in the home region's stack: it changes
    // with router.homeRegion too, so it waits for the guard (else it would be rewritten, refusing the
    // move bucket's logs, until the failed update rolled back).
    const accessLogsPolicy = this.mappingBucket.accessLogs.policy;
    if (guard && accessLogsPolicy) accessLogsPolicy.node.addDependency(guard.guard);
    // In a nested stack of its own: the document is inlined once per seeded key (the version and each
    // group's pointer), about 85 KB each at 400 cells, which the router template could not carry under
    // what the pipeline's CloudFormation action accepts (docs/limits.md).
    const seedStack = new NestedStack(scope, 'MappingSeedStack', {
      description: `${prefix}: seeds the mapping bucket with the fleet's first mapping`,
    });
    const mappingSeed = new MappingSeed(scope, 'MappingSeed', {
      objectsScope: seedStack,
      bucket: this.mappingBucket.bucket,
      documentText: serializeMapping(props.seed),
      version: props.seed.version,
      groups: props.groups.map((g) => g.name),
      role: customResourceRole,
    });
    customResourceRole.addToPolicy(
      new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: mappingSeed.keys.map((key) => this.mappingBucket.bucket.arnForObjects(key)) }),
    );
    const readerRoles = `arn:${Aws.PARTITION}:iam::*:role/${cellEndpointReaderRoleName(app, '*')}`;
    // Bounded by the organization when the fleet names it, as the move operator's launcher grant is.
    const organizationId = props.organizationId;
    customResourceRole.addToPolicy(
      new iam.PolicyStatement({
        actions: ['sts:AssumeRole'],
        resources: [readerRoles],
        ...(organizationId ? { conditions: { StringEquals: { 'aws:ResourceOrgID': organizationId } } } : {}),
      }),
    );
    Validations.of(customResourceRole).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::*:role/${cellEndpointReaderRoleName(app, '*')}]`,
      reason:
        "One reader role per cell account (<app>-<cell>-ep-reader), each trusting only this account's <app>-router-* roles and allowed only to read its cell's endpoint service name; cells are added by configuration.",
    });
  }
}

export interface RouterNetworkProps {
  readonly cidr: string;
  /** At least three, in the order the fleet lists them. */
  readonly availabilityZones: readonly string[];
}

/** The router VPC: public subnets (NLB, NAT), the router tasks' subnets, the cell endpoints' subnets; rejected flows logged. */
export class RouterNetwork {
  public readonly vpc: ec2.Vpc;

  constructor(scope: Stack, props: RouterNetworkProps) {
    const zones = props.availabilityZones;
    const flowLogs = new logs.LogGroup(scope, 'FlowLogs', { retention: logs.RetentionDays.ONE_YEAR, removalPolicy: RemovalPolicy.RETAIN });
    Validations.of(flowLogs).acknowledge({
      id: 'ControlTower::CT.CLOUDWATCH.PR.3',
      reason:
        'Router VPC flow logs (addresses and ports, no payloads); CloudWatch Logs encrypts them at rest with its own key. A customer key would need a key policy for CloudWatch Logs in every router region.',
    });
    const vpc = new ec2.Vpc(scope, 'Vpc', {
      ipAddresses: ec2.IpAddresses.cidr(props.cidr),
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
    Validations.of(vpc).acknowledge({
      id: 'CloudFormation-Validate::W3010',
      reason: 'AZs are explicit in the fleet config: synth runs offline and routers must not move AZs between deploys.',
    });
    this.vpc = vpc;
  }
}

export interface RouterEntryProps {
  /** What the security groups' descriptions start with: the stack name. */
  readonly namePrefix: string;
  readonly vpc: ec2.IVpc;
  readonly groups: readonly RouterGroupSettings[];
  /** @default - a TCP listener on port 80 */
  readonly certificateArn?: string;
  /**
   * Lanes (docs/lanes.md): each lane's group stack holds its own NLB, so this part builds the
   * security groups and the access-log bucket (with its delivery policy) and no load balancer.
   * @default false
   */
  readonly lanes?: boolean;
}

/** The public entry: an internet-facing NLB whose listener forwards to one target group per router group by weight, access-logged. */
export class RouterEntry {
  /** Undefined with lanes: each lane's NLB is in its group stack. */
  public readonly loadBalancer?: elbv2.NetworkLoadBalancer;
  /** Empty with lanes. */
  public readonly targetGroups: ReadonlyMap<string, elbv2.NetworkTargetGroup>;
  /** The NLB security group: the router tasks admit it; with lanes every lane NLB has it. */
  public readonly loadBalancerSecurityGroup: ec2.SecurityGroup;
  /** Where every router NLB of the region writes its access logs (under `nlb/`). */
  public readonly accessLogs: s3.Bucket;
  /** The router tasks' security group: the NLB reaches them on the traffic and readiness ports. */
  public readonly taskSecurityGroup: ec2.SecurityGroup;

  constructor(scope: Stack, props: RouterEntryProps) {
    const { vpc, namePrefix: prefix, certificateArn } = props;
    const lbSecurityGroup = new ec2.SecurityGroup(scope, 'LoadBalancerSecurityGroup', {
      vpc,
      description: `${prefix}: public entry`,
      allowAllOutbound: false,
    });
    const listenerPort = certificateArn ? 443 : 80;
    lbSecurityGroup.addIngressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(listenerPort), 'clients');
    const taskSecurityGroup = new ec2.SecurityGroup(scope, 'TaskSecurityGroup', { vpc, description: `${prefix}: router tasks` });
    taskSecurityGroup.addIngressRule(lbSecurityGroup, ec2.Port.tcp(ROUTER_PORT), 'traffic from the NLB');
    taskSecurityGroup.addIngressRule(lbSecurityGroup, ec2.Port.tcp(READY_PORT), 'readiness checks from the NLB');
    lbSecurityGroup.addEgressRule(taskSecurityGroup, ec2.Port.tcp(ROUTER_PORT), 'to router tasks');
    lbSecurityGroup.addEgressRule(taskSecurityGroup, ec2.Port.tcp(READY_PORT), 'readiness checks');
    this.taskSecurityGroup = taskSecurityGroup;
    this.loadBalancerSecurityGroup = lbSecurityGroup;
    Validations.of(lbSecurityGroup).acknowledge({
      id: 'AwsSolutions-EC23',
      reason: "The router NLB is the fleet's public entry point: clients connect from anywhere, on the listener port only.",
    });

    const accessLogs = new LogBucket(scope, 'AccessLogs', {
      receives: "the router NLB's access logs",
      whyNotKms:
        'NLB access logs are connection metadata (TLS listeners only); SSE-S3 keeps their delivery free of a key policy for the log delivery service in every router region.',
    });
    this.accessLogs = accessLogs;
    if (props.lanes) {
      // What NetworkLoadBalancer.logAccessLogs grants, for the lane NLBs of the group stacks (a
      // bucket's policy belongs to its own stack): the log delivery service writes under nlb/AWSLogs
      // (Elastic Load Balancing, "Access logs for your Network Load Balancer", bucket policy).
      const delivery = new iam.ServicePrincipal('delivery.logs.amazonaws.com');
      accessLogs.addToResourcePolicy(
        new iam.PolicyStatement({
          actions: ['s3:PutObject'],
          principals: [delivery],
          resources: [accessLogs.arnForObjects(`${NLB_ACCESS_LOG_PREFIX}/AWSLogs/${scope.account}/*`)],
          conditions: { StringEquals: { 's3:x-amz-acl': 'bucket-owner-full-control', 'aws:SourceAccount': scope.account } },
        }),
      );
      accessLogs.addToResourcePolicy(
        new iam.PolicyStatement({
          actions: ['s3:GetBucketAcl'],
          principals: [delivery],
          resources: [accessLogs.bucketArn],
          conditions: { StringEquals: { 'aws:SourceAccount': scope.account } },
        }),
      );
      this.targetGroups = new Map();
      return;
    }
    this.loadBalancer = new elbv2.NetworkLoadBalancer(scope, 'LoadBalancer', {
      vpc,
      internetFacing: true,
      vpcSubnets: { subnetType: ec2.SubnetType.PUBLIC },
      crossZoneEnabled: true,
      securityGroups: [lbSecurityGroup],
    });
    // Deletion protection is switched on by the pipeline after the first successful deploy (see
    // DeletionProtectionAccess), never in the template: a failed first create must delete the NLB.
    this.loadBalancer.removeAttribute('deletion_protection.enabled');
    Validations.of(this.loadBalancer).acknowledge({ id: 'ControlTower::CT.ELASTICLOADBALANCING.PR.5', reason: DELETION_PROTECTION_AFTER_CREATE });
    this.loadBalancer.logAccessLogs(accessLogs, NLB_ACCESS_LOG_PREFIX);
    // `cellctl zone drain` shifts the router's entry away from a drained zone (ARC zonal shift): cross-zone on
    // qualifies with TCP/TLS target groups of `ip` targets that keep unhealthy targets' connections (configureRouterTargetGroup).
    this.loadBalancer.setAttribute('zonal_shift.config.enabled', 'true');
    // One target group per router group, and the listener forwards to them by the groups' weights
    // (router.groups[].weight): a group's share of new connections is its weight, whatever its task
    // count, so auto scaling never moves traffic between groups, and weight 0 drains a group.
    // Network Load Balancers take weighted target groups in a listener's default action since
    // 2025-11-19 (Elastic Load Balancing, Network Load Balancers, "Document history": "Weighted
    // target groups ... default action with weighted target groups"; weights 0-999, AWS blog
    // "Network Load Balancers now support Weighted Target Groups"). Only the default action: NLB
    // listener rules match the source address type and nothing else.
    const targetGroups = new Map<string, elbv2.NetworkTargetGroup>();
    for (const group of props.groups) {
      const tg = new elbv2.NetworkTargetGroup(scope, `Targets-${group.name}`, {
        vpc,
        port: ROUTER_PORT,
        protocol: elbv2.Protocol.TCP,
        targetType: elbv2.TargetType.IP,
        deregistrationDelay: ROUTER_DEREGISTRATION_DELAY,
      });
      // HAProxy's readiness (a mapping in force), proxy protocol v2,
      // no connection termination for unhealthy targets: see configureRouterTargetGroup.
      configureRouterTargetGroup(tg);
      targetGroups.set(group.name, tg);
    }
    this.targetGroups = targetGroups;
    const forward = elbv2.NetworkListenerAction.weightedForward(
      props.groups.map((g) => ({ targetGroup: targetGroups.get(g.name)!, weight: g.weight })),
    );
    this.loadBalancer.addListener(
      'Listener',
      certificateArn
        ? {
            port: 443,
            protocol: elbv2.Protocol.TLS,
            certificates: [elbv2.ListenerCertificate.fromArn(certificateArn)],
            sslPolicy: elbv2.SslPolicy.RECOMMENDED_TLS,
            defaultAction: forward,
          }
        : { port: 80, protocol: elbv2.Protocol.TCP, defaultAction: forward },
    );
  }
}

export interface RouterCellReachProps {
  readonly app: string;
  readonly namePrefix: string;
  readonly vpc: ec2.IVpc;
  /** The router tasks: the only clients of the endpoints. */
  readonly taskSecurityGroup: ec2.ISecurityGroup;
  /** Every cell of the fleet, in fleet order: a cell's place here fixes its nested stack. */
  readonly cells: readonly RouterCellTarget[];
  /**
   * The cells this region links (`router.reach`). A cell keeps its nested stack (batch
   * `CELLS_PER_LINK_STACK` of the fleet order) whichever others are linked, so changing reach never
   * moves a link between stacks: a moved link would create its name in the new stack while the old
   * stack still holds it, and Route 53 refuses the second. @default every cell
   */
  readonly linked?: ReadonlySet<string>;
  /** @default - no private zone: the endpoints' names are yours to create */
  readonly cellZoneName?: string;
  /** The role the endpoint lookups run as (it assumes the cells' reader roles). */
  readonly lookupRole: iam.IRole;
  /**
   * Each cell's endpointServiceFingerprint: a cell whose endpoint service may have been replaced
   * has its name read again.
   * @default - each name is read once, when its link is created
   */
  readonly cellEndpointFingerprints?: Readonly<Record<string, string>>;
}

/**
 * Every cell of the fleet from this region: an interface endpoint to each (cross-region PrivateLink
 * for other regions' cells), named `<cell>.<zone>` in this VPC's private zone, in nested stacks of
 * `CELLS_PER_LINK_STACK` cells. The endpoints accept only the router tasks, on the cells' listener ports.
 */
export class RouterCellReach {
  public readonly cellZone?: route53.PrivateHostedZone;
  public readonly links: ReadonlyMap<string, CellLink>;
  /** The nested stacks holding the links, batch by batch of the fleet's cells (a batch with no linked cell has none). */
  public readonly linkStacks: readonly CellLinksStack[];
  /** The nested stack holding each linked cell's link (its alarm goes there too). */
  public readonly linkStackOf: ReadonlyMap<string, CellLinksStack>;

  constructor(scope: Stack, props: RouterCellReachProps) {
    const { vpc, namePrefix: prefix, app } = props;
    if (props.cellZoneName) {
      this.cellZone = new route53.PrivateHostedZone(scope, 'CellZone', {
        zoneName: props.cellZoneName,
        vpc,
        comment: `${prefix}: one name per cell, aliasing its interface endpoint`,
      });
    }
    const endpointSecurityGroup = new ec2.SecurityGroup(scope, 'CellEndpointSecurityGroup', {
      vpc,
      description: `${prefix}: interface endpoints to the cells`,
      allowAllOutbound: false,
    });
    const isLinked = (id: string) => props.linked === undefined || props.linked.has(id);
    for (const port of [...new Set(props.cells.filter((c) => isLinked(c.id)).map((c) => c.port))]) {
      endpointSecurityGroup.addIngressRule(props.taskSecurityGroup, ec2.Port.tcp(port), 'router tasks to the cells');
    }
    const lookup = new CellEndpointLookup(scope, 'CellEndpointLookup', { role: props.lookupRole });
    const links = new Map<string, CellLink>();
    const linkStacks: CellLinksStack[] = [];
    const linkStackOf = new Map<string, CellLinksStack>();
    const fingerprints = props.cellEndpointFingerprints;
    for (let i = 0; i < props.cells.length; i += CELLS_PER_LINK_STACK) {
      const batch = props.cells.slice(i, i + CELLS_PER_LINK_STACK).filter((c) => isLinked(c.id));
      if (batch.length === 0) continue;
      const linkStack = new CellLinksStack(scope, `CellLinks${i / CELLS_PER_LINK_STACK + 1}`, {
        vpc,
        subnets: { subnetGroupName: CELL_ENDPOINT_SUBNETS },
        securityGroup: endpointSecurityGroup,
        zone: this.cellZone,
        lookup,
        cells: batch.map((cell) => ({
          id: cell.id,
          region: cell.region,
          account: cell.account,
          port: cell.port,
          serviceNameParameter: cellEndpointServiceParameter(app, cell.id),
          readerRoleName: cellEndpointReaderRoleName(app, cell.id),
          ...linkFingerprint(fingerprints?.[cell.id], cell.endpointGeneration),
        })),
      });
      linkStack.node.addDependency(props.lookupRole);
      linkStacks.push(linkStack);
      batch.forEach((cell, j) => {
        links.set(cell.id, linkStack.links[j]);
        linkStackOf.set(cell.id, linkStack);
      });
    }
    this.links = links;
    this.linkStacks = linkStacks;
    this.linkStackOf = linkStackOf;
  }
}

/**
 * What a cell's lookup carries to be read again: the endpoint service's fingerprint (its template
 * changed) and the cell's endpoint generation (its stack was created again from the same template),
 * so either one re-reads the name. Without a generation the property is the fingerprint alone, as it
 * always was: no deployed lookup is replaced by this.
 */
export function linkFingerprint(fingerprint: string | undefined, generation: number | undefined): { fingerprint?: string } {
  if (!generation) return fingerprint ? { fingerprint } : {};
  return { fingerprint: `${fingerprint ?? 'created'}.g${generation}` };
}

export interface RouterGroupHandOverProps {
  readonly app: string;
  readonly namePrefix: string;
  readonly vpc: ec2.IVpc;
  readonly taskSecurityGroup: ec2.ISecurityGroup;
  readonly targetGroups: ReadonlyMap<string, elbv2.INetworkTargetGroup>;
  /**
   * With lanes: what the lane stacks build their NLBs with, handed over instead of target groups.
   * @default - no lanes
   */
  readonly lanes?: { readonly loadBalancerSecurityGroup: ec2.ISecurityGroup; readonly accessLogs: s3.IBucket };
  readonly groups: readonly RouterGroupSettings[];
  /** The entry NLB (none with lanes). */
  readonly loadBalancer?: elbv2.INetworkLoadBalancer;
}

/**
 * The router VPC's cell-endpoint subnets by AZ ID, in the fleet's zone order, then its router task
 * subnets, as the agent's ZONE_NETWORKS: `{"use1-az1":["10.0.6.0/23","10.0.2.0/24"],…}`. Known at
 * synth (CDK allocates the CIDRs). An endpoint address is in the first; a task finds its own zone by
 * its subnet in the second (router.zoneAffinity).
 */
export function zoneNetworksJson(vpc: ec2.IVpc): string {
  const networks: Record<string, string[]> = {};
  const subnets = [
    ...vpc.selectSubnets({ subnetGroupName: CELL_ENDPOINT_SUBNETS }).subnets,
    ...vpc.selectSubnets({ subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS }).subnets,
  ];
  for (const subnet of subnets) (networks[subnet.availabilityZone] ??= []).push(subnet.ipv4CidrBlock);
  return JSON.stringify(networks);
}

/**
 * The region's ECS cluster, and what the group stacks (RouterGroupsStack) need from this one, as SSM
 * parameters rather than exports (see routerParameters): they deploy after this stack, canary group first.
 */
export class RouterGroupHandOver {
  public readonly cluster: ecs.Cluster;

  constructor(scope: Stack, props: RouterGroupHandOverProps) {
    const { vpc, app } = props;
    const cluster = new ecs.Cluster(scope, 'Cluster', { vpc, containerInsightsV2: ecs.ContainerInsights.ENABLED });
    this.cluster = cluster;
    const taskSubnets = vpc.selectSubnets({ subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS });
    const handOver: [string, string, string][] = [
      ['ClusterName', routerParameters.clusterName(app), cluster.clusterName],
      ['TaskSubnetIds', routerParameters.taskSubnetIds(app), Fn.join(',', taskSubnets.subnetIds)],
      ['TaskSecurityGroupId', routerParameters.taskSecurityGroupId(app), props.taskSecurityGroup.securityGroupId],
      // The entry NLB `cellctl zone drain` shifts away from a zone (with lanes, each lane stack names its own).
      ...(props.loadBalancer
        ? [['LoadBalancerArn', routerParameters.loadBalancerArn(app), props.loadBalancer.loadBalancerArn] as [string, string, string]]
        : []),
      // The cell endpoints' subnets by AZ ID (placeSubnetsByZoneId): each interface endpoint has its
      // address in each, so the agent knows which zone each address of a cell's endpoint is in.
      ['ZoneNetworks', routerParameters.zoneNetworks(app), zoneNetworksJson(vpc)],
      ...(props.lanes
        ? [
            // Each lane's group stack builds its NLB and target group in this VPC (RouterLaneEntry).
            ['VpcId', routerParameters.vpcId(app), vpc.vpcId] as [string, string, string],
            [
              'PublicSubnetIds',
              routerParameters.publicSubnetIds(app),
              Fn.join(',', vpc.selectSubnets({ subnetType: ec2.SubnetType.PUBLIC }).subnetIds),
            ] as [string, string, string],
            [
              'LoadBalancerSecurityGroupId',
              routerParameters.loadBalancerSecurityGroupId(app),
              props.lanes.loadBalancerSecurityGroup.securityGroupId,
            ] as [string, string, string],
            ['AccessLogBucket', routerParameters.accessLogBucket(app), props.lanes.accessLogs.bucketName] as [string, string, string],
          ]
        : props.groups.map((g): [string, string, string] => [
            `TargetGroupArn-${g.name}`,
            routerParameters.targetGroupArn(app, g.name),
            props.targetGroups.get(g.name)!.targetGroupArn,
          ])),
    ];
    for (const [id, parameterName, stringValue] of handOver) {
      new ssm.StringParameter(scope, `Parameter-${id}`, {
        parameterName,
        stringValue,
        description: `${props.namePrefix}: read by the router group stacks at deploy time`,
      });
    }
  }
}

/** A router metric of the agent (EMF), per group and, for the per-cell ones, per cell. */
export function routerMetric(name: string, dimensions: { readonly group: string; readonly cell?: string }, statistic = 'Sum'): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: ROUTER_METRICS_NAMESPACE,
    metricName: name,
    statistic,
    period: Duration.minutes(1),
    dimensionsMap: dimensions.cell === undefined ? { RouterGroup: dimensions.group } : { RouterGroup: dimensions.group, Cell: dimensions.cell },
  });
}

/** A router metric of the agent for one cell across every group of the region (dimension `Cell` alone). */
function cellMetric(name: string, cell: string, statistic = 'Sum'): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: ROUTER_METRICS_NAMESPACE,
    metricName: name,
    statistic,
    period: Duration.minutes(1),
    dimensionsMap: { Cell: cell },
  });
}

export interface RouterAlarmsProps {
  readonly namePrefix: string;
  readonly region: string;
  /** @default - lanes: each lane's readiness alarm is in its group stack, beside its NLB */
  readonly loadBalancer?: elbv2.NetworkLoadBalancer;
  readonly targetGroups: ReadonlyMap<string, elbv2.NetworkTargetGroup>;
  readonly groups: readonly RouterGroupSettings[];
  readonly cells: readonly RouterCellTarget[];
  /** Where each cell's alarm goes: its link's stack (RouterCellReach.linkStackOf; a region may link every cell, and this stack holds 500 resources at most). */
  readonly linkStackOf: ReadonlyMap<string, CellLinksStack>;
  /**
   * Each cell's alarm reads the agent's per-cell metrics across groups (dimension `Cell` alone)
   * instead of summing each group's: what lanes need (more groups than an alarm's 10 metrics).
   * @default false
   */
  readonly acrossGroups?: boolean;
}

/**
 * The region's router alarms: each group's target-group readiness (the groups' other alarms are in
 * their own stacks with the services) and, per cell as the routers see it, the error rate of its
 * traffic across every group.
 */
export class RouterAlarms {
  /** One per group: a task failing the NLB's readiness check. */
  public readonly alarms: readonly cloudwatch.Alarm[];
  /** One per cell, in its link stack. */
  public readonly cellAlarms: readonly cloudwatch.Alarm[];

  constructor(scope: Stack, props: RouterAlarmsProps) {
    const { namePrefix: prefix, region, groups } = props;
    const alarms: cloudwatch.Alarm[] = [];
    const loadBalancer = props.loadBalancer;
    for (const group of loadBalancer ? groups : []) {
      const g = group.name;
      alarms.push(
        new cloudwatch.Alarm(scope, `${g}-unhealthy-targets`, {
          alarmName: `${prefix}-${g}-unhealthy-targets`,
          alarmDescription: `Router group ${g} in ${region}: a task has failed the NLB's readiness check (no mapping in force, or near its connection limit) for 5 minutes`,
          metric: new cloudwatch.Metric({
            namespace: 'AWS/NetworkELB',
            metricName: 'UnHealthyHostCount',
            dimensionsMap: { LoadBalancer: loadBalancer!.loadBalancerFullName, TargetGroup: props.targetGroups.get(g)!.targetGroupFullName },
            statistic: 'Maximum',
            period: Duration.minutes(1),
          }),
          threshold: 0,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 5,
          datapointsToAlarm: 5,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
      );
    }
    this.alarms = alarms;
    this.cellAlarms = props.cells.map((cell) => {
      const using: Record<string, cloudwatch.IMetric> = {};
      const summed = props.acrossGroups ? [undefined] : groups.map((g) => g.name);
      summed.forEach((group, i) => {
        using[`r${i}`] = group === undefined ? cellMetric('Requests', cell.id) : routerMetric('Requests', { group, cell: cell.id });
        using[`e${i}`] = group === undefined ? cellMetric('Responses5xx', cell.id) : routerMetric('Responses5xx', { group, cell: cell.id });
      });
      const sum = (p: string) => summed.map((_, i) => `FILL(${p}${i}, 0)`).join(' + ');
      const stack = props.linkStackOf.get(cell.id);
      if (!stack) throw new Error(`RouterAlarms: cell ${cell.id} has no link in this region; alarm only the cells the region links`);
      return new cloudwatch.Alarm(stack, `cell-${cell.id}-errors`, {
        alarmName: `${prefix}-cell-${cell.id}-errors`,
        alarmDescription: `Cell ${cell.id} (${cell.region}) as seen by the routers in ${region}: 5xx above 5% of its requests`,
        metric: new cloudwatch.MathExpression({
          expression: `IF((${sum('r')}) > 0, 100 * (${sum('e')}) / (${sum('r')}), 0)`,
          usingMetrics: using,
          period: Duration.minutes(1),
        }),
        threshold: 5,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    });
  }
}

export interface RouterAlarmTopicProps {
  readonly app: string;
  readonly region: string;
  /** Every one notifies the topic on ALARM and OK. */
  readonly alarms: readonly cloudwatch.AlarmBase[];
}

/** The topic every router alarm of the region notifies on ALARM and OK, encrypted with a key of its own that CloudWatch may use to publish. */
export class RouterAlarmTopic {
  public readonly topic: sns.Topic;

  constructor(scope: Stack, props: RouterAlarmTopicProps) {
    const prefix = routerNamePrefix(props.app, props.region);
    const topicKey = new kms.Key(scope, 'AlarmTopicKey', {
      description: `${prefix} alarm notifications`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    topicKey.grant(new iam.ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey*');
    topicKey.addToResourcePolicy(denyGrantsExceptForAwsServices());
    this.topic = new sns.Topic(scope, 'AlarmTopic', {
      topicName: routerAlarmTopicName(props.app, props.region),
      masterKey: topicKey,
      enforceSSL: true,
    });
    const notify = new cloudwatchActions.SnsAction(this.topic);
    for (const a of props.alarms) {
      a.addAlarmAction(notify);
      a.addOkAction(notify);
    }
  }
}

/** Cells per router dashboard page: 3 widgets each, leaving room for the router groups' rows. */
export const CELLS_PER_DASHBOARD = 150;

/** Page `page` (2 and on) of a region's router dashboard: the cells past the first page's. */
export function routerCellDashboardName(prefix: string, page: number): string {
  return `${prefix}-cell-page-${page}`;
}

export interface RouterDashboardsProps {
  readonly namePrefix: string;
  readonly groups: readonly RouterGroupSettings[];
  readonly cells: readonly Pick<RouterCellTarget, 'id'>[];
  /**
   * Each cell's widgets read the agent's per-cell metrics across groups (as RouterAlarmsProps):
   * with lanes, a line per lane and cell would carry the router template past what the pipeline's
   * CloudFormation action accepts.
   * @default false
   */
  readonly acrossGroups?: boolean;
}

/**
 * The region's router dashboards. CloudWatch allows 500 widgets per dashboard: the router groups and
 * the first `CELLS_PER_DASHBOARD` cells on `<prefix>`, in this stack; each further page of cells
 * (`<prefix>-cell-page-2`, …) in a nested stack of its own, since a page's body (about 200 KB) would
 * carry the router template past what the pipeline's CloudFormation action accepts (docs/limits.md).
 * The pages are named anew rather than `<prefix>-cells-<n>` as they were when this stack held them:
 * moving a named dashboard between stacks would create it in the nested stack and then delete it, by
 * name, in the old stack's cleanup.
 */
export class RouterDashboards {
  public readonly dashboards: readonly cloudwatch.Dashboard[];

  constructor(scope: Stack, props: RouterDashboardsProps) {
    const { namePrefix: prefix, groups } = props;
    const groupMetric = (group: string, name: string, statistic = 'Sum') => routerMetric(name, { group }, statistic);
    const dashboards = [new cloudwatch.Dashboard(scope, 'Dashboard', { dashboardName: prefix })];
    for (const group of groups) {
      dashboards[0].addWidgets(
        new cloudwatch.GraphWidget({
          title: `group ${group.name}: mapping version`,
          width: 6,
          left: [groupMetric(group.name, 'MappingVersion', 'Minimum'), groupMetric(group.name, 'MappingVersion', 'Maximum')],
        }),
        new cloudwatch.GraphWidget({
          title: `group ${group.name}: seconds since refresh`,
          width: 6,
          left: [groupMetric(group.name, 'SecondsSinceRefresh', 'Maximum')],
        }),
        new cloudwatch.GraphWidget({
          title: `group ${group.name}: requests, 4xx, 5xx`,
          width: 6,
          left: ['Requests', 'Responses4xx', 'Responses5xx'].map((m) => groupMetric(group.name, m)),
        }),
        new cloudwatch.GraphWidget({
          title: `group ${group.name} (weight ${group.weight}): connection use per task %`,
          width: 6,
          left: [connectionUseMetric(group.name, 'Average'), connectionUseMetric(group.name, 'Maximum')],
          leftAnnotations: [
            { value: CONNECTION_USE_ALARM_PERCENT, label: 'alarm' },
            { value: 90, label: 'readiness off' },
          ],
        }),
      );
    }
    props.cells.forEach((cell, i) => {
      const page = Math.floor(i / CELLS_PER_DASHBOARD);
      dashboards[page] ??= new cloudwatch.Dashboard(
        new NestedStack(scope, `CellDashboard${page + 1}`, { description: `${prefix}: router dashboard page ${page + 1} (cells ${cell.id} …)` }),
        'Dashboard',
        { dashboardName: routerCellDashboardName(prefix, page + 1) },
      );
      const lines = (name: string, statistic = 'Sum') =>
        props.acrossGroups
          ? [cellMetric(name, cell.id, statistic)]
          : groups.map((g) => routerMetric(name, { group: g.name, cell: cell.id }, statistic));
      dashboards[page].addWidgets(
        new cloudwatch.GraphWidget({ title: `cell ${cell.id}: requests`, width: 8, left: lines('Requests') }),
        new cloudwatch.GraphWidget({ title: `cell ${cell.id}: 5xx`, width: 8, left: lines('Responses5xx') }),
        new cloudwatch.GraphWidget({ title: `cell ${cell.id}: queue time`, width: 8, left: lines('QueueTime', 'p99') }),
      );
    });
    if (dashboards.length > 1) {
      const pages = dashboards.slice(1).map((_, i) => routerCellDashboardName(prefix, i + 2));
      dashboards[0].addWidgets(
        new cloudwatch.TextWidget({
          width: 24,
          height: 2,
          markdown: `Cells past the first ${CELLS_PER_DASHBOARD}: ${pages.map((name) => `[${name}](#dashboards:name=${name})`).join(' · ')}`,
        }),
      );
    }
    this.dashboards = dashboards;
  }
}
