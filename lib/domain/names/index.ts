import { createHash } from 'crypto';

/**
 * Every name that two parts of the factory must agree on: a stack and the pipeline that deploys it,
 * a role and the IAM policy in another account that trusts or assumes it, an SSM parameter and the
 * CLI that reads it. One place, so a rename cannot leave one side behind. Pure (no CDK, no AWS SDK):
 * the CLI, the move engine and the constructs all import it. `app` is the fleet's `app`, at most 21
 * characters (lib/domain/fleet/validate.ts); test/domain/names/names.test.ts checks every name against AWS's limits.
 */

// Stacks and the pipeline

/**
 * The CDK bootstrap qualifier every environment of the fleet is bootstrapped with: CDK's default
 * (DefaultStackSynthesizer.DEFAULT_QUALIFIER; a test holds the two equal). Its roles are
 * `cdk-<qualifier>-deploy-role-<account>-<region>` and the like.
 */
export const CDK_BOOTSTRAP_QUALIFIER = 'hnb659fds';

/** Stack name of a cell: `<app>-cell-<id>`. */
export const cellStackName = (app: string, cellId: string) => `${app}-cell-${cellId}`;

/** Stack name of cell zero's adoption stack (what the factory adds in front of an existing service): `<app>-cell-<id>-adoption`. */
export const cellZeroStackName = (app: string, cellId: string) => `${app}-cell-${cellId}-adoption`;

/** Stack name of a region's routers: `<app>-router-<region>` (VPC, NLB, target groups, cell links, mapping bucket). */
export const routerStackName = (app: string, region: string) => `${app}-router-${region}`;

/**
 * Which groups of a region a stack holds: the canary group (the first of `router.groups`) alone, so
 * the pipeline can bake it before the rest of the region's groups change, or every other group.
 */
export type RouterGroupsPart = 'canary' | 'rest';

/** Stack name of a region's router groups: `<app>-router-<region>-canary-group`, `<app>-router-<region>-groups`. */
export const routerGroupsStackName = (app: string, region: string, part: RouterGroupsPart) =>
  `${routerStackName(app, region)}-${part === 'canary' ? 'canary-group' : 'groups'}`;

/** Stack name (and construct id) of the delivery pipeline, in the tooling account. */
export const pipelineStackName = (app: string) => `${app}-pipeline`;

/** The CodePipeline pipeline: what the bake steps read their execution from. */
export const codePipelineName = (app: string) => `${app}-cells`;

/** Prefix of the names of the stage steps' CodeBuild projects, which the pipeline's action role starts by pattern. */
export const stageProjectPrefix = (app: string) => `${app}-stage-`;

/** The CodeBuild project name of stage step `stepId` (CodeBuild allows 255 characters of `[A-Za-z0-9_-]`). */
export function stageProjectName(app: string, stepId: string): string {
  const name = `${stageProjectPrefix(app)}${stepId}`;
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]{1,254}$/.test(name))
    throw new Error(`stageProjectName: \`${name}\` is not a CodeBuild project name (up to 255 of A-Z a-z 0-9 _ -)`);
  return name;
}

// Prefixes of the per-cell and per-region names (alarms, topics, dashboards, roles)

/** What every name stamped in a cell starts with: `<app>-<cell>`. */
export const cellNamePrefix = (app: string, cellId: string) => `${app}-${cellId}`;

/** What every name stamped in a region's router stacks starts with: its stack name. */
export const routerNamePrefix = routerStackName;

/** Every router role of the router account starts with it; a cell's endpoint reader role trusts `<prefix>*`. */
export const routerRolePrefix = (app: string) => `${app}-router-`;

// Roles

/** Role in each cell account that the routers' stacks assume to read the cell's endpoint service parameter (and nothing else). */
export const cellEndpointReaderRoleName = (app: string, cellId: string) => `${cellNamePrefix(app, cellId)}-ep-reader`;

/**
 * Role in each cell account that operators of the router account assume for `cellctl capacity`: read
 * the cell's metrics (`cloudwatch:GetMetricData`) and its signals parameter, nothing else.
 */
export const cellMetricsReaderRoleName = (app: string, cellId: string) => `${cellNamePrefix(app, cellId)}-metrics-reader`;

/**
 * Role in each cell account that operators of the router account assume for `cellctl zone drain
 * --failover-writers`: read where the cell's database writer runs and fail it over, nothing else.
 */
