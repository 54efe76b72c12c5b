import { cidrsOverlap, CidrRange, parseCidr } from './cidr';
import {
  BAKE_SECONDS_RANGE,
  DEFAULT_ALARMS,
  DEFAULT_CAPACITY,
  DEFAULT_BUCKET_COUNT,
  DEFAULT_CELL_ENDPOINT_TEMPLATE,
  DEFAULT_DATABASE_PORT,
  defaultRouterSlots,
  MAX_ROUTER_SLOTS,
  CELLS_PER_ENDPOINT_SUBNET,
  DEFAULT_PARTITION_KEY,
  DEFAULT_PUBLISH_BAKE_SECONDS,
  ROUTER_SUBNET_MASKS,
  DEFAULT_ROUTER_GROUPS,
  MAX_ROUTER_GROUP_WEIGHT,
  MAX_ROUTER_GROUPS,
  postgresVersionOf,
  postgresVersionProblem,
  tenantMaxConnOf,
  clientMaxConnPerCellOf,
  DEFAULT_MAX_BODY_BYTES,
  MAX_BODY_BYTES_LIMIT,
  MAX_ELSEWHERE_REGIONS,
} from './defaults';
import { cellZeroProblems, DEFAULT_CELL_ZERO_ID, endpointGenerationProblems, resolveCellZero } from './cell-zero';
import { crossRegionProblems } from './privatelink-regions';
import { homesProblems, resolveHomes } from './homes';
import { failoverRegionOf, mostReachedCells, ReachCell, regionUrlProblem } from './reach';
import { availabilityZoneProblems, PARTITIONS, regionPartition } from './regions';
import { LIMITS, QUOTA_CODES } from '../limits/quotas';
import {
  bakeWatcherRoleName,
  cellEndpointReaderRoleName,
  cellMetricsReaderRoleName,
  cellWriterFailoverRoleName,
  moverLauncherRoleName,
  moverTaskRoleName,
} from '../names';
import { structureProblems } from './schema';
import {
  AlarmThresholds,
  Cell,
  CellConfig,
  CellShape,
  Fleet,
  FleetInput,
  RouterGroupConfig,
  RouterLanes,
  RouterLanesConfig,
  RouterReach,
} from './types';
import { extendShards, LaneSettings, laneSettingsProblems, shardSetProblems } from '../lanes/shards';
import { LANES_FILE_NAME } from '../lanes/lanes-file';
import { deploymentWindowProblems } from './deployment-window';
import { jwtKeyProblems } from './jwt';
import { APP_NAME, CELL_ID, TIER_NAME } from './patterns';
import { keyProblem } from '../mapping/key';

const ACCOUNTS_FILE = 'cells.accounts.json';

export { APP_NAME, CELL_ID } from './patterns';
const ACCOUNT_ID = /^\d{12}$/;
const HEADER_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
const FARGATE_CPU = [256, 512, 1024, 2048, 4096, 8192, 16384];
const INSTANCE_TYPE = /^[a-z][a-z0-9-]*\.[a-z0-9]+$/;
const CIDR_PREFIX = { min: 16, max: 22 } as const;
const WAF_RATE_LIMIT = { min: 10, max: 2_000_000_000 } as const;

/** Cell id → 12-digit account id, as written by `cellctl accounts ensure` to `cells.accounts.json`. */
export type CellAccounts = Readonly<Record<string, string>>;

/**
 * Thrown when the fleet config (or its accounts file) is invalid; `problems` has one line per
 * problem and `file` names the file they are in.
 */
export class FleetConfigError extends Error {
  constructor(
    public readonly problems: readonly string[],
    public readonly file: string = 'cells.config.ts',
  ) {
    super(
      problems.length === 1 && problems[0].startsWith(`${file}`)
        ? problems[0]
        : `${file} has ${problems.length} problem(s):\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
    this.name = 'FleetConfigError';
  }
}

/** The fleet's partition, for the ARNs validation expects (`aws` while the partition itself is invalid: that has its own problem). */
const fleetPartition = (input: FleetInput): string =>
  (PARTITIONS as readonly string[]).includes(input.partition ?? 'aws') ? (input.partition ?? 'aws') : 'aws';

const isInt = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n);
const isPositive = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n > 0;

function appProblems(input: FleetInput): string[] {
  const problems: string[] = [];
  if (typeof input.app !== 'string' || !APP_NAME.test(input.app)) {
    problems.push(`app: \`${input.app}\` is not a valid name; use 2-21 characters of a-z, 0-9 and '-', starting with a letter`);
  }
  const bucketCount = input.bucketCount ?? DEFAULT_BUCKET_COUNT;
  if (!isInt(bucketCount) || bucketCount < 1024 || bucketCount > 1_048_576 || (bucketCount & (bucketCount - 1)) !== 0) {
    problems.push(`bucketCount: ${bucketCount} must be a power of two between 1024 and 1048576 (default 16384)`);
  }
  const key = input.partitionKey ?? DEFAULT_PARTITION_KEY;
  if (key.source === 'header' && !HEADER_NAME.test(key.name)) {
    problems.push(`partitionKey.name: \`${key.name}\` is not a lower-case HTTP header name such as \`x-tenant-id\``);
  } else if (key.source === 'path' && (!isInt(key.segment) || key.segment < 1 || key.segment > 16)) {
    problems.push(`partitionKey.segment: ${key.segment} must be an integer from 1 (first path segment) to 16`);
  } else if (key.source === 'host' && (!isInt(key.label) || key.label < 1 || key.label > 8)) {
    problems.push(`partitionKey.label: ${key.label} must be an integer from 1 (left-most host label) to 8`);
  } else if (key.source === 'jwt') {
    problems.push(...jwtKeyProblems(key));
  } else if (!['header', 'path', 'host'].includes(key.source)) {
    problems.push(`partitionKey.source: must be 'header', 'path', 'host' or 'jwt'`);
  }
  for (const role of ['tooling', 'router'] as const) {
    const account = input.accounts?.[role];
    if (typeof account !== 'string' || !ACCOUNT_ID.test(account)) {
      problems.push(`accounts.${role}: \`${account}\` is not a 12-digit AWS account id`);
    }
  }
  const workload = input.workload;
  if (!workload) {
    problems.push('workload: missing; set the container image, port and health-check path every cell runs');
  } else {
    if (typeof workload.image !== 'string' || workload.image.trim() === '') problems.push('workload.image: empty; set a container image');
    for (const field of ['containerPort', 'databasePort'] as const) {
      const port = workload[field];
      if (port !== undefined && (!isInt(port) || port < 1 || port > 65535)) {
        problems.push(`workload.${field}: ${port} is not a TCP port (1-65535)`);
      }
    }
    if (typeof workload.healthCheckPath !== 'string' || !workload.healthCheckPath.startsWith('/')) {
      problems.push(`workload.healthCheckPath: \`${workload.healthCheckPath}\` must start with '/'`);
    }
  }
  return problems;
}

function regionProblems(input: FleetInput): string[] {
  const regions = Object.entries(input.regions ?? {});
  if (regions.length === 0) return ['regions: none; describe at least one region with its Availability Zones'];
  const partition = input.partition ?? 'aws';
  if (!(PARTITIONS as readonly string[]).includes(partition))
    return [`partition: \`${partition}\` must be one of ${PARTITIONS.join(', ')} (default aws)`];
  // One fleet, one partition: IAM roles cannot be assumed across partitions, nor PrivateLink reach across.
  const elsewhere = regions.map(([region]) => region).filter((region) => regionPartition(region) !== partition);
  if (elsewhere.length > 0) {
    const fix = (region: string) =>
      partition === 'aws'
        ? `set \`partition: '${regionPartition(region)}'\` if every region is there, or use regions of one partition`
        : 'use regions of one partition';
    return elsewhere.map((region) => `region \`${region}\`: in partition ${regionPartition(region)}, not the fleet's ${partition}; ${fix(region)}`);
  }
  return regions.flatMap(([region, config]) => availabilityZoneProblems(region, config?.availabilityZones ?? []));
}

