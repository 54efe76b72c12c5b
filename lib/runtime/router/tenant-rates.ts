import { CellLoad, TenantLoad } from '../../domain/capacity/types';
import { compileMapping } from '../../domain/mapping/lookup';
import { MappingDocument } from '../../domain/mapping/types';
import { KEY_TABLE, TENANT_RATE_PERIOD_SECONDS } from './haproxy-config';
import { RuntimeApi } from './runtime-api';

/** One tenant as a router's keys table counts it. */
export interface TenantRate {
  readonly tenant: string;
  /** Requests in the table's rate period. */
  readonly requests: number;
  /** Requests per second over the period. */
  readonly rps: number;
}

/**
 * Parses `show table keys` lines (`0x…: key=tenant-1 use=0 exp=1799 gpt0=5 http_req_rate(10000)=30`).
 * Entries without a bucket (gpt0 0: a key that failed the check) are not tenants and are skipped.
 */
export function parseKeyTable(answer: string, periodSeconds = TENANT_RATE_PERIOD_SECONDS): TenantRate[] {
  const rates: TenantRate[] = [];
  for (const line of answer.split('\n')) {
    const key = / key=(\S+)/.exec(line)?.[1];
    const gpt0 = Number(/ gpt0=(\d+)/.exec(line)?.[1] ?? 0);
    const requests = Number(/ http_req_rate\(\d+\)=(\d+)/.exec(line)?.[1] ?? 0);
    if (key === undefined || gpt0 === 0 || requests === 0) continue;
    rates.push({ tenant: key, requests, rps: requests / periodSeconds });
  }
  return rates;
}

/**
 * The tenants that sent requests within the rate period, read from HAProxy's keys table. HAProxy
 * filters the table itself (`data.http_req_rate gt 0`), so idle entries of a full table are not sent.
 */
export async function readTenantRates(api: RuntimeApi): Promise<TenantRate[]> {
  const answer = await api.send(`show table ${KEY_TABLE} data.http_req_rate gt 0`);
  if (!answer.startsWith('# table:')) throw new Error(`HAProxy has no ${KEY_TABLE} table with http_req_rate: ${answer.trim().split('\n')[0]}`);
  return parseKeyTable(answer);
}

/** Sums several routers' tables: a tenant's requests through every router. */
export function mergeTenantRates(tables: readonly (readonly TenantRate[])[]): TenantRate[] {
  const sum = new Map<string, TenantRate>();
  for (const table of tables) {
    for (const t of table) {
      const was = sum.get(t.tenant);
      sum.set(t.tenant, was ? { tenant: t.tenant, requests: was.requests + t.requests, rps: was.rps + t.rps } : t);
    }
  }
  return [...sum.values()];
}

/**
 * Per cell of the mapping: the rate, the active tenants and the `top` busiest tenants. A tenant's
 * cell is what the mapping says now (exact, prefix, bucket), as the router routes it.
 */
export function cellLoadsOf(rates: readonly TenantRate[], mapping: MappingDocument, top = 10): CellLoad[] {
  const compiled = compileMapping(mapping);
  const byCell = new Map<string, TenantLoad[]>(Object.keys(mapping.cells).map((c) => [c, []]));
  for (const r of rates) {
    const cell = compiled.lookup(r.tenant).cell;
    byCell.get(cell)?.push({ tenant: r.tenant, rps: r.rps });
  }
  return [...byCell].map(([cell, tenants]) => {
    const rps = tenants.reduce((n, t) => n + t.rps, 0);
    return {
      cell,
      currentRps: rps,
      peakRps: rps,
      activeTenants: tenants.length,
      topTenants: tenants.sort((a, b) => b.rps - a.rps || a.tenant.localeCompare(b.tenant)).slice(0, top),
    };
  });
}

/** Several readings of the same cells (samples over a window): the last as current, the highest as peak. */
export function overWindow(samples: readonly (readonly CellLoad[])[]): CellLoad[] {
  const last = samples[samples.length - 1] ?? [];
  return last.map((now) => {
    const seen = samples.map((s) => s.find((l) => l.cell === now.cell)).filter((l): l is CellLoad => l !== undefined);
    const peakByTenant = new Map<string, number>();
    for (const s of seen) for (const t of s.topTenants) peakByTenant.set(t.tenant, Math.max(peakByTenant.get(t.tenant) ?? 0, t.peakRps ?? t.rps));
    return {
      ...now,
      peakRps: Math.max(...seen.map((l) => l.peakRps)),
      topTenants: now.topTenants.map((t) => ({ ...t, peakRps: peakByTenant.get(t.tenant) ?? t.rps })),
    };
  });
}

/** Tenants per cell the agent reports by name (the rest are counted in `ActiveTenants` only). */
export const REPORTED_TOP_TENANTS = 5;

/**
 * CloudWatch EMF lines of a router task's tenant counts: per cell, `ActiveTenants` (tenants this
 * task saw in the rate period; tasks see overlapping sets, so the fleet-wide count is at least the
 * largest task's) and, per top tenant, `TenantRequestsPerSecond` (this task's share of the
 * tenant's rate: summed over the tasks, it is the tenant's rate at the router). Dimensions hold
 * `Cell` (and `Tenant`) only, so one query sums every router group and task.
 */
export function tenantMetricLines(rates: readonly TenantRate[], mapping: MappingDocument, timestamp: number, top = REPORTED_TOP_TENANTS): string[] {
  const lines: string[] = [];
  for (const load of cellLoadsOf(rates, mapping, top)) {
    lines.push(
      JSON.stringify({
        _aws: {
          Timestamp: timestamp,
          CloudWatchMetrics: [{ Namespace: 'CellRouter', Dimensions: [['Cell']], Metrics: [{ Name: 'ActiveTenants', Unit: 'Count' }] }],
        },
        Cell: load.cell,
        ActiveTenants: load.activeTenants,
      }),
    );
    for (const t of load.topTenants) {
      lines.push(
        JSON.stringify({
          _aws: {
            Timestamp: timestamp,
            CloudWatchMetrics: [
              { Namespace: 'CellRouter', Dimensions: [['Cell', 'Tenant']], Metrics: [{ Name: 'TenantRequestsPerSecond', Unit: 'Count/Second' }] },
            ],
          },
          Cell: load.cell,
          Tenant: t.tenant,
          TenantRequestsPerSecond: t.rps,
        }),
      );
    }
  }
  return lines;
}
