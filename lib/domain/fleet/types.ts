import type { Homes } from '../mapping/types';
/**
 * The fleet model: what `cells.config.ts` describes. Pure types, no CDK, no AWS SDK, not even as a
 * type: the one hook whose argument is made of constructs (`cellResources`) gets its type from the
 * constructs layer, which adds it to `FleetHooks` (lib/constructs/cell/extension.ts), so the domain
 * names no construct and the layers stay one way.
 */

import { GrantedQuotas } from '../limits/quotas';
import type { Partition } from './regions';

/**
 * The fleet file's hooks whose types belong to a layer above the domain, filled in by declaration
 * merging: lib/constructs/cell/extension.ts adds `cellResources: CellExtension`. Loading the
 * package's entry point (or anything of lib/constructs) brings the augmentation with it.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled in by declaration merging, above
export interface FleetHooks {}

/** A hook's type once a layer above has declared it; `never` (the field can only be left out) before. */
export type FleetHook<K extends string> = FleetHooks extends { readonly [key in K]: infer H } ? H : never;

/** Where the router reads the partition key (tenant id) from. */
export type PartitionKeySource =
  | { readonly source: 'header'; readonly name: string }
  | { readonly source: 'path'; readonly segment: number }
  | { readonly source: 'host'; readonly label: number }
  /**
   * A verified tenant identity: the `claim` of a JWT in `Authorization: Bearer`, signed with
   * `algorithm` by one of `publicKeys` (PEM) and not expired; the router answers 401 to a missing,
   * forged, expired or unsigned token, before counting it against anyone.
   */
  | { readonly source: 'jwt'; readonly claim: string; readonly algorithm: 'RS256' | 'ES256'; readonly publicKeys: readonly string[] };

export type CellState = 'active' | 'draining' | 'quarantine';

export type ComputeKind = 'fargate' | 'ec2';
export type DatabaseEngine = 'aurora-postgresql' | 'rds-postgresql';

/** The size of a cell: every cell of a shape is stamped identically. */
export interface CellShape {
  /** Compute flavour. @default 'fargate' */
  readonly compute: ComputeKind;
  /** Fargate task CPU units (256, 512, 1024, …) or ignored for EC2. */
  readonly cpu: number;
  /** Fargate task memory in MiB, or the container's memory reservation on EC2. */
  readonly memoryMiB: number;
  /** EC2 instance type when `compute` is 'ec2'. @default 't3.medium' */
  readonly instanceType?: string;
  /** Tasks / instances: minimum, desired, maximum. */
  readonly capacity: { readonly min: number; readonly desired: number; readonly max: number };
  readonly database: {
    readonly engine: DatabaseEngine;
    /** Instance class without the `db.` prefix, for example `r6g.large`. */
    readonly instanceClass: string;
    /** Allocated storage for RDS PostgreSQL (GiB); Aurora storage grows on its own. @default 100 */
    readonly allocatedStorageGiB?: number;
    /** Automated backup retention. @default 7 */
    readonly backupRetentionDays?: number;
    /**
     * PostgreSQL `major.minor`, the same for RDS and Aurora (for example `17.9`). Validated against the
     * versions RDS and Aurora still create.
     * @default DEFAULT_POSTGRES_VERSION
     */
    readonly engineVersion?: string;
  };
  /**
   * NAT gateways of the cell's VPC. `per-zone`: one in each zone, so a zone's outage stays in that
   * zone. `one`: a single gateway in the cell's first zone, about two thirds less NAT cost at three
   * zones (docs/cost.md, "Levers"); while that zone is out, the cell's tasks in every zone lose
   * outbound access (`cellctl zone drain --plan` names such cells). @default 'per-zone'
   */
  readonly natGateways?: NatGateways;
  /** The limits this shape was load-tested at: what the cell is allowed to take. */
  readonly limits: {
    /** Sustained requests per second the cell was tested at. */
    readonly requestsPerSecond: number;
    /** Tenants the cell may hold. */
    readonly maxTenants: number;
    /** Requests one tenant may send in 5 minutes before WAF throttles it (WAF rate-based rule). */
    readonly tenantRequestsPer5Min: number;
  };
}