/** Problems with one shape: limits and sizes that cannot work together. */
export function shapeProblems(name: string, shape: CellShape): string[] {
  const at = `shape \`${name}\``;
  const problems: string[] = [];
  if (shape.compute !== 'fargate' && shape.compute !== 'ec2') problems.push(`${at}: compute must be 'fargate' or 'ec2'`);
  if (shape.compute === 'fargate') {
    if (!FARGATE_CPU.includes(shape.cpu)) problems.push(`${at}: cpu ${shape.cpu} is not a Fargate size (${FARGATE_CPU.join(', ')})`);
    else if (!isInt(shape.memoryMiB) || shape.memoryMiB < shape.cpu * 2 || shape.memoryMiB > shape.cpu * 8) {
      problems.push(`${at}: memoryMiB ${shape.memoryMiB} does not fit cpu ${shape.cpu}; Fargate needs ${shape.cpu * 2}-${shape.cpu * 8} MiB`);
    }
  } else if (shape.compute === 'ec2') {
    if (shape.instanceType !== undefined && !INSTANCE_TYPE.test(shape.instanceType)) {
      problems.push(`${at}: instanceType \`${shape.instanceType}\` is not an EC2 instance type such as \`m7g.large\``);
    }
    if (!isPositive(shape.memoryMiB)) problems.push(`${at}: memoryMiB must be positive`);
  }
  const { min, desired, max } = shape.capacity ?? ({} as CellShape['capacity']);
  if (![min, desired, max].every(isInt) || min < 2 || !(min <= desired && desired <= max)) {
    problems.push(
      `${at}: capacity needs integers with 2 <= min <= desired <= max (one per AZ at least); got min ${min}, desired ${desired}, max ${max}`,
    );
  }
  const db = shape.database;
  if (!db) {
    problems.push(`${at}: database missing`);
  } else {
    if (db.engine !== 'aurora-postgresql' && db.engine !== 'rds-postgresql')
      problems.push(`${at}: database.engine must be 'aurora-postgresql' or 'rds-postgresql'`);
    if (!/^[a-z][a-z0-9]*\.[a-z0-9]+$/.test(db.instanceClass ?? ''))
      problems.push(`${at}: database.instanceClass \`${db.instanceClass}\` should look like \`r6g.large\` (no 'db.' prefix)`);
    if (db.allocatedStorageGiB !== undefined && (!isInt(db.allocatedStorageGiB) || db.allocatedStorageGiB < 20 || db.allocatedStorageGiB > 65536)) {
      problems.push(`${at}: database.allocatedStorageGiB ${db.allocatedStorageGiB} must be an integer from 20 to 65536`);
    }
    if (db.backupRetentionDays !== undefined && (!isInt(db.backupRetentionDays) || db.backupRetentionDays < 1 || db.backupRetentionDays > 35)) {
      problems.push(`${at}: database.backupRetentionDays ${db.backupRetentionDays} must be 1-35`);
    }
    const versionProblem = postgresVersionProblem(postgresVersionOf(db));
    if (versionProblem) problems.push(`${at}: database.engineVersion ${versionProblem}`);
  }
  const limits = shape.limits;
  if (!limits) {
    problems.push(`${at}: limits missing; record the load the shape was tested at`);
  } else {
    if (!isPositive(limits.requestsPerSecond)) problems.push(`${at}: limits.requestsPerSecond must be positive`);
    if (!isInt(limits.maxTenants) || limits.maxTenants < 1) problems.push(`${at}: limits.maxTenants must be a positive integer`);
    const rate = limits.tenantRequestsPer5Min;
    if (!isInt(rate) || rate < WAF_RATE_LIMIT.min || rate > WAF_RATE_LIMIT.max) {
      problems.push(`${at}: limits.tenantRequestsPer5Min ${rate} must be an integer WAF accepts (${WAF_RATE_LIMIT.min}-${WAF_RATE_LIMIT.max})`);
    } else if (isPositive(limits.requestsPerSecond) && rate > limits.requestsPerSecond * 300) {
      problems.push(
        `${at}: limits.tenantRequestsPer5Min ${rate} lets one tenant exceed the whole cell's tested ${limits.requestsPerSecond} rps (${limits.requestsPerSecond * 300} per 5 min); lower it`,
      );
    }
  }
  return problems;
}

function alarmProblems(alarms: AlarmThresholds): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(alarms)) {
    if (!isPositive(value)) problems.push(`alarms.${name}: ${value} must be a positive number`);
  }
  for (const name of ['errorRatePercent', 'dbCpuPercent'] as const) {
    if (alarms[name] > 100) problems.push(`alarms.${name}: ${alarms[name]} is a percentage; use 1-100`);
  }
  if (!isInt(alarms.evaluationPeriods) || alarms.evaluationPeriods > 10) {
    problems.push(`alarms.evaluationPeriods: ${alarms.evaluationPeriods} must be an integer from 1 to 10`);
  }
  return problems;
}

const GROUP_NAME = /^[a-z][a-z0-9-]{0,30}$/;
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

const HOSTED_ZONE_ID = /^Z[A-Z0-9]{1,31}$/;
const DOMAIN = /^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
/**
 * What a region's last group stack holds with lanes (lanes 2..count): each lane's NLB, listener,
 * target group, service, task definition, role, scaling, alarms and parameters, the stack's
 * protector role and policy, and one Route 53 record set group per shard name. test/app/lanes.test.ts
 * checks these figures against a synthesized stack.
 */
export const LANE_STACK_RESOURCES = { perLane: 26, perStack: 2, perShardName: 1 } as const;

/** Resources of the lanes' group stack for `count` lanes and, with shard names, `shards` of them; `autoshift` adds each lane's zonal autoshift configuration. */
export function laneStackResources(count: number, shardNames: number, autoshift = false): number {
  return (
    (LANE_STACK_RESOURCES.perLane + (autoshift ? 1 : 0)) * (count - 1) +
    LANE_STACK_RESOURCES.perStack +
    LANE_STACK_RESOURCES.perShardName * shardNames
  );
}

function laneProblems(input: FleetInput, lanes: RouterLanesConfig): string[] {
  const settings = laneSettingsOf(lanes);
  const problems = laneSettingsProblems(settings);
  const minZones = Math.max(...Object.values(input.regions ?? {}).map((r) => r.availabilityZones?.length ?? 0), 0);
  if (lanes.tasksPerLane !== undefined && (!isInt(lanes.tasksPerLane) || lanes.tasksPerLane < minZones || lanes.tasksPerLane > 100))
    problems.push(
      `router.lanes.tasksPerLane: ${lanes.tasksPerLane} must be an integer from ${minZones} (one task per zone of the region with most zones) to 100`,
    );
  if (lanes.hostedZone) {
    if (!HOSTED_ZONE_ID.test(lanes.hostedZone.id ?? ''))
      problems.push(`router.lanes.hostedZone.id: \`${lanes.hostedZone.id}\` is not a Route 53 hosted zone id (Z followed by capitals and digits)`);
    if (!DOMAIN.test(lanes.hostedZone.name ?? ''))
      problems.push(`router.lanes.hostedZone.name: \`${lanes.hostedZone.name}\` must be the zone's domain name, lower case, without a trailing dot`);
  }
  return problems;
}

