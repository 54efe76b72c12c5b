import * as path from 'path';
import type { Fleet } from '../../domain/fleet';
import { MAX_JWT_KEYS } from '../../domain/fleet/jwt';
import type { PartitionKeySource, ZoneAffinity } from '../../domain/fleet/types';
import {
  connectionLimits,
  ERROR_503,
  HaproxyConfigOptions,
  jwtKeyFile,
  MAP_FILES,
  READINESS_MAP,
  READINESS_MAP_CONTENT,
  READY_PORT,
  renderHaproxyConfig,
  ROUTER_TASK_MEMORY_MIB,
} from './haproxy-config';

/**
 * Where a router task's HAProxy listens and keeps its state unless told otherwise: what the router
 * group's task definition runs with (lib/constructs/router) and the defaults of `cellctl router config`.
 */
export const ROUTER_TASK_DEFAULTS = {
  port: 8080,
  stateDir: '/var/lib/cell-router',
  /** Runtime API shared with the agent container over the task's localhost. */
  adminSocket: '127.0.0.1:9999',
  statsPort: 8404,
  readyPort: READY_PORT,
} as const;

/**
 * How a router routes: the router's own settings, everything its HAProxy configuration depends on
 * besides where the task listens. Nothing here names a cell: the cells, their endpoints and which
 * buckets they own arrive in the mapping at run time, so a router image is the same whatever cells
 * the fleet has.
 */
export interface RouterRouting {
  /** Where requests carry the partition key. */
  readonly partitionKey: PartitionKeySource;
  /** Buckets keys hash into (a power of two); the agent refuses a mapping made for another count. */
  readonly bucketCount: number;
  /** The fleet has home regions: the router routes a mapping's home tables (HaproxyConfigOptions.homeTables). @default false */
  readonly homeTables?: boolean;
  /** Backend slots: the most cells one mapping may reference. */
  readonly slots: number;
  /** Servers per cell backend: one per zonal address of a cell's endpoint (the most zones a cell region has, at most 6). */
  readonly zones: number;
  /** Concurrent requests per cell through one router task; more wait in the cell's bounded queue. */
  readonly cellMaxConn: number;
  /** How long a request may wait in a saturated cell's queue before it gets 503. @default 1000 */
  readonly queueTimeoutMs?: number;
  /** Requests one tenant may have in flight through one task. @default - no per-tenant cap */
  readonly tenantMaxConn?: number;
  /** What one client address may hold in one cell. @default - no per-address cap */
  readonly clientMaxConnPerCell?: number;
  /**
   * A full task may leave its target group's rotation while at most half of its group is out (the
   * agent's FullReadinessGate: TARGET_GROUP_ARN and DescribeTargetHealth). Not part of HAProxy's
   * configuration: without it the agent never gives the permission. @default true
   */
  readonly fullTaskLeaves?: boolean;
  /** The path the router health-checks every cell on (the workload's health check). */
  readonly cellHealthCheckPath: string;
  /** Largest body a request may announce (HaproxyConfigOptions.maxBodyBytes). @default DEFAULT_MAX_BODY_BYTES */
  readonly maxBodyBytes?: number;
  /**
   * `own-zone`: the agent weights each cell's server in the task's own zone first (RouterConfig.zoneAffinity).
   * Not part of HAProxy's configuration: the agent sets server weights at run time. @default 'spread'
   */
  readonly zoneAffinity?: ZoneAffinity;
}

/**
 * The router's routing settings from the fleet file: the one place they are read from it, for the
 * router stacks, `cellctl router config` and the audit alike. Zones: one server per zone of the
 * widest region, since a cell in any region may be behind any router.
 */
export function routerRoutingOf(fleet: Fleet): RouterRouting {
  return {
    partitionKey: fleet.partitionKey,
    bucketCount: fleet.bucketCount,
    ...(fleet.homes ? { homeTables: true } : {}),
    slots: fleet.router.slots,
    zones: Math.min(6, Math.max(...Object.values(fleet.regions).map((r) => r.availabilityZones.length))),
    cellMaxConn: fleet.router.cellMaxConn,
    queueTimeoutMs: fleet.router.queueTimeoutMs,
    tenantMaxConn: fleet.router.tenantMaxConn,
    clientMaxConnPerCell: fleet.router.clientMaxConnPerCell,
    cellHealthCheckPath: fleet.workload.healthCheckPath,
    maxBodyBytes: fleet.router.maxBodyBytes,
    fullTaskLeaves: fleet.router.fullTaskLeaves,
    zoneAffinity: fleet.router.zoneAffinity,
  };
}