/** One cell as written in the config. */
export interface CellConfig {
  /** Lower-case id, `[a-z][a-z0-9-]{1,30}`, unique in the fleet. */
  readonly id: string;
  /** AWS region; must be one of the fleet's `regions`. */
  readonly region: string;
  /** The cell VPC's CIDR (/16 … /22); never overlaps another cell. */
  readonly cidr: string;
  /** Name of a shape in `shapes`. */
  readonly shape: string;
  /** The canary cell takes every change first. @default false */
  readonly canary?: boolean;
  /** @default 'active' */
  readonly state?: CellState;
  /** 12-digit AWS account id. @default - from `cells.accounts.json` */
  readonly account?: string;
  /** ACM certificate for the cell's HTTPS listener. @default - HTTP inside PrivateLink */
  readonly certificateArn?: string;
  /**
   * Raise by one each time this cell's stack is deleted and created again after the routers linked
   * it: its endpoint service comes back under a new name, which the routers read only when what the
   * name depends on changes (its template did not). The next router deploy reads it again and
   * replaces the interface endpoint to it. @default - none: never re-created
   */
  readonly endpointGeneration?: number;
  /**
   * The wave this cell deploys in (1 is the canary's). Declared on every cell or on none: declared,
   * the waves are exactly these; else `waves` cuts them. @default - cut by the wave policy
   */
  readonly wave?: number;
  /**
   * The tier this cell serves (`premium`, `free`, …). Only the cells of `capacity.defaultTier` hold
   * the mapping's buckets, so a tenant nobody placed lands there; a cell of another tier takes
   * tenants only by `cellctl place --tier` and the pin it prints. @default capacity.defaultTier
   */
  readonly tier?: string;
  /**
   * The one tenant (partition key) this cell serves: it holds no buckets, the seed mapping pins the
   * tenant to it, and placement, `mapping add-cell` and rebalancing never give it another tenant.
   * Not with `tier` or `canary`. @default - shared by the tenants of its tier
   */
  readonly dedicatedTo?: string;
  /**
   * The router region that links this cell besides its own, with `router.reach: 'home-and-failover'`:
   * one of the fleet's other regions. @default - chosen by rendezvous hashing over the other regions
   */
  readonly failoverRegion?: string;
}

export interface RegionConfig {
  /**
   * At least two AZ IDs of this region, for example `['euw1-az1', 'euw1-az2']`: IDs name the same
   * zone in every account (the routers' and the cells'); names like `eu-west-1a` do not.
   */
  readonly availabilityZones: readonly string[];
}

/** How waves are cut. Bake times are seconds. */
export interface WavePolicy {
  /** Single-cell waves after the canary. */
  readonly singleCellWaves: number;
  /** Each group wave is this many times the previous one (> 1). */
  readonly growthFactor: number;
  /** Cap on cells per wave. */
  readonly maxCellsPerWave: number;
  readonly bakeSeconds: { readonly canary: number; readonly single: number; readonly group: number };
}

/** Alarm thresholds, identical for every cell. */
export interface AlarmThresholds {
  /** 5xx responses as a percentage of requests. */
  readonly errorRatePercent: number;
  /** p99 target response time, milliseconds. */
  readonly p99LatencyMs: number;
  /** Unhealthy targets behind the cell's load balancer. */
  readonly unhealthyHosts: number;
  readonly dbCpuPercent: number;
  readonly dbConnections: number;
  readonly dbFreeStorageGiB: number;
  /** Age of the oldest work-queue message, seconds. */
  readonly oldestMessageSeconds: number;
  /** Messages in the dead-letter queue. */
  readonly dlqMessages: number;
  /** Consecutive 1-minute periods before an alarm fires. */
  readonly evaluationPeriods: number;
}

/** The application every cell runs. */
export interface WorkloadConfig {
  /**
   * Container image: a registry image (`public.ecr.aws/nginx/nginx:stable`), or `asset:<Dockerfile>` to build
   * one of this repository (the reference workload: `asset:images/workload/Dockerfile`).
   */
  readonly image: string;
  readonly containerPort: number;
  readonly healthCheckPath: string;
  /** Database port (non-default on purpose). @default 5433 */
  readonly databasePort?: number;
}

