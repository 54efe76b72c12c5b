import { AlarmThresholds, CapacityConfig, PartitionKeySource, RouterGroupConfig } from './types';

/**
 * The header the router always sends the partition key in, whatever it routed by (the header the
 * cell's WAF rate rule keys on for path- and host-keyed fleets), and the fleet's default key header.
 */
export const ROUTED_KEY_HEADER = 'x-tenant-id';
export const DEFAULT_PARTITION_KEY = { source: 'header', name: ROUTED_KEY_HEADER } as const satisfies PartitionKeySource;
export const DEFAULT_BUCKET_COUNT = 16384;
export const DEFAULT_DATABASE_PORT = 5433;

/** Thresholds a typical HTTP + Postgres workload is alarmed at; override per fleet. */
export const DEFAULT_ALARMS: AlarmThresholds = {
  errorRatePercent: 5,
  p99LatencyMs: 2000,
  unhealthyHosts: 1,
  dbCpuPercent: 80,
  dbConnections: 400,
  dbFreeStorageGiB: 10,
  oldestMessageSeconds: 900,
  dlqMessages: 1,
  evaluationPeriods: 3,
};

export const DEFAULT_ROUTER_GROUPS: readonly Required<RouterGroupConfig>[] = [
  { name: 'canary', tasks: 2, weight: 2 },
  { name: 'main', tasks: 4, weight: 4 },
];
/**
 * Router groups per region: the NLB's weighted forward takes one target group per group. AWS
 * documents no count for a Network Load Balancer's weighted default action; 5 is the Application
 * Load Balancer's "target groups per action" quota, kept until the NLB's is documented.
 */
export const MAX_ROUTER_GROUPS = 5;
/** NLB target group weights are integers 0-999 ("Network Load Balancers now support Weighted Target Groups", AWS blog, 2025-11-19). */
export const MAX_ROUTER_GROUP_WEIGHT = 999;
export const DEFAULT_PUBLISH_BAKE_SECONDS = 300;
/** `{scheme}` is https for a cell with a certificate, else http; the router stacks create the `<app>.cells.internal` zone. */
export const DEFAULT_CELL_ENDPOINT_TEMPLATE = '{scheme}://{cell}.{app}.cells.internal';

/** The most backend slots a router may have (HAProxy backends per router task). */
export const MAX_ROUTER_SLOTS = 1000;

/** `router.maxBodyBytes`'s default: what API Gateway accepts (10 MB payloads); an ALB sets no limit. */
export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;
/** The most `router.maxBodyBytes` may allow: 1 GiB. */
export const MAX_BODY_BYTES_LIMIT = 1024 * 1024 * 1024;

/**
 * A tenant's share of its cell's router slots (`router.tenantMaxConn`'s default): half, and at least
 * one, so one tenant's slow or numerous requests leave its neighbours the other half.
 */
export function tenantMaxConnOf(cellMaxConn: number): number {
  return Math.max(1, Math.floor(cellMaxConn / 2));
}

/** What one client address may hold in one cell (`router.clientMaxConnPerCell`'s default): half of a tenant's share, and at least one. */
export function clientMaxConnPerCellOf(tenantMaxConn: number): number {
  return Math.max(1, Math.floor(tenantMaxConn / 2));
}

/**
 * Router backend slots for a fleet of `cells`: twice the cells, rounded up to a multiple of 64, so
 * the routers' configuration (and image) changes only every few dozen cells.
 */
export function defaultRouterSlots(cells: number): number {
  return Math.min(MAX_ROUTER_SLOTS, Math.max(64, Math.ceil((2 * cells) / 64) * 64));
}

/** Bake times are bounded: under a minute watches nothing, over a day stalls every release. */
export const BAKE_SECONDS_RANGE = { min: 60, max: 86_400 } as const;

/**
 * PostgreSQL `major.minor` a shape's database runs when it names none. RDS and Aurora stop creating
 * a minor version about a year after its release (RDS retired 14.14-14.17, 15.9-15.12, 16.5-16.8 and
 * 17.1-17.4 for new databases from 1 May 2026, 16.6 among them); 17.9 is the newest 17 minor both RDS and Aurora PostgreSQL list in aws-cdk-lib 2.276.
 * Bump it (or `database.engineVersion`) when AWS announces its end of standard support.
 */
export const DEFAULT_POSTGRES_VERSION = '17.9';

/**
 * PostgreSQL majors RDS and Aurora still create, each with the lowest minor still creatable when this
 * table was written (the minors below it reached the end of standard support on 31 May 2026).
 * Source: the RDS for PostgreSQL and Aurora PostgreSQL release calendars.
 */
export const CREATABLE_POSTGRES: Readonly<Record<number, number>> = { 14: 18, 15: 13, 16: 9, 17: 5, 18: 1 };

/** The `major.minor` a database shape runs. */
export function postgresVersionOf(database: { readonly engineVersion?: string }): string {
  return database.engineVersion ?? DEFAULT_POSTGRES_VERSION;
}

/** What is wrong with a PostgreSQL version for a new RDS or Aurora database, or undefined. */
export function postgresVersionProblem(version: string): string | undefined {
  const match = /^(\d+)\.(\d+)$/.exec(version);
  if (!match) return `\`${version}\` is not a PostgreSQL \`major.minor\` version such as \`${DEFAULT_POSTGRES_VERSION}\``;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  const lowest = CREATABLE_POSTGRES[major];
  const majors = Object.keys(CREATABLE_POSTGRES).join(', ');
  if (lowest === undefined) return `PostgreSQL ${major} cannot be created on RDS or Aurora (majors ${majors}); use ${DEFAULT_POSTGRES_VERSION}`;
  if (minor < lowest)
    return `${version} can no longer be created (RDS and Aurora retired PostgreSQL ${major} minors below ${major}.${lowest}); use ${major}.${lowest} or later, or ${DEFAULT_POSTGRES_VERSION}`;
  return undefined;
}

/**
 * Subnets of a router VPC, per AZ: public (the NLB), routers (the tasks) and cell endpoints (one
 * interface endpoint per cell of the fleet). A VPC subnet keeps 5 addresses for AWS (Amazon VPC
 * User Guide, "Subnet CIDR blocks"), so the /23 holds the endpoints of 507 cells.
 */
export const ROUTER_SUBNET_MASKS = { public: 24, routers: 24, cellEndpoints: 23 } as const;
/** Addresses AWS keeps in every subnet. */
export const SUBNET_RESERVED_ADDRESSES = 5;
/** Cells whose endpoints one cell-endpoint subnet holds. */
export const CELLS_PER_ENDPOINT_SUBNET = 2 ** (32 - ROUTER_SUBNET_MASKS.cellEndpoints) - SUBNET_RESERVED_ADDRESSES;

/**
 * Cells are run at half their tested rate with one spare to receive moves ("operated with headroom,
 * half the tested ceiling, so spikes, failovers and incoming moves have room").
 */
/** The tier a cell serves when it names none: the one whose cells hold the mapping's buckets. */
export const DEFAULT_TIER = 'general';

export const DEFAULT_CAPACITY: Required<CapacityConfig> = { targetUtilisation: 0.5, spareCells: 1, largeTenantShare: 0.5, defaultTier: DEFAULT_TIER };

/**
 * The most regions one router sends elsewhere (one redirect backend each in the router's HAProxy
 * configuration, which is the same in every region): a fleet with `home-and-failover` has at most
 * this many regions besides the router's own.
 */
export const MAX_ELSEWHERE_REGIONS = 8;
