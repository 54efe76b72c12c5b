import type { CloudWatchClient, MetricDataQuery, MetricDataResult } from '@aws-sdk/client-cloudwatch';
import {
  CELL_SIGNALS,
  CellSignalReadings,
  CellSignalsRecord,
  computeReadingOf,
  PeriodPoints,
  PublishedMetric,
  SignalReading,
} from '../domain/capacity/signals';
import { CellLoad, TenantLoad } from '../domain/capacity/types';
import { isCredentialsError, NoCredentialsError } from '../adapters/aws/credentials';

/** How throttled CloudWatch calls are retried. */
interface Retrying {
  readonly sleep: (ms: number) => Promise<void>;
  /** Retries of a throttled call. @default 6 */
  readonly attempts?: number;
  readonly progress?: (line: string) => void;
}

/** What the routers' metrics are read with: one CloudWatch client per region of the router account. */
export interface RouterMetricsOptions {
  /** One client per region (the routers of each region publish their own metrics). */
  readonly clients: readonly Pick<CloudWatchClient, 'send'>[];
  readonly cells: readonly string[];
  /** Router groups: the routers' `Requests` metric has a RouterGroup dimension. */
  readonly groups: readonly string[];
  /** How far back the peak is taken. */
  readonly windowMinutes: number;
  /** @default 60 */
  readonly periodSeconds?: number;
  readonly now: Date;
  readonly sleep: (ms: number) => Promise<void>;
  /** Seconds between two reports of one router task (METRICS_SECONDS of the agent). @default 60 */
  readonly reportSeconds?: number;
  /** Tenants listed per cell. @default 10 */
  readonly top?: number;
  /** Retries of a throttled call. @default 6 */
  readonly attempts?: number;
  readonly progress?: (line: string) => void;
}

const NAMESPACE = 'CellRouter';
const THROTTLED = new Set(['Throttling', 'ThrottlingException', 'TooManyRequestsException', 'RequestLimitExceeded', 'LimitExceededException']);

/** Sends `command`, retrying throttling with exponential backoff (1 s, 2 s, … capped at 20 s). */
async function sendRetrying<T>(o: Retrying, client: Pick<CloudWatchClient, 'send'>, command: unknown, what: string): Promise<T> {
  const attempts = o.attempts ?? 6;
  for (let attempt = 1; ; attempt++) {
    try {
      return await (client.send as (c: unknown) => Promise<T>)(command);
    } catch (error) {
      const name = (error as Error).name;
      if (!THROTTLED.has(name) || attempt >= attempts) {
        throw new Error(
          `CloudWatch ${what}: ${name}: ${(error as Error).message}${THROTTLED.has(name) ? ` (still throttled after ${attempts} attempts; try again, or a shorter --window)` : ''}`,
        );
      }
      const delay = Math.min(20_000, 1000 * 2 ** (attempt - 1));
      o.progress?.(`CloudWatch ${what}: throttled, retrying in ${delay / 1000} s (attempt ${attempt + 1}/${attempts})`);
      await o.sleep(delay);
    }
  }
}

/** Every page of one GetMetricData question, results merged by id. */
async function metricData(
  o: Retrying,
  client: Pick<CloudWatchClient, 'send'>,
  queries: MetricDataQuery[],
  start: Date,
  end: Date,
): Promise<Map<string, Map<number, number>>> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { GetMetricDataCommand } = require('@aws-sdk/client-cloudwatch') as typeof import('@aws-sdk/client-cloudwatch');
  const series = new Map<string, Map<number, number>>();
  // GetMetricData takes at most 500 queries per call.
  for (let i = 0; i < queries.length; i += 500) {
    let token: string | undefined;
    do {
      const answer = await sendRetrying<{ MetricDataResults?: MetricDataResult[]; NextToken?: string }>(
        o,
        client,
        new GetMetricDataCommand({
          MetricDataQueries: queries.slice(i, i + 500),
          StartTime: start,
          EndTime: end,
          ScanBy: 'TimestampAscending',
          NextToken: token,
        }),
        'GetMetricData',
      );
      for (const r of answer.MetricDataResults ?? []) {
        const points = series.get(r.Id!) ?? new Map<number, number>();
        (r.Timestamps ?? []).forEach((t, j) => points.set(new Date(t).getTime(), (points.get(new Date(t).getTime()) ?? 0) + (r.Values?.[j] ?? 0)));
        series.set(r.Id!, points);
      }
      token = answer.NextToken;
    } while (token);
  }
  return series;
}