/** A subset of router tasks reading its own mapping pointer (`groups/<name>/mapping.json`). */
export interface RouterGroupConfig {
  /** `[a-z][a-z0-9-]{0,30}`. */
  readonly name: string;
  /** Router tasks in the group. @default 2 */
  readonly tasks?: number;
  /**
   * The group's share of the region's new connections, against the other groups' weights: the NLB
   * forwards to one target group per router group with these weights (0-999). 0 drains the group
   * (no new connections; open ones finish) without stopping its tasks. Auto scaling changes a
   * group's task count, never its share. @default the group's `tasks`, so each task of the fleet
   * gets the same share at the configured counts
   */
  readonly weight?: number;
}

/**
 * Shuffle-sharded router lanes (docs/lanes.md): `count` independent router units per region, each
 * with its own NLB (zonal shift enabled), target group and service; a tenant reaches the
 * `perTenant` lanes of its shard, and any two shards in use share at most `maxOverlap` lanes. The
 * shard set is generated once by `cellctl lanes init` into `cells.lanes.json` beside this file.
 * Lanes replace `router.groups`: lane 1 is the canary group, the other lanes the rest.
 */
export interface RouterLanesConfig {
  /** Lanes per region, 2 to 32 (each is an NLB: 50 per region by default). */
  readonly count: number;
  /** Lanes in a tenant's shard, at least 2 (one to retry on) and below `count`. */
  readonly perTenant: number;
  /** Lanes two shards may share, below `perTenant`. @default perTenant - 1 */
  readonly maxOverlap?: number;
  /** Router tasks per lane: at least one per zone of the region. @default the region's zones */
  readonly tasksPerLane?: number;
  /**
   * A public hosted zone in the router account: each region gets `shard-<lanes>.<region>.<name>`, an
   * alias to each lane NLB of the shard with target health evaluated.
   * @default - no shard names; clients take lane addresses from `cellctl lanes where`
   */
  readonly hostedZone?: { readonly id: string; readonly name: string };
}

/** How a router task spreads a cell's requests over its zones: see RouterConfig.zoneAffinity. */
export type ZoneAffinity = 'spread' | 'own-zone';

/** NAT gateways of a cell's VPC: see CellShape.natGateways. */
export type NatGateways = 'per-zone' | 'one';

/** Which router regions link which cells: see RouterConfig.reach (lib/domain/fleet/reach.ts). */
export type RouterReach = 'every-region' | 'home-and-failover';