export const cellWriterFailoverRoleName = (app: string, cellId: string) => `${cellNamePrefix(app, cellId)}-db-failover`;

/** A cell's bake-watcher role: the pipeline's bake step assumes it to read the cell's alarms. */
export const bakeWatcherRoleName = (app: string, cellId: string) => `${cellNamePrefix(app, cellId)}-bake-watcher`;

/** A region's router bake-watcher role: the pipeline's router bake assumes it to read the group alarms. */
export const routerBakeWatcherRoleName = (app: string, region: string) => `${routerNamePrefix(app, region)}-bake-watcher`;

/** Name of a stack's deletion-protector role, shared by the stack and the pipeline: `<prefix>-protector`. */
export const deletionProtectorRoleName = (prefix: string) => `${prefix}-protector`;

/** The deletion-protector role of a cell's stack. */
export const cellDeletionProtectorRoleName = (app: string, cellId: string) => deletionProtectorRoleName(cellNamePrefix(app, cellId));

/** The deletion-protector role of a region's router stack. */
export const routerDeletionProtectorRoleName = (app: string, region: string) => deletionProtectorRoleName(routerNamePrefix(app, region));

/** With lanes: the deletion-protector role of a region's group stack (its lane NLBs). */
export const routerGroupsDeletionProtectorRoleName = (app: string, region: string, part: RouterGroupsPart) =>
  deletionProtectorRoleName(`${routerNamePrefix(app, region)}-${part === 'canary' ? 'canary' : 'lanes'}`);

/** The role a region's router stack runs its custom resources as (mapping seed, endpoint lookups): it assumes the cells' reader roles. */
export const routerCustomResourceRoleName = (app: string, region: string) => `${routerNamePrefix(app, region)}-custom-resources`;

/**
 * The task role of a router group in one region: `<app>-router-<region>-<group>-task`, or when that
 * is longer than IAM's 64 characters `<app>-router-task-<16 hex of region/group>`. Named, so the
 * region's router stack (which deploys first) can name each group's role in its mapping bucket's
 * policy: only that group's tasks write its `served/<group>/` reports.
 */
export function routerTaskRoleName(app: string, region: string, group: string): string {
  const name = `${routerNamePrefix(app, region)}-${group}-task`;
  if (name.length <= 64) return name;
  return `${routerRolePrefix(app)}task-${createHash('sha256').update(`${region}/${group}`).digest('hex').slice(0, 16)}`;
}

/** The publisher role, in the router account: writes every region's mapping bucket. */
export const publisherRoleName = (app: string) => `${app}-mapping-publisher`;

/** The mover task's role in each cell account: its database secret, its own hand-off lanes. */
export const moverTaskRoleName = (app: string, cell: string) => `${cellNamePrefix(app, cell)}-mover`;

/** The role the move operator assumes in each cell account to run and watch mover tasks, nothing else. */
export const moverLauncherRoleName = (app: string, cell: string) => `${cellNamePrefix(app, cell)}-mover-launcher`;

/** The operator of AWS moves, in the router account: `cellctl move` without `--local` runs as it. */
export const moveOperatorRoleName = (app: string) => `${app}-move-operator`;

// SSM parameters

/** SSM parameter, in each cell's account and region, holding the name of the cell's PrivateLink endpoint service. */
export const cellEndpointServiceParameter = (app: string, cellId: string) => `/${app}/cell/${cellId}/endpoint-service-name`;

/** SSM parameter, in each cell's account and region, naming the metrics of the cell's own signals (JSON, lib/domain/capacity/signals.ts). */
export const cellSignalsParameter = (app: string, cellId: string) => `/${app}/cell/${cellId}/signals`;

/** SSM parameter (each cell's account and region) describing how to run its mover task (JSON). */
export const moverParameter = (app: string, cell: string) => `/${app}/cell/${cell}/mover`;

/** SSM parameter, in the router account in each region, naming that region's mapping bucket. */
export const mappingBucketParameter = (app: string) => `/${app}/router/mapping-bucket`;

/** SSM parameter (router account, each region): the `router.homeRegion` the region's router stack was deployed with (HomeRegionGuard). */
export const routerHomeRegionParameter = (app: string) => `/${app}/router/home-region`;