/** `router.lanes` as the shard functions take it (maxOverlap's default applied). */
export function laneSettingsOf(lanes: RouterLanesConfig): LaneSettings {
  return { count: lanes.count, perTenant: lanes.perTenant, maxOverlap: lanes.maxOverlap ?? lanes.perTenant - 1 };
}

function routerProblems(input: FleetInput): string[] {
  const router = input.router ?? {};
  const problems: string[] = [];
  if (router.lanes) problems.push(...laneProblems(input, router.lanes));
  const groups = router.lanes ? [] : (router.groups ?? DEFAULT_ROUTER_GROUPS);
  if (router.lanes && router.groups)
    problems.push('router.groups and router.lanes are both set: lanes replace groups (lane 1 is the canary group); delete router.groups');
  if (!router.lanes && groups.length < 2) problems.push('router.groups: list at least two groups (a small canary group first, then the rest)');
  if (groups.length > MAX_ROUTER_GROUPS)
    problems.push(
      `router.groups: ${groups.length} groups, but the NLB forwards to at most ${MAX_ROUTER_GROUPS} target groups (one per group); merge groups`,
    );
  const names = new Set<string>();
  for (const group of groups) {
    if (!GROUP_NAME.test(group.name)) problems.push(`router.groups: name \`${group.name}\` must match ${GROUP_NAME.source}`);
    if (names.has(group.name)) problems.push(`router.groups: \`${group.name}\` is listed twice`);
    names.add(group.name);
    if (group.tasks !== undefined && (!isInt(group.tasks) || group.tasks < 1 || group.tasks > 100)) {
      problems.push(`router.groups: \`${group.name}\` tasks ${group.tasks} must be an integer from 1 to 100`);
    }
    if (group.weight !== undefined && (!isInt(group.weight) || group.weight < 0 || group.weight > MAX_ROUTER_GROUP_WEIGHT)) {
      problems.push(`router.groups: \`${group.name}\` weight ${group.weight} must be an integer from 0 (drained) to ${MAX_ROUTER_GROUP_WEIGHT}`);
    }
  }
  if (groups.length > 0 && groups.every((g) => g.weight === 0)) {
    problems.push('router.groups: every group has weight 0, so the NLB would send new connections nowhere; give at least one group a weight above 0');
  }
  if (router.mappingBucket !== undefined && !BUCKET_NAME.test(router.mappingBucket)) {
    problems.push(`router.mappingBucket: \`${router.mappingBucket}\` is not a valid S3 bucket name`);
  } else if (router.mappingBucket !== undefined && router.mappingBucket.length > 50) {
    problems.push(
      `router.mappingBucket: \`${router.mappingBucket}\` is ${router.mappingBucket.length} characters; it is a prefix (each region's bucket adds 13), so use at most 50`,
    );
  }
  const bake = router.publishBakeSeconds;
  if (bake !== undefined && (!isInt(bake) || bake < 0 || bake > BAKE_SECONDS_RANGE.max)) {
    problems.push(`router.publishBakeSeconds: ${bake} must be whole seconds from 0 to ${BAKE_SECONDS_RANGE.max}`);
  }
  const cellCount = routedCellCount(input);
  const slots = router.slots ?? defaultRouterSlots(cellCount);
  if (router.slots !== undefined && (!isInt(router.slots) || router.slots < 2 || router.slots > MAX_ROUTER_SLOTS)) {
    problems.push(`router.slots: ${router.slots} must be an integer from 2 to ${MAX_ROUTER_SLOTS}`);
  } else if (slots < cellCount + 1) {
    problems.push(
      `router.slots: ${slots} backend slots cannot serve ${cellCount} cells; a mapping change needs one slot per cell plus one for a cell being replaced: set at least ${cellCount + 1}${router.slots === undefined ? ` (the default stops at ${MAX_ROUTER_SLOTS})` : ' or leave it unset'}`,
    );
  }
  if (router.cellMaxConn !== undefined && (!isInt(router.cellMaxConn) || router.cellMaxConn < 1 || router.cellMaxConn > 10_000)) {
    problems.push(`router.cellMaxConn: ${router.cellMaxConn} must be an integer from 1 to 10000 (concurrent requests per cell per router task)`);
  }
  if (router.queueTimeoutMs !== undefined && (!isInt(router.queueTimeoutMs) || router.queueTimeoutMs < 1 || router.queueTimeoutMs > 60_000)) {
    problems.push(`router.queueTimeoutMs: ${router.queueTimeoutMs} must be whole milliseconds from 1 to 60000`);
  }
  const cellMaxConn = router.cellMaxConn ?? 200;
  if (router.tenantMaxConn !== undefined && (!isInt(router.tenantMaxConn) || router.tenantMaxConn < 1 || router.tenantMaxConn > cellMaxConn)) {
    problems.push(
      `router.tenantMaxConn: ${router.tenantMaxConn} must be a whole number of requests from 1 to router.cellMaxConn (${cellMaxConn}); ${tenantMaxConnOf(cellMaxConn)} leaves a tenant's neighbours half of their cell's slots`,
    );
  }
  const tenantMaxConn = router.tenantMaxConn ?? tenantMaxConnOf(cellMaxConn);
  if (
    router.clientMaxConnPerCell !== undefined &&
    (!isInt(router.clientMaxConnPerCell) || router.clientMaxConnPerCell < 1 || router.clientMaxConnPerCell > tenantMaxConn)
  ) {
    problems.push(
      `router.clientMaxConnPerCell: ${router.clientMaxConnPerCell} must be a whole number of requests from 1 to router.tenantMaxConn (${tenantMaxConn}); ${clientMaxConnPerCellOf(tenantMaxConn)} leaves a tenant's other clients half of its share`,
    );
  }
  if (
    router.maxBodyBytes !== undefined &&
    (!Number.isInteger(router.maxBodyBytes) || router.maxBodyBytes < 0 || router.maxBodyBytes > MAX_BODY_BYTES_LIMIT)
  )
    problems.push(
      `router.maxBodyBytes: ${router.maxBodyBytes} must be a whole number of bytes from 0 (no bodies) to ${MAX_BODY_BYTES_LIMIT} (1 GiB); the default ${DEFAULT_MAX_BODY_BYTES} (10 MiB) is what API Gateway accepts`,
    );
  // Each AZ of a router VPC holds a public, a routers and a cell-endpoints subnet (ROUTER_SUBNET_MASKS).
  const perZone = Object.values(ROUTER_SUBNET_MASKS).reduce((sum, mask) => sum + 2 ** (32 - mask), 0);
  Object.entries(input.regions ?? {}).forEach(([region, config], i) => {
    const cidr = router.cidrs?.[region] ?? `10.255.${i * 16}.0/20`;
    const range = parseCidr(cidr);
    const zones = config?.availabilityZones?.length ?? 0;
    if (!range) problems.push(`router.cidrs.${region}: \`${cidr}\` is not an IPv4 network address such as 10.255.0.0/20`);
    else if (2 ** (32 - range.prefix) < zones * perZone) {
      problems.push(
        `router.cidrs.${region}: ${cidr} holds ${2 ** (32 - range.prefix)} addresses; the router VPC's ${zones} AZs need ${zones * perZone} (a public /${ROUTER_SUBNET_MASKS.public}, a routers /${ROUTER_SUBNET_MASKS.routers} and a cell-endpoints /${ROUTER_SUBNET_MASKS.cellEndpoints} each): give a /${32 - Math.ceil(Math.log2(zones * perZone))} or list fewer AZs`,
      );
    }
  });
  const regions = Object.keys(input.regions ?? {});
  if (router.homeRegion === undefined && regions.length > 1) {
    problems.push(
      `router.homeRegion: not set, and the fleet has ${regions.length} regions; name the region whose router stack holds the publisher and move operator roles and the move bucket (a fleet that deployed before this setting has them in its first region, \`${regions[0]}\`); it never follows the order of \`regions\``,
    );
  } else if (router.homeRegion !== undefined && !regions.includes(router.homeRegion)) {
    problems.push(`router.homeRegion: \`${router.homeRegion}\` is not one of the fleet's regions (${regions.join(', ')})`);
  }
  const template = router.cellEndpointTemplate ?? DEFAULT_CELL_ENDPOINT_TEMPLATE;
  if (!/^(https?|\{scheme\}):\/\//.test(template) || !template.includes('{cell}')) {
    problems.push(
      `router.cellEndpointTemplate: \`${template}\` must be an http(s) URL containing {cell} (or start {scheme}://: https for cells with a certificate, else http)`,
    );
  } else {
    const tls = (input.cells ?? []).filter((c) => c.certificateArn !== undefined);
    const host = template
      .replace(/^[^:]+:\/\//, '')
      .split(/[/:]/)[0]
      .replace('{app}', input.app ?? 'app');
    const tld = host.split('.').pop()!.toLowerCase();
    if (tls.length > 0 && PRIVATE_TLDS.has(tld)) {
      problems.push(
        `cell \`${tls[0].id}\`${tls.length > 1 ? ` (and ${tls.length - 1} more)` : ''}: certificateArn, but routers reach cells as \`${host}\`, and no public CA issues a certificate for a \`.${tld}\` name while router tasks trust only the public CAs; set router.cellEndpointTemplate to a name under a domain you own (\`{scheme}://{cell}.cells.example.com\`: the router VPCs get that private zone, ACM issues its certificates), or leave certificateArn out (the PrivateLink path is private either way)`,
      );
    }
  }
  // Cell zero's https listener is the existing ALB's: routers verify its certificate against the name
  // they reach it by, which under a private top-level domain no public CA can have issued.
  if (input.cellZero?.loadBalancer.protocol === 'https' && /^(https?|\{scheme\}):\/\//.test(template)) {
    const id = input.cellZero.id ?? DEFAULT_CELL_ZERO_ID;
    const host = template
      .replace(/^[^:]+:\/\//, '')
      .split(/[/:]/)[0]
      .replace('{app}', input.app ?? 'app')
      .replace('{cell}', id);
    const tld = host.split('.').pop()!.toLowerCase();
    if (PRIVATE_TLDS.has(tld)) {
      problems.push(
        `cellZero.loadBalancer.protocol: https, but routers reach cell zero as \`${host}\` and verify the existing ALB's certificate against that name, which no public CA issues under \`.${tld}\`; set router.cellEndpointTemplate to a name under a domain you own and add a certificate for \`${id}.<that domain>\` to the existing ALB's listener (ALBs pick certificates by SNI), or adopt an http listener`,
      );
    }
  }
  return problems;
}

function capacityProblems(input: FleetInput): string[] {
  const capacity = input.capacity;
  if (!capacity) return [];
  const problems: string[] = [];
  const { targetUtilisation: target, spareCells: spare, largeTenantShare: share } = capacity;
  if (target !== undefined && !(target > 0 && target < 1)) {
    problems.push(
      `capacity.targetUtilisation: ${target} must be a share above 0 and below 1 of a shape's tested requestsPerSecond (0.5 runs cells at half what they were tested at)`,
    );
  }
  if (spare !== undefined && (!isInt(spare) || spare < 0 || spare > 100))
    problems.push(`capacity.spareCells: ${spare} must be a whole number of cells from 0 to 100`);
  if (share !== undefined && !(share > 0 && share <= 1))
    problems.push(`capacity.largeTenantShare: ${share} must be a share above 0 and at most 1 of a cell's target rate`);
  return problems;
}

/**
 * Tiers and dedicated cells: a dedicated cell serves one valid tenant key, no other cell is
 * dedicated to it, and it is neither the canary nor in a tier; tier names are names; and the
 * default tier has an active regular cell to hold the buckets (a tenant nobody placed lands there).
 */
function placementProblems(input: FleetInput): string[] {
  const cells = input.cells ?? [];
  const problems: string[] = [];
  const defaultTier = input.capacity?.defaultTier ?? DEFAULT_CAPACITY.defaultTier;
  if (!TIER_NAME.test(defaultTier))
    problems.push(`capacity.defaultTier: \`${defaultTier}\` is not a tier name; use 1-31 characters of a-z, 0-9 and '-', starting with a letter`);
  const dedicatedBy = new Map<string, string>();
  for (const cell of cells) {
    const at = `cell \`${cell.id}\``;
    if (cell.tier !== undefined && !TIER_NAME.test(cell.tier))
      problems.push(`${at}: tier \`${cell.tier}\` is not a tier name; use 1-31 characters of a-z, 0-9 and '-', starting with a letter`);
    if (cell.dedicatedTo === undefined) continue;
    const keyIssue = keyProblem(cell.dedicatedTo);
    if (keyIssue) problems.push(`${at}: dedicatedTo ${JSON.stringify(cell.dedicatedTo)}: ${keyIssue}`);
    if (cell.canary)
      problems.push(
        `${at}: a canary cell takes every change first for internal tenants; it cannot be dedicated to \`${cell.dedicatedTo}\` (dedicate another cell)`,
      );
    if (cell.tier !== undefined)
      problems.push(`${at}: dedicatedTo and tier are both set; a dedicated cell serves its one tenant, whatever the tier (delete tier)`);
    const other = dedicatedBy.get(cell.dedicatedTo);
    if (other !== undefined)
      problems.push(
        `${at}: tenant \`${cell.dedicatedTo}\` already has cell \`${other}\` dedicated to it; a tenant is served by one cell (dedicate this one to another tenant, or drop dedicatedTo)`,
      );
    else dedicatedBy.set(cell.dedicatedTo, cell.id);
  }
  const holders = cells.filter(
    (c) => !c.canary && (c.state ?? 'active') === 'active' && c.dedicatedTo === undefined && (c.tier ?? defaultTier) === defaultTier,
  );
  if (cells.some((c) => !c.canary) && holders.length === 0 && TIER_NAME.test(defaultTier)) {
    problems.push(
      `cells: no active regular cell of the default tier \`${defaultTier}\` to hold the mapping's buckets (tenants nobody placed land there); leave one cell's tier unset, or set capacity.defaultTier to one of the cells' tiers`,
    );
  }
  return problems;
}

/**
 * Top-level names no public certificate authority issues for: reserved for private use or testing
 * (`.internal`, ICANN 2024; `.local`, RFC 6762; `.test`, `.example`, `.invalid`, `.localhost`,
 * RFC 2606; `home.arpa`, RFC 8375) and common private suffixes that are not delegated.
 */
const PRIVATE_TLDS = new Set(['internal', 'local', 'localhost', 'test', 'example', 'invalid', 'arpa', 'lan', 'corp', 'home', 'intranet', 'private']);

function organizationProblems(input: FleetInput): string[] {
  const org = input.organization;
  if (!org) return [];
  const problems: string[] = [];
  if (typeof org.accountEmail !== 'string' || !org.accountEmail.includes('{cell}') || !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(org.accountEmail)) {
    problems.push(
      `organization.accountEmail: \`${org.accountEmail}\` must be an email address containing {cell}, for example aws+{app}-{cell}@example.com`,
    );
  }
  if (!/^(ou-[0-9a-z]{4,32}-[a-z0-9]{8,32}|r-[0-9a-z]{4,32})$/.test(org.organizationalUnitId ?? '')) {
    problems.push(`organization.organizationalUnitId: \`${org.organizationalUnitId}\` is not an OU id (ou-xxxx-xxxxxxxx) or root id (r-xxxx)`);
  }
  if (org.roleName !== undefined && !/^[\w+=,.@-]{1,64}$/.test(org.roleName))
    problems.push(`organization.roleName: \`${org.roleName}\` is not an IAM role name`);
  const partition = fleetPartition(input);
  if (
    org.executionPolicyArn !== undefined &&
    !new RegExp(`^arn:${partition}:iam::(aws|\\d{12}|\\{account\\}):policy/.+$`).test(org.executionPolicyArn)
  ) {
    problems.push(
      `organization.executionPolicyArn: \`${org.executionPolicyArn}\` is not an IAM policy ARN (arn:${partition}:iam::aws:policy/NAME, or arn:${partition}:iam::{account}:policy/NAME for a policy created in every account)`,
    );
  }
  return problems;
}

function pipelineProblems(input: FleetInput): string[] {
  const pipeline = input.pipeline;
  if (!pipeline) return [];
  const problems: string[] = [];
  const source = pipeline.source;
  if (source?.kind === 'connection') {
    if (
      !new RegExp(`^arn:${fleetPartition(input)}:(codestar-connections|codeconnections):[a-z0-9-]+:\\d{12}:connection/.+$`).test(source.connectionArn)
    ) {
      problems.push(
        `pipeline.source.connectionArn: \`${source.connectionArn}\` is not a CodeConnections ARN in the fleet's partition (arn:${fleetPartition(input)}:codeconnections:<region>:<account>:connection/<id>)`,
      );
    }
    if (!/^[\w.-]+\/[\w.-]+$/.test(source.repository)) problems.push(`pipeline.source.repository: \`${source.repository}\` must be owner/name`);
    if (!source.branch) problems.push('pipeline.source.branch: empty');
  } else if (source?.kind === 's3') {
    if (!BUCKET_NAME.test(source.bucketName)) problems.push(`pipeline.source.bucketName: \`${source.bucketName}\` is not a valid S3 bucket name`);
    if (!source.objectKey) problems.push('pipeline.source.objectKey: empty');
  } else {
    problems.push("pipeline.source: set { kind: 'connection', connectionArn, repository, branch } or { kind: 's3', bucketName, objectKey }");
  }
  if (pipeline.region !== undefined && !input.regions?.[pipeline.region])
    problems.push(`pipeline.region: \`${pipeline.region}\` is not one of the fleet's regions`);
  if (pipeline.organizationId !== undefined && !/^o-[a-z0-9]{10,32}$/.test(pipeline.organizationId)) {
    problems.push(
      `pipeline.organizationId: \`${pipeline.organizationId}\` is not an AWS Organizations id (o- and 10 to 32 lowercase letters or digits; \`aws organizations describe-organization --query Organization.Id\`)`,
    );
  }
  if (pipeline.deploymentWindow) {
    for (const problem of deploymentWindowProblems(String(pipeline.deploymentWindow.cron ?? '')))
      problems.push(`pipeline.deploymentWindow.cron: ${problem}`);
  }
  return problems;
}

function waveProblems(input: FleetInput): string[] {
  const waves = input.waves;
  if (!waves) return ['waves: missing; set singleCellWaves, growthFactor, maxCellsPerWave and bakeSeconds'];
  const problems: string[] = [];
  if (!isInt(waves.singleCellWaves) || waves.singleCellWaves < 0)
    problems.push(`waves.singleCellWaves: ${waves.singleCellWaves} must be an integer >= 0`);
  if (!(typeof waves.growthFactor === 'number' && waves.growthFactor > 1 && waves.growthFactor <= 10)) {
    problems.push(`waves.growthFactor: ${waves.growthFactor} must be greater than 1 and at most 10`);
  }
  if (!isInt(waves.maxCellsPerWave) || waves.maxCellsPerWave < 1)
    problems.push(`waves.maxCellsPerWave: ${waves.maxCellsPerWave} must be a positive integer`);
  if (!waves.bakeSeconds) {
    problems.push('waves.bakeSeconds: missing; set canary, single and group bake times in seconds');
  } else {
    for (const kind of ['canary', 'single', 'group'] as const) {
      const bake = waves.bakeSeconds[kind];
      if (!isInt(bake) || bake < BAKE_SECONDS_RANGE.min || bake > BAKE_SECONDS_RANGE.max) {
        problems.push(
          `waves.bakeSeconds.${kind}: ${bake} is out of range; use whole seconds from ${BAKE_SECONDS_RANGE.min} to ${BAKE_SECONDS_RANGE.max}`,
        );
      }
    }
  }
  return [...problems, ...declaredWaveProblems(input)];
}

/**
 * Waves declared on the cells (`wave: N`): on every cell or none; 1 holds the canary cells and only
 * them; the numbers run 1, 2, … without a gap; no wave holds more than `waves.maxCellsPerWave`; a
 * region's first wave is the canary's or a single cell, so no group is a region's first contact.
 */
function declaredWaveProblems(input: FleetInput): string[] {
  const cells = input.cells ?? [];
  const declared = cells.filter((c) => c.wave !== undefined);
  if (declared.length === 0) return [];
  const problems: string[] = [];
  if (declared.length < cells.length) {
    const missing = cells.filter((c) => c.wave === undefined).map((c) => c.id);
    return [
      `cells: ${declared.length} of ${cells.length} cells declare a wave; declare one on every cell or on none (no wave: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''})`,
    ];
  }
  for (const c of cells) if (!isInt(c.wave) || c.wave! < 1) problems.push(`cells.${c.id}.wave: ${c.wave} must be a whole number from 1`);
  if (problems.length) return problems;
  const byWave = new Map<number, typeof cells>();
  for (const c of cells) byWave.set(c.wave!, [...(byWave.get(c.wave!) ?? []), c]);
  const numbers = [...byWave.keys()].sort((a, b) => a - b);
  const gap = numbers.findIndex((n, i) => n !== i + 1);
  if (gap >= 0) problems.push(`cells: waves ${numbers.join(', ')} are declared; number them 1, 2, … without a gap (wave ${gap + 1} holds no cell)`);
  for (const c of cells) {
    if (c.canary && c.wave !== 1) problems.push(`cells.${c.id}.wave: ${c.wave}, but ${c.id} is a canary cell; the canary cells are wave 1`);
    if (!c.canary && c.wave === 1)
      problems.push(`cells.${c.id}.wave: 1 is the canary's wave; ${c.id} is not a canary (give it wave 2 or later, or mark it canary)`);
  }
  const cap = input.waves?.maxCellsPerWave;
  for (const [n, of] of byWave) {
    if (isInt(cap) && of.length > cap) problems.push(`cells: wave ${n} holds ${of.length} cells, over waves.maxCellsPerWave (${cap}); split it`);
  }
  const firstWave = new Map<string, number>();
  for (const c of cells) firstWave.set(c.region, Math.min(firstWave.get(c.region) ?? Infinity, c.wave!));
  for (const [region, n] of firstWave) {
    if (n !== 1 && byWave.get(n)!.length > 1) {
      problems.push(
        `cells: wave ${n} is ${region}'s first and holds ${byWave.get(n)!.length} cells; a region's first wave is one cell alone (or the canary), so a bad change reaches one of its cells first`,
      );
    }
  }
  return problems;
}

/**
 * The IAM role names stamped per cell (`<app>-<cell>-…`, in the cell's account): the longest decides
 * how long `app` and a cell id may be together.
 */
const CELL_ROLE_NAMES = [
  moverTaskRoleName,
  moverLauncherRoleName,
  bakeWatcherRoleName,
  cellEndpointReaderRoleName,
  cellMetricsReaderRoleName,
  cellWriterFailoverRoleName,
];

/** Cells the routers reach: the factory's and cell zero, each with a slot, an interface endpoint and a name. */
const routedCellCount = (input: FleetInput): number => (input.cells?.length ?? 0) + (input.cellZero ? 1 : 0);

/** Names derived from `app` and the cell ids that would pass IAM's 64 characters: CDK would throw at synth. */
function derivedNameProblems(input: FleetInput): string[] {
  if (typeof input.app !== 'string') return [];
  const limit = LIMITS.roleName.value;
  const ids = [...(input.cells ?? []), ...(input.cellZero ? [{ id: input.cellZero.id ?? DEFAULT_CELL_ZERO_ID }] : [])];
  return ids
    .filter((c) => typeof c.id === 'string')
    .flatMap((cell) => {
      const longest = CELL_ROLE_NAMES.map((name) => name(input.app, cell.id)).sort((a, b) => b.length - a.length)[0];
      if (longest.length <= limit) return [];
      return [
        `cell \`${cell.id}\`: its role \`${longest}\` is ${longest.length} characters, over IAM's ${limit} for a role name; \`app\` and a cell id may have ${limit - (longest.length - input.app.length - cell.id.length)} characters together: shorten the cell id or \`app\``,
      ];
    });
}

/** The cells routers reach, from the config as written: every cell, and cell zero. */
function reachCellsOf(input: FleetInput): ReachCell[] {
  const cells: ReachCell[] = (input.cells ?? [])
    .filter((c) => typeof c.id === 'string' && typeof c.region === 'string')
    .map((c) => ({ id: c.id, region: c.region, ...(c.failoverRegion !== undefined ? { failoverRegion: c.failoverRegion } : {}) }));
  const zero = input.cellZero;
  if (zero && typeof zero.region === 'string') cells.push({ id: zero.id ?? DEFAULT_CELL_ZERO_ID, region: zero.region });
  return cells;
}

/** `router.reach`, `router.regionUrls` and each cell's `failoverRegion`. */
function reachProblems(input: FleetInput): string[] {
  const problems: string[] = [];
  const regions = Object.keys(input.regions ?? {});
  const reach: RouterReach = input.router?.reach ?? 'every-region';
  for (const cell of input.cells ?? []) {
    if (cell.failoverRegion === undefined) continue;
    const at = `cell \`${cell.id}\``;
    if (!regions.includes(cell.failoverRegion))
      problems.push(
        `${at}: failoverRegion \`${cell.failoverRegion}\` is not one of the fleet's regions (${regions.join(', ')}); name one of them, or leave it out`,
      );
    else if (cell.failoverRegion === cell.region)
      problems.push(
        `${at}: failoverRegion is the cell's own region \`${cell.region}\`; name another region (its routers link the cell too), or leave it out`,
      );
  }
  const urls = input.router?.regionUrls ?? {};
  for (const [region, url] of Object.entries(urls)) {
    if (!regions.includes(region))
      problems.push(`router.regionUrls.${region}: \`${region}\` is not one of the fleet's regions (${regions.join(', ')}); delete it`);
    const problem = regionUrlProblem(url);
    if (problem) problems.push(`router.regionUrls.${region}: \`${url}\` ${problem}`);
  }
  // A redirect backend per other region named in regionUrls (ELSEWHERE lists their cells whatever the reach).
  const named = Object.keys(urls).filter((r) => regions.includes(r)).length;
  if (named - 1 > MAX_ELSEWHERE_REGIONS)
    problems.push(
      `router.regionUrls: ${named} regions, but a router sends requests to at most ${MAX_ELSEWHERE_REGIONS} other regions (redirect backends in its configuration); name at most ${MAX_ELSEWHERE_REGIONS + 1}, or split the fleet`,
    );
  // The redirect goes to another host: a key read from the host would become the region's name,
  // and clients drop Authorization on a redirect to another host (the Fetch standard, curl -L, requests).
  const source = input.partitionKey?.source;
  const redirects = reach === 'home-and-failover' || Object.keys(urls).length > 0;
  const setting = reach === 'home-and-failover' ? "router.reach: 'home-and-failover'" : 'router.regionUrls';
  if (redirects && source === 'host')
    problems.push(
      `${setting}: a router answers a request for a cell it does not link with a 307 to the cell's region URL, and partitionKey.source 'host' would then read that region's host name as the tenant; with a host key, leave reach at 'every-region' and regionUrls unset`,
    );
  if (redirects && source === 'jwt')
    problems.push(
      `${setting}: a router answers a request for a cell it does not link with a 307 to the cell's region URL, and clients drop the Authorization header (the verified token) on a redirect to another host (fetch, curl -L, Python requests), so the request would arrive unauthenticated; with partitionKey.source 'jwt', leave reach at 'every-region' and regionUrls unset`,
    );
  // Own zone first: each zone's cells are served by the router tasks in that zone, so every zone
  // needs one of each group (fewer tasks than zones leaves a zone's cells only the spill-over).
  if (input.router?.zoneAffinity === 'own-zone' && !input.router?.lanes) {
    const zones = Math.max(0, ...Object.values(input.regions ?? {}).map((r) => r?.availabilityZones?.length ?? 0));
    for (const g of input.router?.groups ?? DEFAULT_ROUTER_GROUPS) {
      const tasks = g.tasks ?? 2;
      if (tasks < zones)
        problems.push(
          `router.groups: group \`${g.name}\` runs ${tasks} task(s) over ${zones} zones; with router.zoneAffinity 'own-zone' each zone's cells are served by the router tasks in that zone, so give every group at least ${zones} tasks (a multiple of ${zones} keeps the zones even), or use 'spread'`,
        );
    }
  }
  if (reach === 'home-and-failover') {
    const missing = regions.filter((r) => urls[r] === undefined);
    if (regions.length > 1 && missing.length > 0)
      problems.push(
        `router.regionUrls: no URL for ${missing.join(', ')}; with router.reach 'home-and-failover' a router answers a request for a cell it does not link with a redirect to the cell's region, so every region needs the origin its clients use (for example { '${missing[0]}': 'https://${missing[0]}.api.example.com' })`,
      );
  }
  return problems;
}

/**
 * Quotas the fleet declares it has been granted, and the fleet against them: every router VPC holds
 * one interface endpoint per cell of the fleet (cross-region PrivateLink for other regions' cells).
 */
function quotaProblems(input: FleetInput): string[] {
  const problems: string[] = [];
  const declared = input.quotas?.interfaceEndpointsPerVpc;
  const endpointsLimit = LIMITS.interfaceEndpointsPerVpc;
  if (declared !== undefined && (!isInt(declared) || declared < endpointsLimit.value)) {
    problems.push(
      `quotas.interfaceEndpointsPerVpc: ${declared} must be a whole number of at least AWS's default ${endpointsLimit.value}: the value the router account has been granted in every region`,
    );
    return problems;
  }
  const granted = declared ?? endpointsLimit.value;
  const reach: RouterReach = input.router?.reach ?? 'every-region';
  const regions = Object.keys(input.regions ?? {});
  // Each router VPC links the cells it reaches: every cell, or (home-and-failover) those of its region and those it is the failover of.
  const cells = reach === 'every-region' || regions.length < 2 ? routedCellCount(input) : mostReachedCells(reachCellsOf(input), regions, reach).cells;
  const reachNote = reach === 'every-region' ? '' : ' (the most any router region links under router.reach home-and-failover)';
  if (cells > CELLS_PER_ENDPOINT_SUBNET) {
    problems.push(
      `cells: ${cells} cells${reachNote} need ${cells} addresses in every router VPC's cell-endpoint subnet of each AZ, which holds ${CELLS_PER_ENDPOINT_SUBNET} (a /${ROUTER_SUBNET_MASKS.cellEndpoints}); split the fleet across pipelines (docs/limits.md, "Router reach")`,
    );
  }
  if (cells > granted) {
    const { serviceCode, quotaCode } = QUOTA_CODES.interfaceEndpointsPerVpc;
    problems.push(
      `cells: ${cells} cells${reachNote} need ${cells} interface endpoints in every router VPC (one per cell ${reach === 'every-region' ? 'of the fleet' : 'it links'}), over the ${granted} ` +
        `${declared === undefined ? 'AWS grants by default' : 'declared in quotas.interfaceEndpointsPerVpc'} (${endpointsLimit.source}); request at least ${cells} for the router account in every region ` +
        `(\`aws service-quotas request-service-quota-increase --service-code ${serviceCode} --quota-code ${quotaCode} --desired-value ${cells} --region R\`, docs/limits.md) and, once granted, set quotas.interfaceEndpointsPerVpc`,
    );
  }
  return problems;
}

export interface FleetProblemOptions {
  /**
   * Accept cells without an account (what `cellctl accounts ensure` is about to vend).
   * @default false
   */
  readonly allowMissingAccounts?: boolean;
  /** The accounts file's name, for problems with an account recorded there. @default 'cells.accounts.json' */
  readonly accountsFile?: string;
  /**
   * The stored default shards of `router.lanes` (`cells.lanes.json`), checked against it.
   * @default - generated from router.lanes (what `cellctl lanes init` would write)
   */
  readonly laneShards?: readonly (readonly number[])[];
  /** The lanes file's name, for problems with the stored shards. @default 'cells.lanes.json' */
  readonly lanesFile?: string;
  /** What is wrong with the lanes file (missing, unreadable, for other settings): reported once the config itself is valid. */
  readonly lanesFileProblem?: string;
}

function cellProblems(input: FleetInput, accounts: CellAccounts, options: FleetProblemOptions): string[] {
  const cells = input.cells ?? [];
  if (cells.length === 0) return ['cells: none; describe at least one canary cell and one regular cell'];
  const problems: string[] = [];
  const seen = new Set<string>();
  const duplicates = new Set<CellConfig>();
  const ranges: { id: string; cidr: string; range: CidrRange }[] = [];
  const accountsFile = options.accountsFile ?? ACCOUNTS_FILE;
  for (const [index, cell] of cells.entries()) {
    const at = CELL_ID.test(cell.id ?? '') ? `cell \`${cell.id}\`` : `cells[${index}]`;
    if (!CELL_ID.test(cell.id ?? '')) {
      problems.push(`${at}: id \`${cell.id}\` is malformed; use 2-31 characters of a-z, 0-9 and '-', starting with a letter`);
    } else if (seen.has(cell.id)) {
      // One problem: the copy's range and account (the same id's, from the accounts file) would clash too.
      problems.push(`${at}: duplicate id (cells[${index}]); every cell id must be unique`);
      duplicates.add(cell);
      continue;
    }
    seen.add(cell.id);
    if (!input.regions?.[cell.region]) {
      problems.push(`${at}: unknown region \`${cell.region}\`; add it to \`regions\` with its Availability Zones`);
    }
    if (!input.shapes?.[cell.shape]) {
      problems.push(`${at}: unknown shape \`${cell.shape}\`; define it in \`shapes\` (have: ${Object.keys(input.shapes ?? {}).join(', ')})`);
    }
    const range = parseCidr(cell.cidr ?? '');
    if (!range) {
      problems.push(`${at}: cidr \`${cell.cidr}\` is not an IPv4 network address such as 10.1.0.0/16`);
    } else if (range.prefix < CIDR_PREFIX.min || range.prefix > CIDR_PREFIX.max) {
      problems.push(`${at}: cidr \`${cell.cidr}\` must be /${CIDR_PREFIX.min} to /${CIDR_PREFIX.max} (room for three subnet tiers in each AZ)`);
    } else {
      const clash = ranges.find((other) => cidrsOverlap(other.range, range));
      if (clash) problems.push(`${at}: cidr ${cell.cidr} overlaps cell \`${clash.id}\` (${clash.cidr}); give every cell its own range`);
      ranges.push({ id: cell.id, cidr: cell.cidr, range });
    }
    const account = cell.account ?? accounts[cell.id];
    // An account from the accounts file is fixed there, so the message names that file.
    const from = cell.account === undefined ? ` (${accountsFile})` : '';
    if (account === undefined) {
      if (!options.allowMissingAccounts) problems.push(`${at}: no account; run \`cellctl accounts ensure\` or set \`account\` on the cell`);
    } else if (!ACCOUNT_ID.test(account)) {
      problems.push(`${at}: account \`${account}\`${from} is not a 12-digit AWS account id`);
    } else if (account === input.accounts?.router || account === input.accounts?.tooling) {
      problems.push(`${at}: account ${account}${from} is the router or tooling account; a cell needs an account of its own`);
    }
    if (cell.state !== undefined && !['active', 'draining', 'quarantine'].includes(cell.state)) {
      problems.push(`${at}: state \`${cell.state}\` must be active, draining or quarantine`);
    }
    problems.push(...endpointGenerationProblems(at, cell.endpointGeneration));
    const certificate = `arn:${fleetPartition(input)}:acm:${cell.region}:${account}:certificate/`;
    if (cell.certificateArn !== undefined && !cell.certificateArn.startsWith(certificate)) {
      problems.push(`${at}: certificateArn must be an ACM certificate in the cell's own account and region (${certificate}…)`);
    }
  }
  const accountOwners = new Map<string, string>();
  for (const cell of cells) {
    const account = cell.account ?? accounts[cell.id];
    if (account === undefined || duplicates.has(cell)) continue;
    const owner = accountOwners.get(account);
    const from = cell.account === undefined ? ` (${accountsFile})` : '';
    if (owner !== undefined) problems.push(`cell \`${cell.id}\`: account ${account}${from} is already cell \`${owner}\`'s; cells share no account`);
    else accountOwners.set(account, cell.id);
  }
  const canaries = cells.filter((c) => c.canary);
  if (canaries.length === 0) problems.push('cells: no canary cell; mark one cell `canary: true` so every change reaches it first');
  for (const canary of canaries) {
    if ((canary.state ?? 'active') !== 'active') problems.push(`cell \`${canary.id}\`: a canary cell must be active`);
  }
  if (!cells.some((c) => !c.canary && (c.state ?? 'active') === 'active')) {
    problems.push('cells: no active regular cell; tenants need at least one non-canary active cell');
  }
  return problems;
}

/**
 * Every problem in the config, one line each, with where it is and how to fix it.
 * An empty list means `resolveFleet` will succeed.
 */
export function fleetProblems(input: FleetInput, accounts: CellAccounts = {}, options: FleetProblemOptions = {}): string[] {
  // The structure first: values are interpreted only once every key is known and typed, so a typo
  // is one problem, never a silently applied default or a knock-on message about the value.
  const structure = structureProblems(input);
  if (structure.length > 0) return structure;
  const alarms = { ...DEFAULT_ALARMS, ...input.alarms };
  return [
    ...appProblems(input),
    ...regionProblems(input),
    ...Object.entries(input.shapes ?? {}).flatMap(([name, shape]) => shapeProblems(name, shape)),
    ...cellProblems(input, accounts, options),
    ...waveProblems(input),
    ...routerProblems(input),
    ...organizationProblems(input),
    ...pipelineProblems(input),
    ...alarmProblems(alarms),
    ...derivedNameProblems(input),
    ...crossRegionProblems(Object.keys(input.regions ?? {})),
    ...reachProblems(input),
    ...quotaProblems(input),
    ...capacityProblems(input),
    ...placementProblems(input),
    ...homesProblems(input),
    ...cellZeroProblems(
      input,
      fleetPartition(input),
      (input.cells ?? []).map((c) => c.account ?? accounts[c.id]),
    ),
  ];
}

/** Lane n's router group: lane-1 is the canary group of a mapping publish, the others follow. */
export const laneGroupName = (lane: number) => `lane-${lane}`;

function laneGroups(lanes: RouterLanes): Required<RouterGroupConfig>[] {
  return Array.from({ length: lanes.count }, (_, i) => ({ name: laneGroupName(i + 1), tasks: lanes.tasksPerLane, weight: lanes.tasksPerLane }));
}

function resolveLanes(input: FleetInput, options: FleetProblemOptions, problems: string[]): RouterLanes | undefined {
  const config = input.router!.lanes!;
  const settings = laneSettingsOf(config);
  if (options.lanesFileProblem) {
    problems.push(options.lanesFileProblem);
    return undefined;
  }
  const shards = options.laneShards ?? extendShards(settings);
  const file = options.lanesFile ?? LANES_FILE_NAME;
  const stored = shardSetProblems(settings, shards, `${file} shards`);
  if (stored.length > 0) {
    problems.push(
      ...stored.map(
        (p) =>
          `${p} (router.lanes is ${settings.count} lanes, ${settings.perTenant} per tenant, overlap ${settings.maxOverlap}; \`cellctl lanes init\` adds shards for new lanes)`,
      ),
    );
    return undefined;
  }
  const autoshift = input.router?.zonalAutoshift ?? false;
  const resources = laneStackResources(settings.count, config.hostedZone ? shards.length : 0, autoshift);
  const limit = LIMITS.resources.value;
  if (resources > limit) {
    const most = Array.from({ length: settings.count }, (_, i) => settings.count - i).find((n) => laneStackResources(n, 0, autoshift) <= limit) ?? 2;
    problems.push(
      `router.lanes: lanes 2-${settings.count}${config.hostedZone ? ` and ${shards.length} shard names` : ''} would be ${resources} resources in each region's second router group stack, over CloudFormation's ${limit}; ` +
        (config.hostedZone ? 'drop hostedZone (clients use `cellctl lanes where`), lower count or raise maxOverlap' : `use at most ${most} lanes`),
    );
  }
  const zones = Math.max(...Object.values(input.regions).map((r) => r.availabilityZones.length));
  return {
    ...settings,
    tasksPerLane: config.tasksPerLane ?? zones,
    ...(config.hostedZone ? { hostedZone: config.hostedZone } : {}),
    shards,
  };
}

/** A cell's failover region, resolved (none in a fleet of one region). */
function withFailover(cell: CellConfig, regions: readonly string[]): { failoverRegion?: string } {
  const failover = failoverRegionOf(cell, regions);
  return failover === undefined ? {} : { failoverRegion: failover };
}

/** Validates the config and applies every default; throws `FleetConfigError` listing all problems. */
export function resolveFleet(input: FleetInput, accounts: CellAccounts = {}, options: Omit<FleetProblemOptions, 'allowMissingAccounts'> = {}): Fleet {
  const problems = fleetProblems(input, accounts, options);
  const lanes = problems.length === 0 && input.router?.lanes ? resolveLanes(input, options, problems) : undefined;
  if (problems.length > 0) throw new FleetConfigError(problems);
  const cells: Cell[] = input.cells.map((cell) => ({
    id: cell.id,
    region: cell.region,
    cidr: cell.cidr,
    shapeName: cell.shape,
    shape: input.shapes[cell.shape],
    canary: cell.canary ?? false,
    state: cell.state ?? 'active',
    account: cell.account ?? accounts[cell.id],
    availabilityZones: input.regions[cell.region].availabilityZones,
    ...(cell.certificateArn ? { certificateArn: cell.certificateArn } : {}),
    ...(cell.endpointGeneration ? { endpointGeneration: cell.endpointGeneration } : {}),
    ...(cell.wave !== undefined ? { wave: cell.wave } : {}),
    tier: cell.tier ?? input.capacity?.defaultTier ?? DEFAULT_CAPACITY.defaultTier,
    ...(cell.dedicatedTo !== undefined ? { dedicatedTo: cell.dedicatedTo } : {}),
    ...withFailover(cell, Object.keys(input.regions)),
  }));
  return {
    app: input.app,
    partitionKey: input.partitionKey ?? DEFAULT_PARTITION_KEY,
    bucketCount: input.bucketCount ?? DEFAULT_BUCKET_COUNT,
    partition: input.partition ?? 'aws',
    accounts: { tooling: input.accounts.tooling, router: input.accounts.router },
    regions: input.regions,
    workload: { databasePort: DEFAULT_DATABASE_PORT, ...input.workload },
    cells,
    waves: input.waves,
    alarms: { ...DEFAULT_ALARMS, ...input.alarms },
    router: {
      homeRegion: input.router?.homeRegion ?? Object.keys(input.regions)[0],
      groups: lanes
        ? laneGroups(lanes)
        : (input.router?.groups ?? DEFAULT_ROUTER_GROUPS).map((g) => ({ name: g.name, tasks: g.tasks ?? 2, weight: g.weight ?? g.tasks ?? 2 })),
      ...(lanes ? { lanes } : {}),
      mappingBucket: input.router?.mappingBucket ?? `${input.app}-mappings-${input.accounts.router}`,
      publishBakeSeconds: input.router?.publishBakeSeconds ?? DEFAULT_PUBLISH_BAKE_SECONDS,
      cellEndpointTemplate: input.router?.cellEndpointTemplate ?? DEFAULT_CELL_ENDPOINT_TEMPLATE,
      cidrs: Object.fromEntries(Object.keys(input.regions).map((r, i) => [r, input.router?.cidrs?.[r] ?? `10.255.${i * 16}.0/20`])),
      keptVersions: input.router?.keptVersions ?? 20,
      certificateArns: input.router?.certificateArns ?? {},
      stalenessMinutes: input.router?.stalenessMinutes ?? 10,
      slots: input.router?.slots ?? defaultRouterSlots(routedCellCount(input)),
      cellMaxConn: input.router?.cellMaxConn ?? 200,
      queueTimeoutMs: input.router?.queueTimeoutMs ?? 1000,
      tenantMaxConn: input.router?.tenantMaxConn ?? tenantMaxConnOf(input.router?.cellMaxConn ?? 200),
      maxBodyBytes: input.router?.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      fullTaskLeaves: input.router?.fullTaskLeaves ?? true,
      zonalAutoshift: input.router?.zonalAutoshift ?? false,
      reach: input.router?.reach ?? 'every-region',
      regionUrls: input.router?.regionUrls ?? {},
      zoneAffinity: input.router?.zoneAffinity ?? 'spread',
      clientMaxConnPerCell:
        input.router?.clientMaxConnPerCell ??
        clientMaxConnPerCellOf(input.router?.tenantMaxConn ?? tenantMaxConnOf(input.router?.cellMaxConn ?? 200)),
    },
    quotas: { interfaceEndpointsPerVpc: input.quotas?.interfaceEndpointsPerVpc ?? LIMITS.interfaceEndpointsPerVpc.value },
    capacity: { ...DEFAULT_CAPACITY, ...input.capacity },
    ...(input.cellResources ? { cellResources: input.cellResources } : {}),
    ...(input.cellZero ? { cellZero: resolveCellZero(input) } : {}),
    ...(input.homes ? { homes: resolveHomes(input) } : {}),
    ...(input.pipeline ? { pipeline: { ...input.pipeline, region: input.pipeline.region ?? Object.keys(input.regions)[0] } } : {}),
    ...(input.organization
      ? {
          organization: {
            roleName: 'OrganizationAccountAccessRole',
            executionPolicyArn: `arn:${fleetPartition(input)}:iam::aws:policy/AdministratorAccess`,
            ...input.organization,
          },
        }
      : {}),
  };
}
