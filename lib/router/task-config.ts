import type { Fleet } from '../fleet';
import { connectionLimits, HaproxyConfigOptions, READY_PORT, renderHaproxyConfig, ROUTER_TASK_MEMORY_MIB } from './haproxy-config';

/**
 * What a router task's HAProxy runs with unless told otherwise: the defaults of
 * `cellctl router config`, which `images/router-haproxy/Dockerfile` runs to bake the configuration
 * into the router image. One source for that command and for the configuration the CellIsolation
 * pack audits (`routerImageConfig`), so the audit checks what the image serves.
 */
export const ROUTER_TASK_DEFAULTS = {
  port: 8080,
  stateDir: '/var/lib/cell-router',
  /** Runtime API shared with the agent container over the task's localhost. */
  adminSocket: '127.0.0.1:9999',
  statsPort: 8404,
  readyPort: READY_PORT,
} as const;

/** The settings `cellctl router config` takes; anything left out is the task default. */
export interface RouterTaskSettings {
  readonly port?: number;
  readonly stateDir?: string;
  /** `host:port` (TCP) or a unix socket path. */
  readonly adminSocket?: string;
  readonly slots?: number;
  readonly statsPort?: number;
  readonly readyPort?: number;
  readonly debugHeaders?: boolean;
  readonly maxConn?: number;
}

/** The HAProxy options of a router task of `fleet`: behind the NLB (PROXY protocol v2, readiness), limits from the fleet and the task size. */
export function routerTaskOptions(fleet: Fleet, s: RouterTaskSettings = {}): HaproxyConfigOptions {
  const adminSocket = s.adminSocket ?? ROUTER_TASK_DEFAULTS.adminSocket;
  return {
    bind: { address: '0.0.0.0', port: s.port ?? ROUTER_TASK_DEFAULTS.port },
    adminSocket: /^[\w.-]+:\d+$/.test(adminSocket) ? `ipv4@${adminSocket}` : adminSocket,
    stateDir: s.stateDir ?? ROUTER_TASK_DEFAULTS.stateDir,
    partitionKey: fleet.partitionKey,
    bucketCount: fleet.bucketCount,
    slots: s.slots ?? fleet.router.slots,
    cellMaxConn: fleet.router.cellMaxConn,
    queueTimeoutMs: fleet.router.queueTimeoutMs,
    tenantMaxConn: fleet.router.tenantMaxConn,
    healthCheckPath: fleet.workload.healthCheckPath,
    debugHeaders: s.debugHeaders,
    statsPort: s.statsPort ?? ROUTER_TASK_DEFAULTS.statsPort,
    // Behind the NLB: PROXY protocol v2 (the target group enables it), readiness for its health check.
    acceptProxy: true,
    readyBind: { address: '0.0.0.0', port: s.readyPort ?? ROUTER_TASK_DEFAULTS.readyPort },
    maxConn: s.maxConn ?? connectionLimits(ROUTER_TASK_MEMORY_MIB).maxConn,
    // One server per zone of the widest region.
    zones: Math.min(6, Math.max(...Object.values(fleet.regions).map((r) => r.availabilityZones.length))),
  };
}

/** The HAProxy configuration of a router task of `fleet` (what `cellctl router config` prints). */
export function routerTaskConfig(fleet: Fleet, settings: RouterTaskSettings = {}): string {
  return renderHaproxyConfig(routerTaskOptions(fleet, settings));
}