/** Tenants a cell's routers reported by name in the window (ListMetrics, every page). */
async function reportedTenants(o: RouterMetricsOptions, client: Pick<CloudWatchClient, 'send'>, cell: string): Promise<string[]> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { ListMetricsCommand } = require('@aws-sdk/client-cloudwatch') as typeof import('@aws-sdk/client-cloudwatch');
  const tenants = new Set<string>();
  let token: string | undefined;
  do {
    const answer = await sendRetrying<{ Metrics?: { Dimensions?: { Name?: string; Value?: string }[] }[]; NextToken?: string }>(
      o,
      client,
      new ListMetricsCommand({
        Namespace: NAMESPACE,
        MetricName: 'TenantRequestsPerSecond',
        Dimensions: [{ Name: 'Cell', Value: cell }],
        RecentlyActive: 'PT3H',
        NextToken: token,
      }),
      'ListMetrics',
    );
    for (const m of answer.Metrics ?? []) {
      const tenant = m.Dimensions?.find((d) => d.Name === 'Tenant')?.Value;
      if (tenant) tenants.add(tenant);
    }
    token = answer.NextToken;
  } while (token);
  return [...tenants].sort();
}

const id = (prefix: string, i: number, j = 0) => `${prefix}_${i}_${j}`;

/** Whole periods only: the window ends at the start of the current period. */
function windowOf(now: Date, windowMinutes: number, period: number): { start: Date; end: Date; periods: number } {
  const end = new Date(Math.floor(now.getTime() / (period * 1000)) * period * 1000);
  const start = new Date(end.getTime() - windowMinutes * 60_000);
  return { start, end, periods: Math.round((end.getTime() - start.getTime()) / (period * 1000)) };
}

/**
 * Each cell's load at the routers over the window, from the metrics router tasks publish
 * (`Requests` per router group and cell, `ActiveTenants` and `TenantRequestsPerSecond`):
 * - periods are whole: the window ends at the start of the current period, and a data point of a
 *   period that has not ended (a partial period) is left out;
 * - a period without data counts in `missingPeriods` and does not count as zero traffic: the
 *   current rate is that of the last period with data;
 * - every region's routers are summed (a cell takes requests entering in every region).
 */
export async function readRouterLoads(o: RouterMetricsOptions): Promise<CellLoad[]> {
  const period = o.periodSeconds ?? 60;
  const report = o.reportSeconds ?? 60;
  const { start, end, periods } = windowOf(o.now, o.windowMinutes, period);
  const stat = (metric: string, dims: Record<string, string>, statistic: string): MetricDataQuery['MetricStat'] => ({
    Metric: { Namespace: NAMESPACE, MetricName: metric, Dimensions: Object.entries(dims).map(([Name, Value]) => ({ Name, Value })) },
    Period: period,
    Stat: statistic,
  });
  const requests = new Map<string, Map<number, number>>();
  const active = new Map<string, Map<number, number>>();
  const tenantRates = new Map<string, Map<string, Map<number, number>>>();
  const add = (into: Map<number, number>, from: Map<number, number> | undefined, combine: (a: number, b: number) => number) => {
    for (const [t, v] of from ?? []) {
      if (t + period * 1000 > end.getTime()) continue; // a partial period
      into.set(t, into.has(t) ? combine(into.get(t)!, v) : v);
    }
  };
  for (const client of o.clients) {
    const queries: MetricDataQuery[] = [];
    o.cells.forEach((cell, i) => {
      o.groups.forEach((group, j) =>
        queries.push({ Id: id('req', i, j), MetricStat: stat('Requests', { RouterGroup: group, Cell: cell }, 'Sum'), ReturnData: true }),
      );
      queries.push({ Id: id('act', i), MetricStat: stat('ActiveTenants', { Cell: cell }, 'Maximum'), ReturnData: true });
    });
    const names = await Promise.all(o.cells.map((cell) => reportedTenants(o, client, cell)));
    o.cells.forEach((cell, i) =>
      names[i].forEach((tenant, k) =>
        queries.push({
          Id: id('ten', i, k),
          MetricStat: stat('TenantRequestsPerSecond', { Cell: cell, Tenant: tenant }, 'Sum'),
          ReturnData: true,
        }),
      ),
    );
    const series = await metricData(o, client, queries, start, end);
    o.cells.forEach((cell, i) => {
      const r = requests.get(cell) ?? new Map<number, number>();
      o.groups.forEach((_, j) => add(r, series.get(id('req', i, j)), (a, b) => a + b));
      requests.set(cell, r);
      const a = active.get(cell) ?? new Map<number, number>();
      add(a, series.get(id('act', i)), Math.max);
      active.set(cell, a);
      const byTenant = tenantRates.get(cell) ?? new Map<string, Map<number, number>>();
      names[i].forEach((tenant, k) => {
        const t = byTenant.get(tenant) ?? new Map<number, number>();
        add(t, series.get(id('ten', i, k)), (x, y) => x + y);
        byTenant.set(tenant, t);
      });
      tenantRates.set(cell, byTenant);
    });
  }
  return o.cells.map((cell) => {
    const counts = [...requests.get(cell)!].sort((a, b) => a[0] - b[0]);
    const rps = counts.map(([, n]) => n / period);
    const last = (m: Map<number, number>) => [...m].sort((a, b) => a[0] - b[0]).pop()?.[1] ?? 0;
    // Each task reports its rate every `report` seconds: a period's Sum holds period/report reports per task.
    const tenants: TenantLoad[] = [...tenantRates.get(cell)!]
      .map(([tenant, points]) => {
        const values = [...points].sort((a, b) => a[0] - b[0]).map(([, v]) => (v * report) / period);
        return { tenant, rps: values[values.length - 1] ?? 0, peakRps: Math.max(0, ...values) };
      })
      .filter((t) => t.peakRps > 0)
      .sort((a, b) => b.peakRps - a.peakRps || a.tenant.localeCompare(b.tenant));
    return {
      cell,
      currentRps: rps[rps.length - 1] ?? 0,
      peakRps: Math.max(0, ...rps),
      activeTenants: Math.max(tenants.length, last(active.get(cell)!)),
      topTenants: tenants.slice(0, o.top ?? 10),
      missingPeriods: periods - counts.length,
    };
  });
}