/** Where a router task's HAProxy listens and keeps its state; anything left out is the task default. */
export interface RouterTaskSettings {
  readonly port?: number;
  readonly stateDir?: string;
  /** `host:port` (TCP) or a unix socket path. */
  readonly adminSocket?: string;
  readonly statsPort?: number;
  readonly readyPort?: number;
  readonly debugHeaders?: boolean;
  /** @default what a router task's memory holds (`connectionLimits(ROUTER_TASK_MEMORY_MIB)`) */
  readonly maxConn?: number;
}

/** The HAProxy options of a router task: behind the NLB (PROXY protocol v2, readiness), routing as `routing` says. */
export function routerTaskOptions(routing: RouterRouting, s: RouterTaskSettings = {}): HaproxyConfigOptions {
  const adminSocket = s.adminSocket ?? ROUTER_TASK_DEFAULTS.adminSocket;
  return {
    bind: { address: '0.0.0.0', port: s.port ?? ROUTER_TASK_DEFAULTS.port },
    adminSocket: /^[\w.-]+:\d+$/.test(adminSocket) ? `ipv4@${adminSocket}` : adminSocket,
    stateDir: s.stateDir ?? ROUTER_TASK_DEFAULTS.stateDir,
    partitionKey: routing.partitionKey,
    bucketCount: routing.bucketCount,
    homeTables: routing.homeTables,
    slots: routing.slots,
    cellMaxConn: routing.cellMaxConn,
    queueTimeoutMs: routing.queueTimeoutMs,
    tenantMaxConn: routing.tenantMaxConn,
    clientMaxConnPerCell: routing.clientMaxConnPerCell,
    healthCheckPath: routing.cellHealthCheckPath,
    maxBodyBytes: routing.maxBodyBytes,
    debugHeaders: s.debugHeaders,
    statsPort: s.statsPort ?? ROUTER_TASK_DEFAULTS.statsPort,
    // Behind the NLB: PROXY protocol v2 (the target group enables it), readiness for its health check.
    acceptProxy: true,
    readyBind: { address: '0.0.0.0', port: s.readyPort ?? ROUTER_TASK_DEFAULTS.readyPort },
    maxConn: s.maxConn ?? connectionLimits(ROUTER_TASK_MEMORY_MIB).maxConn,
    zones: routing.zones,
  };
}

/** The HAProxy configuration of a router task (what the router image runs, and `cellctl router config` prints). */
export function routerTaskConfig(routing: RouterRouting, settings: RouterTaskSettings = {}): string {
  return renderHaproxyConfig(routerTaskOptions(routing, settings));
}

/**
 * The files a router task's HAProxy starts from, by name: its configuration (`haproxy.cfg`), the 503
 * page, the empty map files the agent fills and the readiness map (a full task stays in). The router image holds them (lib/runtime/images), and
 * `cellctl router config --out-dir` writes them.
 */
export function routerStateFiles(config: string, partitionKey?: PartitionKeySource): Record<string, string> {
  // The verified-token keys, in slots of their own (empty unless the fleet verifies tokens), so the
  // image holds the same files whatever the key source.
  const keys = partitionKey?.source === 'jwt' ? partitionKey.publicKeys : [];
  const slots = Object.fromEntries(Array.from({ length: MAX_JWT_KEYS }, (_, i) => [path.basename(jwtKeyFile('.', i)), keys[i] ?? '']));
  return {
    'haproxy.cfg': config,
    '503.http': ERROR_503,
    ...Object.fromEntries(Object.values(MAP_FILES).map((name) => [name, ''])),
    [READINESS_MAP]: READINESS_MAP_CONTENT,
    ...slots,
  };
}