/** The router layer: groups, mapping bucket, how mapping changes roll out. */
export interface RouterConfig {
  /**
   * The region whose router stack holds the router account's one-per-fleet resources: the mapping
   * publisher role and the move operator role (IAM names are global) and the move bucket with its
   * records. Required once the fleet has two regions: it never follows the order of `regions`, so
   * adding a region or reordering them moves nothing. Changing it is a migration
   * (docs/day-two.md, "Moving the router home region").
   * @default the only region, for a one-region fleet
   */
  readonly homeRegion?: string;
  /**
   * Router groups in rollout order: the first (small) group gets every new mapping first.
   * @default [{ name: 'canary', tasks: 2 }, { name: 'main', tasks: 4 }]
   */
  readonly groups?: readonly RouterGroupConfig[];
  /** Shuffle-sharded lanes instead of groups. @default - no lanes: one NLB over the groups */
  readonly lanes?: RouterLanesConfig;
  /**
   * Name prefix of the mapping buckets, one per region in the router account: each is
   * `<prefix>-<12 hex of its stack id>`, so a retried first deploy gets a new name, and its name is
   * in the SSM parameter `/<app>/router/mapping-bucket` of its region.
   * @default `<app>-mappings-<router account>`
   */
  readonly mappingBucket?: string;
  /** Seconds between publishing to the first group and to the rest. @default 300 */
  readonly publishBakeSeconds?: number;
  /**
   * Endpoint of a cell as the router reaches it; `{cell}`, `{app}` and `{scheme}` (https for a cell
   * with a certificate, else http) are replaced. When the host is `{cell}.<zone>`, every router VPC
   * gets a private hosted zone `<zone>` naming each cell after its interface endpoint.
   * @default '{scheme}://{cell}.{app}.cells.internal'
   */
  readonly cellEndpointTemplate?: string;
  /** Router VPC range per region. @default 10.255.<16 × region index>.0/20 */
  readonly cidrs?: Readonly<Record<string, string>>;
  /** Versions of each document the mapping bucket keeps besides the current one. @default 20 */
  readonly keptVersions?: number;
  /** ACM certificate per region for the NLB's TLS listener. @default - TCP on port 80 */
  readonly certificateArns?: Readonly<Record<string, string>>;
  /** Minutes without a successful mapping refresh before the staleness alarm. @default 10 */
  readonly stalenessMinutes?: number;
  /**
   * Backend slots in every router's HAProxy: the most cells the router can serve at once. A
   * mapping change needs a slot for every cell of the old and the new document (a removed cell
   * keeps its slot until routes have moved away), so at least the number of cells plus one.
   * Baked into the router image; changing it rolls the routers out.
   * @default twice the fleet's cells, rounded up to a multiple of 64 (at least 64, at most 1000)
   */
  readonly slots?: number;
  /**
   * Requests one router task sends a cell at once; more wait in the cell's queue. This is what keeps
   * a slow cell from holding every router connection. @default 200
   */
  readonly cellMaxConn?: number;
  /** Milliseconds a request may wait in a saturated cell's queue before it gets 503 + Retry-After. @default 1000 */
  readonly queueTimeoutMs?: number;
  /**
   * Requests one tenant may have in flight through one router task (at most `cellMaxConn`; half of
   * it leaves every tenant's neighbours the other half): the tenant's requests beyond it get 429 +
   * Retry-After at once instead of taking its cell's slots. Baked into the router image. Set it to
   * `cellMaxConn` to let one tenant take every slot.
   * @default half of cellMaxConn
   */
  readonly tenantMaxConn?: number;
  /**
   * Requests one client address may have in flight to one cell through one router task, whichever
   * keys it sends (at most `tenantMaxConn`): with an unverified key anyone can send a tenant's key,
   * and one address would otherwise spend that tenant's whole share; an address rotating keys would
   * otherwise take the whole cell, each key within its tenant's cap. Raise it (up to `tenantMaxConn`)
   * for a client that calls for many tenants from one address (an integrator behind one NAT).
   * @default half of tenantMaxConn
   */
  readonly clientMaxConnPerCell?: number;
  /**
   * A full router task (past 90% of its connection limit) reports itself unready, so the NLB sends
   * new flows to the other tasks of its group, while at most half of the group is out; ECS then
   * replaces it with an empty one (docs/router.md, "A full task"). `false`: readiness means only "a
   * mapping is in force", and a full task keeps serving at its limit (no ELB API calls either).
   * @default true
   */
  readonly fullTaskLeaves?: boolean;
  /**
   * ARC zonal autoshift on the router's NLBs (the entry NLB, or each lane's): AWS shifts them away
   * from a zone it finds impaired, and starts weekly practice shifts whose outcome alarms are the
   * health alarms of the router groups behind each NLB (a practice run that trips one is ended and
   * reported as failed). The routers' zone weights (`cellctl zone drain`) are not touched by either.
   * @default false
   */
  readonly zonalAutoshift?: boolean;
  /**
   * Largest request body a client may announce (`content-length`), bytes: larger gets 413 before
   * any of it is read. Bodies are not buffered whole: the router reads what fits its 16 KiB buffer
   * within its request timeout, then streams the rest, each pause bounded by its client timeout
   * (docs/router.md, "Request bodies"). A chunked body announces no length and is not counted: the
   * cell's own limit applies. Baked into the router image.
   * @default 10485760 (10 MiB, what API Gateway accepts)
   */
  readonly maxBodyBytes?: number;
  /**
   * Which router regions link which cells (docs/cost.md, "Router reach"). `every-region`: every
   * router VPC holds an interface endpoint to every cell. `home-and-failover`: only the cell's own
   * region and its failover region (`cells[].failoverRegion`) link it, which halves the endpoints at
   * four regions and the per-VPC endpoint quota with them; a request entering any other region is
   * answered `307` to the cell's region (`regionUrls`), and the client repeats it there.
   * @default 'every-region'
   */
  readonly reach?: RouterReach;
  /**
   * How a router task spreads a cell's requests over the cell's zonal endpoint addresses.
   * `spread`: evenly (roundrobin), so (z−1)/z of the router's bytes cross zones. `own-zone`: the
   * address in the task's own zone first (weight 100 against 1 for each other zone: about 98% stays
   * in the zone at three zones), until that zone's share of the cell's connections is full; then the
   * other zones take the rest. While any zone is partly drained (`cellctl zone drain --percent`), the
   * weights are the zones document's alone. @default 'spread'
   */
  readonly zoneAffinity?: ZoneAffinity;
  /**
   * The origin clients use for each region's routers (`https://eu-west-1.api.example.com`): where a
   * router sends a request for a cell it does not link. Required for every region with
   * `reach: 'home-and-failover'`.
   */
  readonly regionUrls?: Readonly<Record<string, string>>;
}