/** One cell whose own signals are read: CloudWatch in its account and region, and the record naming its metrics. */
export interface CellSignalSource {
  readonly cell: string;
  /** A client in the cell's account and region (the cell's metrics reader role). */
  readonly client: Pick<CloudWatchClient, 'send'>;
  /** The cell stack's signals record (its SSM parameter, read through the same role). */
  readonly record: () => Promise<CellSignalsRecord>;
}

export interface CellSignalsOptions extends Retrying {
  readonly sources: readonly CellSignalSource[];
  readonly windowMinutes: number;
  /** @default 60 */
  readonly periodSeconds?: number;
  readonly now: Date;
}

/** What was read of one cell: its signals, or why they could not be read. */
export type CellSignalsResult = { readonly cell: string; readonly signals: CellSignalReadings } | { readonly cell: string; readonly error: string };

/**
 * Each cell's own signals over the same window as the routers' rates (whole periods only, a
 * partial period left out), with the statistic its alarms use. A signal without data in a period
 * counts that period as missing; without data in any, it has no current and no peak (shown as
 * missing, never as 0). The compute is read as the share of its maximum in use: its CPU and its
 * running count, period by period (`computeReadingOf`); a period without either is missing. A cell
 * that cannot be read (its role cannot be assumed, it is not deployed yet, CloudWatch stays
 * throttled) gets its error, and the other cells are read all the same; an error of the operator's
 * own credentials stops everything (every cell would fail the same way).
 */
export async function readCellSignals(o: CellSignalsOptions): Promise<CellSignalsResult[]> {
  const period = o.periodSeconds ?? 60;
  const { start, end, periods } = windowOf(o.now, o.windowMinutes, period);
  const query = (queryId: string, m: PublishedMetric): MetricDataQuery => ({
    Id: queryId,
    MetricStat: {
      Metric: {
        Namespace: m.namespace,
        MetricName: m.metricName,
        Dimensions: Object.entries(m.dimensions).map(([Name, Value]) => ({ Name, Value })),
      },
      Period: period,
      Stat: m.statistic,
    },
    ReturnData: true,
  });
  const whole = (points: Map<number, number> | undefined) => wholePeriods(points, end, period);
  return Promise.all(
    o.sources.map(async (source): Promise<CellSignalsResult> => {
      try {
        const record = await source.record();
        const names = CELL_SIGNALS.filter((name) => record.signals[name]);
        const compute = record.signals.computeCpu;
        const queries = [
          ...names.map((name) => query(name.toLowerCase(), record.signals[name]!)),
          ...(compute ? [query('computerunning', compute.running)] : []),
        ];
        const series = await metricData(o, source.client, queries, start, end);
        const signals = Object.fromEntries(
          names.map((name) => [
            name,
            name === 'computeCpu'
              ? computeReadingOf(whole(series.get('computecpu')), whole(series.get('computerunning')), compute!.maximum, compute!.unit, periods)
              : readingOf(whole(series.get(name.toLowerCase())), periods),
          ]),
        );
        return { cell: source.cell, signals };
      } catch (error) {
        if (isCredentialsError(error) || error instanceof NoCredentialsError) throw error;
        return { cell: source.cell, error: (error as Error).message.split('\n')[0] };
      }
    }),
  );
}

/** The points of whole periods (a period that has not ended left out), in time order. */
function wholePeriods(points: Map<number, number> | undefined, end: Date, period: number): PeriodPoints {
  return [...(points ?? [])].filter(([t]) => t + period * 1000 <= end.getTime()).sort((a, b) => a[0] - b[0]);
}

function readingOf(whole: PeriodPoints, periods: number): SignalReading {
  if (whole.length === 0) return { missingPeriods: periods };
  return { current: whole[whole.length - 1][1], peak: Math.max(...whole.map(([, v]) => v)), missingPeriods: periods - whole.length };
}
