import { AlarmThresholds, PartitionKeySource, RouterGroupConfig } from './types';

export const DEFAULT_PARTITION_KEY: PartitionKeySource = { source: 'header', name: 'x-tenant-id' };
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
  { name: 'canary', tasks: 2 },
  { name: 'main', tasks: 4 },
];
export const DEFAULT_PUBLISH_BAKE_SECONDS = 300;
export const DEFAULT_CELL_ENDPOINT_TEMPLATE = 'https://{cell}.{app}.cells.internal';

/** The most backend slots a router may have (HAProxy backends per router task). */
export const MAX_ROUTER_SLOTS = 1000;

/**
 * Router backend slots for a fleet of `cells`: twice the cells, rounded up to a multiple of 64, so
 * the routers' configuration (and image) changes only every few dozen cells.
 */
export function defaultRouterSlots(cells: number): number {
  return Math.min(MAX_ROUTER_SLOTS, Math.max(64, Math.ceil((2 * cells) / 64) * 64));
}

/** Bake times are bounded: under a minute watches nothing, over a day stalls every release. */
export const BAKE_SECONDS_RANGE = { min: 60, max: 86_400 } as const;