/** How `cellctl accounts ensure` vends one account per cell through AWS Organizations. */
export interface OrganizationConfig {
  /** Root email of a new cell account; `{app}` and `{cell}` are replaced. For example `aws+{app}-{cell}@example.com`. */
  readonly accountEmail: string;
  /** OU new cell accounts are moved into (`ou-…`). */
  readonly organizationalUnitId: string;
  /** Role Organizations creates for the management account; `cellctl accounts bootstrap --run` assumes it in each account. @default 'OrganizationAccountAccessRole' */
  readonly roleName?: string;
  /**
   * Execution policy `cellctl accounts bootstrap` gives CloudFormation in every account: an AWS managed
   * policy, or `arn:<partition>:iam::{account}:policy/NAME` for a customer-managed policy created in each account.
   * @default AdministratorAccess (`arn:<partition>:iam::aws:policy/AdministratorAccess`, the fleet's partition)
   */
  readonly executionPolicyArn?: string;
}

/**
 * How full cells are allowed to get, against their shape's tested `limits` (`cellctl capacity`,
 * `capacity plan`, `place`, the cells' capacity alarms).
 */
export interface CapacityConfig {
  /**
   * Share of a shape's tested `requestsPerSecond` cells are placed against (0 < x < 1): the rest is
   * room for spikes, the loss of a zone and incoming moves. A cell above it is `hot`. @default 0.5
   */
  readonly targetUtilisation?: number;
  /** Empty cells kept beyond what the measured peak needs, to receive moves. @default 1 */
  readonly spareCells?: number;
  /**
   * A tenant whose own peak takes more than this share of a cell's target rate is named as a
   * candidate for a dedicated cell or a pin (0 < x <= 1). @default 0.5
   */
  readonly largeTenantShare?: number;
  /**
   * The tier whose cells hold the mapping's buckets: where a tenant that was never placed lands.
   * Cells of other tiers, and dedicated cells, hold none. @default 'general'
   */
  readonly defaultTier?: string;
}

/** Where the pipeline gets the repository from. */
export type PipelineSource =
  | { readonly kind: 'connection'; readonly connectionArn: string; readonly repository: string; readonly branch: string }
  | { readonly kind: 's3'; readonly bucketName: string; readonly objectKey: string };