/** SSM parameter (router account, each region) naming the region's router ECS cluster. */
export const routerClusterParameter = (app: string) => `/${app}/router/cluster-name`;

/**
 * What the region's router stack hands to its group stacks, as SSM parameters of the router account
 * in that region (`/<app>/router/...`), never as CloudFormation exports. A group stack reads them
 * as `AWS::SSM::Parameter::Value<String>` template parameters, resolved on each deploy: nothing
 * ties the two stacks together in CloudFormation, so a removed group or a replaced target group never
 * meets "Export ... cannot be updated as it is in use" ("After another stack imports an output value,
 * you can't delete the stack that is exporting the output value or modify the exported output
 * value", CloudFormation, `Fn::ImportValue`). Each parameter is read at every create or update of
 * the group stack (CloudFormation User Guide, "CloudFormation-supplied parameter types", SSM
 * parameter types). The order is the pipeline's: the router stack deploys before the
 * group stacks (first deploy included), and a group stack's deploy reads the values current then.
 */
export const routerParameters = {
  clusterName: routerClusterParameter,
  /** The router tasks' private subnets, comma-separated, one per zone in the fleet's zone order. */
  taskSubnetIds: (app: string) => `/${app}/router/task-subnet-ids`,
  taskSecurityGroupId: (app: string) => `/${app}/router/task-security-group-id`,
  /** The cell endpoints' subnets by AZ ID, JSON (the agent's ZONE_NETWORKS). */
  zoneNetworks: (app: string) => `/${app}/router/zone-networks`,
  targetGroupArn: (app: string, group: string) => `/${app}/router/groups/${group}/target-group-arn`,
  /** With lanes: the router VPC, its public subnets (the lane NLBs'), the NLB security group and access-log bucket. */
  vpcId: (app: string) => `/${app}/router/vpc-id`,
  publicSubnetIds: (app: string) => `/${app}/router/public-subnet-ids`,
  loadBalancerSecurityGroupId: (app: string) => `/${app}/router/load-balancer-security-group-id`,
  accessLogBucket: (app: string) => `/${app}/router/access-log-bucket`,
  /** A lane's NLB DNS name and canonical hosted zone, written by its lane stack (`cellctl lanes where` reads them). */
  lanes: (app: string) => `/${app}/router/lanes`,
  laneDnsName: (app: string, lane: number) => `/${app}/router/lanes/${lane}/dns-name`,
  laneHostedZoneId: (app: string, lane: number) => `/${app}/router/lanes/${lane}/hosted-zone-id`,
  /** The router's NLBs, which `cellctl zone drain` shifts: the entry's (without lanes) or each lane's. */
  loadBalancerArn: (app: string) => `/${app}/router/load-balancer-arn`,
  laneLoadBalancerArn: (app: string, lane: number) => `/${app}/router/lanes/${lane}/load-balancer-arn`,
} as const;

/** A shard's name in the fleet's lanes zone: `shard-1-4.<region>.<zone>` (aliases to the shard's lane NLBs). */
export const shardRecordName = (shardLanes: readonly number[], region: string, zone: string) => `shard-${shardLanes.join('-')}.${region}.${zone}`;

/** SSM parameter (router account, the fleet's `router.homeRegion`) naming the move bucket. */
export const moveBucketParameter = (app: string) => `/${app}/moves/bucket`;

// Buckets, services, alarms

/** Prefix of the move bucket's name; the name ends with part of the stack id (a retried create gets a new one). */
export const moveBucketNamePrefix = (app: string, routerAccount: string) => `${app}-moves-${routerAccount}`;

/** The ECS service of a router group: `<app>-router-<region>-<group>`. */
export const routerServiceName = (app: string, region: string, group: string) => `${routerNamePrefix(app, region)}-${group}`;

/** A region's router alarm topic, created by its router stack, notified by its group stacks' alarms too. */
export const routerAlarmTopicName = (app: string, region: string) => `${routerNamePrefix(app, region)}-alarms`;

/** A cell's composite health alarm (CellAlarms.health): what the pipeline's bake watches. */
export const cellHealthAlarmName = (app: string, cellId: string) => `${cellNamePrefix(app, cellId)}-health`;

/** The name of a group's composite health alarm: what ECS deployments roll back on and the pipeline bakes on. */
export const routerGroupHealthAlarmName = (app: string, region: string, group: string) => `${routerNamePrefix(app, region)}-${group}-health`;