/** The delivery pipeline in the tooling account. */
export interface PipelineConfig {
  readonly source: PipelineSource;
  /** Region of the pipeline. @default the first region of the fleet */
  readonly region?: string;
  /** A manual approval before the first non-canary wave. @default false */
  readonly manualApproval?: boolean;
  /**
   * Waves start only inside this window: a CodePipeline `DeploymentWindow` rule expression, six
   * fields and an optional year, **seconds first**, matching the times deployment is allowed
   * (`* * 8-16 ? * MON-THU *` = 08:00-16:59 Monday to Thursday); not an EventBridge `cron(...)`.
   */
  readonly deploymentWindow?: { readonly cron: string; readonly timeZone?: string };
  /**
   * AWS Organizations id (`o-…`) of the accounts the pipeline deploys to. The pipeline's roles then
   * assume the CDK bootstrap roles by name pattern in this organization (`aws:ResourceOrgID`), a policy
   * of constant size; without it they list the fleet's accounts (`aws:ResourceAccount`), about 15
   * characters per account (lib/constructs/pipeline/bootstrap-grants.ts, docs/performance.md, "How many cells one pipeline holds").
   */
  readonly organizationId?: string;
}

/**
 * Cell zero: the service a team already runs, adopted as a cell the factory does not build. The
 * routers reach it through a small adoption stack in its account (an NLB in front of the existing
 * Application Load Balancer, published as a PrivateLink endpoint service); moves read and write its
 * PostgreSQL database. Nothing of the existing stack is changed (docs/cell-zero.md).
 */
export interface CellZeroConfig {
  /** Cell id in the mapping, `[a-z][a-z0-9-]{1,30}`, unique in the fleet. @default 'zero' */
  readonly id?: string;
  /** The existing stack's region; must be one of the fleet's `regions`. */
  readonly region: string;
  /** The existing stack's 12-digit account: not the router's, the tooling's or another cell's. */
  readonly account: string;
  /** The existing VPC: the adoption stack's NLB and the mover tasks go into its subnets. */
  readonly vpc: {
    /** `vpc-…`: the VPC of the existing load balancer. */
    readonly id: string;
    /**
     * Private subnets of that VPC with a route out (NAT or endpoints for S3, Secrets Manager, ECR and
     * CloudWatch Logs), at least two, in the region's `availabilityZones` the routers use.
     */
    readonly privateSubnetIds: readonly string[];
  };
  /** The existing Application Load Balancer the routers reach cell zero through. */
  readonly loadBalancer: {
    /** `arn:<partition>:elasticloadbalancing:<region>:<account>:loadbalancer/app/<name>/<id>`, in cell zero's account and region. */
    readonly arn: string;
    /** The port of the ALB listener the adoption NLB forwards to (an ALB-type target listens on one listener port). */
    readonly listenerPort: number;
    /** `https` when that listener terminates TLS: the routers then speak TLS to it, passed through the NLB. @default 'http' */
    readonly protocol?: 'http' | 'https';
    /** Path the NLB's health checks request from the ALB. @default workload.healthCheckPath */
    readonly healthCheckPath?: string;
  };
  /** The existing PostgreSQL database: what moves read tenants from. */
  readonly database: {
    /** Host name the mover tasks connect to. */
    readonly host: string;
    /** @default 5432 */
    readonly port?: number;
    /** Database name. */
    readonly name: string;
    /** Secrets Manager secret holding `username` and `password`, in cell zero's account and region. */
    readonly secretArn: string;
    /**
     * `sg-…`: a security group the database already admits on its port (the application's, for
     * example). The mover tasks run in it besides their own, so no rule of the existing stack changes.
     */
    readonly clientSecurityGroupId: string;
  };
  /**
   * What cell zero's bake and its `health` alarm fire on, over all of the existing load balancer's
   * traffic (not only what the routers send it): the existing service's own error rate and latency
   * are rarely the new cells' thresholds. Each omitted value is the fleet's `alarms` value.
   * @default - the fleet's `alarms`
   */
  readonly alarms?: Partial<CellZeroAlarms>;
  /**
   * Raise by one each time the adoption stack is deleted and created again after the routers linked
   * cell zero (its endpoint service comes back under a new name). @default - none: never re-created
   */
  readonly endpointGeneration?: number;
}

/** Cell zero's alarm thresholds (CellZeroConfig.alarms). */
export interface CellZeroAlarms {
  /** 5xx (target and load balancer) as a percentage of the existing ALB's requests. */
  readonly errorRatePercent: number;
  /** p99 of the existing ALB's target response time, milliseconds. */
  readonly p99LatencyMs: number;
  /** Consecutive 1-minute periods before an alarm fires. */
  readonly evaluationPeriods: number;
}

/** What you write in `cells.config.ts`. */
export interface FleetInput {
  /** Application name, `[a-z][a-z0-9-]{1,20}`: prefixes stack, alarm and account names. */
  readonly app: string;
  /** @default { source: 'header', name: 'x-tenant-id' } */
  readonly partitionKey?: PartitionKeySource;
  /** Number of buckets keys hash into; a power of two. @default 16384 */
  readonly bucketCount?: number;
  /**
   * The AWS partition every account and region of the fleet is in (`aws`, `aws-cn`, `aws-us-gov`):
   * the partition of the ARNs the CLI and the stage scripts build. Every region must be in it.
   * @default 'aws'
   */
  readonly partition?: Partition;
  readonly accounts: {
    /** Where the pipeline lives. */
    readonly tooling: string;
    /** Where the routers and the mapping bucket live. */
    readonly router: string;
  };
  readonly regions: Readonly<Record<string, RegionConfig>>;
  readonly shapes: Readonly<Record<string, CellShape>>;
  readonly workload: WorkloadConfig;
  readonly cells: readonly CellConfig[];
  readonly waves: WavePolicy;
  /** @default DEFAULT_ALARMS */
  readonly alarms?: Partial<AlarmThresholds>;
  /** @default DEFAULT_ROUTER */
  readonly router?: RouterConfig;
  /** Needed only by `cellctl accounts ensure` / `bootstrap`. */
  readonly organization?: OrganizationConfig;
  /** Without it, `cdk synth` stamps the cell stacks directly (deploy them with `cdk deploy`). */
  readonly pipeline?: PipelineConfig;
  /**
   * Adjustable AWS quotas the fleet's accounts have been granted, where above AWS's default: synth
   * and validation hold the fleet to these values. Request an increase before the fleet needs it
   * (docs/limits.md, "Raising a quota"). @default AWS's defaults
   */
  readonly quotas?: GrantedQuotas;
  /** @default DEFAULT_CAPACITY */
  readonly capacity?: CapacityConfig;
  /**
   * The fleet's own resources in every cell (a table, a cache, a second service): called once per
   * cell with the cell's building blocks (scope, VPC and subnets, KMS key, workload security group
   * and role, alarm topic, `addAlarm`). What it creates is tagged, audited and isolation-checked
   * like the rest of the cell (docs/getting-started.md, "Your own resources in every cell").
   * @default - none
   */
  readonly cellResources?: FleetHook<'cellResources'>;
  /**
   * An existing service adopted as cell zero: the router goes in front of it with every bucket mapped
   * to it, and its tenants move out into the factory's cells (docs/cell-zero.md).
   * @default - no cell zero: a fleet built from nothing
   */
  readonly cellZero?: CellZeroConfig;
  /**
   * Home regions: a tenant's region from its key's prefix, else `defaultRegion`; the mapping then
   * holds a bucket table per region (or group), so a new tenant lands on a cell of its own region
   * (lib/domain/fleet/homes.ts, docs/capacity.md "Home regions").
   * @default - none: one bucket table over every region's cells (a schema-1 mapping)
   */
  readonly homes?: HomesConfig;
}

/** Cell zero with every default applied. */
export interface CellZero {
  readonly id: string;
  readonly region: string;
  readonly account: string;
  readonly availabilityZones: readonly string[];
  readonly vpc: { readonly id: string; readonly privateSubnetIds: readonly string[] };
  readonly loadBalancer: {
    readonly arn: string;
    readonly listenerPort: number;
    readonly protocol: 'http' | 'https';
    readonly healthCheckPath: string;
  };
  readonly database: {
    readonly host: string;
    readonly port: number;
    readonly name: string;
    readonly secretArn: string;
    readonly clientSecurityGroupId: string;
  };
  readonly alarms: CellZeroAlarms;
  /** See CellZeroConfig.endpointGeneration. */
  readonly endpointGeneration?: number;
}

/** A cell with every default applied and its account resolved. */
export interface Cell {
  readonly id: string;
  readonly region: string;
  readonly cidr: string;
  readonly shapeName: string;
  readonly shape: CellShape;
  readonly canary: boolean;
  readonly state: CellState;
  readonly account: string;
  readonly availabilityZones: readonly string[];
  readonly certificateArn?: string;
  /** See CellConfig.endpointGeneration. */
  readonly endpointGeneration?: number;
  /** See CellConfig.wave. */
  readonly wave?: number;
  /** See CellConfig.tier; resolved (capacity.defaultTier when the cell names none). */
  readonly tier: string;
  /** See CellConfig.dedicatedTo. */
  readonly dedicatedTo?: string;
  /** See CellConfig.failoverRegion; resolved in a fleet of two regions or more. */
  readonly failoverRegion?: string;
}

/** `router.lanes` with its defaults and the stored shard set. */
export interface RouterLanes {
  readonly count: number;
  readonly perTenant: number;
  readonly maxOverlap: number;
  readonly tasksPerLane: number;
  readonly hostedZone?: { readonly id: string; readonly name: string };
  /** The default shards (`cells.lanes.json`), each its lanes ascending. */
  readonly shards: readonly (readonly number[])[];
}

/** The validated fleet every other part consumes. */
export interface Fleet {
  readonly app: string;
  readonly partitionKey: PartitionKeySource;
  readonly bucketCount: number;
  readonly partition: Partition;
  readonly accounts: { readonly tooling: string; readonly router: string };
  readonly regions: Readonly<Record<string, RegionConfig>>;
  readonly workload: Required<WorkloadConfig>;
  readonly cells: readonly Cell[];
  readonly waves: WavePolicy;
  readonly alarms: AlarmThresholds;
  readonly router: {
    /** See RouterConfig.homeRegion. */
    readonly homeRegion: string;
    /** With lanes, one group per lane (`lane-1`, `lane-2`, …), lane 1 first. */
    readonly groups: readonly Required<RouterGroupConfig>[];
    readonly lanes?: RouterLanes;
    readonly mappingBucket: string;
    readonly publishBakeSeconds: number;
    readonly cellEndpointTemplate: string;
    readonly cidrs: Readonly<Record<string, string>>;
    readonly keptVersions: number;
    readonly certificateArns: Readonly<Record<string, string>>;
    readonly stalenessMinutes: number;
    readonly slots: number;
    readonly cellMaxConn: number;
    readonly queueTimeoutMs: number;
    readonly tenantMaxConn: number;
    readonly clientMaxConnPerCell: number;
    readonly maxBodyBytes: number;
    readonly fullTaskLeaves: boolean;
    readonly zonalAutoshift: boolean;
    readonly reach: RouterReach;
    readonly regionUrls: Readonly<Record<string, string>>;
    readonly zoneAffinity: ZoneAffinity;
  };
  readonly organization?: Required<OrganizationConfig>;
  readonly pipeline?: PipelineConfig & { readonly region: string };
  readonly quotas: Required<GrantedQuotas>;
  readonly capacity: Required<CapacityConfig>;
  /** See FleetInput.cellResources. */
  readonly cellResources?: FleetHook<'cellResources'>;
  /** See FleetInput.cellZero. */
  readonly cellZero?: CellZero;
  /** See FleetInput.homes: the mapping's home tables. */
  readonly homes?: Homes;
}

/** Home regions (FleetInput.homes; lib/domain/fleet/homes.ts). */
export interface HomesConfig {
  /** The home region of keys that start with none of `prefixes`: a region of the fleet. */
  readonly defaultRegion: string;
  /**
   * Key prefix → the home region of the tenants whose keys start with it. No prefix may start
   * another. @default {} (every tenant's home is the default region)
   */
  readonly prefixes?: Readonly<Record<string, string>>;
  /**
   * Regions that share one table: their tenants spread over all of their cells (a jurisdiction of
   * several regions). @default one table per region
   */
  readonly groups?: readonly (readonly string[])[];
}
