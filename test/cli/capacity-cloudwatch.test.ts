import { CloudWatchClient, GetMetricDataCommand, GetMetricDataCommandInput, ListMetricsCommand, MetricDataQuery } from '@aws-sdk/client-cloudwatch';
import { mockClient } from 'aws-sdk-client-mock';
import { readCellSignals, readRouterLoads } from '../../lib/cli/capacity-cloudwatch';
import { CellSignalsRecord } from '../../lib/domain/capacity';

/**
 * The CloudWatch path of `cellctl capacity`, against recorded GetMetricData / ListMetrics answers
 * shaped like the real API's: ids as asked, timestamps ascending, one value per period with data.
 */
const NOW = new Date('2026-12-01T12:05:30Z');
const minute = (m: number) => new Date(Date.UTC(2026, 11, 1, 12, m));

/** Recorded series, by metric and dimensions: timestamp minute → value. */
type Recorded = Record<string, Record<number, number>>;
const keyOf = (q: MetricDataQuery) =>
  `${q.MetricStat!.Metric!.MetricName}|${q.MetricStat!.Metric!.Dimensions!.map((d) => `${d.Name}=${d.Value}`).join(',')}|${q.MetricStat!.Stat}`;

function answer(recorded: Recorded, input: GetMetricDataCommandInput) {
  return {
    MetricDataResults: input.MetricDataQueries!.map((q) => {
      const points = Object.entries(recorded[keyOf(q)] ?? {})
        .map(([m, v]) => [minute(Number(m)), v] as const)
        // Not cut at EndTime: the reader itself must leave out a period that has not ended.
        .filter(([t]) => t >= input.StartTime!);
      return {
        Id: q.Id,
        Label: q.MetricStat!.Metric!.MetricName,
        Timestamps: points.map(([t]) => t),
        Values: points.map(([, v]) => v),
        StatusCode: 'Complete' as const,
      };
    }),
  };
}

describe('readRouterLoads (CloudWatch)', () => {
  const cw = mockClient(CloudWatchClient);
  const slept: number[] = [];
  const options = (clients: CloudWatchClient[]) => ({
    clients,
    cells: ['eu-1', 'eu-2'],
    groups: ['canary', 'main'],
    windowMinutes: 5,
    now: NOW,
    sleep: async (ms: number) => {
      slept.push(ms);
    },
  });
  beforeEach(() => {
    cw.reset();
    slept.length = 0;
  });

  const recorded: Recorded = {
    // eu-1: both groups' requests per minute (12:00-12:04), and a partial 12:05 point that must not count.
    'Requests|RouterGroup=canary,Cell=eu-1|Sum': { 0: 600, 1: 600, 2: 1200, 3: 600, 4: 600, 5: 60_000 },
    'Requests|RouterGroup=main,Cell=eu-1|Sum': { 0: 1800, 1: 1800, 2: 4800, 3: 1800, 4: 1200 },
    // eu-2: no data at 12:01 and 12:04 (a router that did not report): missing, not zero.
    'Requests|RouterGroup=main,Cell=eu-2|Sum': { 0: 600, 2: 1200, 3: 900 },
    'ActiveTenants|Cell=eu-1|Maximum': { 3: 40, 4: 38 },
    'ActiveTenants|Cell=eu-2|Maximum': { 3: 7 },
    // Two router tasks each report the tenant's rate once a minute: the Sum is the tenant's rate.
    'TenantRequestsPerSecond|Cell=eu-1,Tenant=acme|Sum': { 2: 70, 3: 30, 4: 25 },
    'TenantRequestsPerSecond|Cell=eu-1,Tenant=globex|Sum': { 2: 5, 4: 4 },
  };
  const listed = (cell: string) => ({
    Metrics:
      cell === 'eu-1'
        ? [
            {
              Namespace: 'CellRouter',
              MetricName: 'TenantRequestsPerSecond',
              Dimensions: [
                { Name: 'Cell', Value: 'eu-1' },
                { Name: 'Tenant', Value: 'acme' },
              ],
            },
            {
              Namespace: 'CellRouter',
              MetricName: 'TenantRequestsPerSecond',
              Dimensions: [
                { Name: 'Cell', Value: 'eu-1' },
                { Name: 'Tenant', Value: 'globex' },
              ],
            },
          ]
        : [],
  });

  it('sums router groups per whole period, leaves out the partial period, takes current and peak, and names the top tenants', async () => {
    cw.on(ListMetricsCommand).callsFake((input) => listed(input.Dimensions[0].Value));
    cw.on(GetMetricDataCommand).callsFake((input) => answer(recorded, input));
    const loads = await readRouterLoads(options([new CloudWatchClient({ region: 'eu-west-1' })]));
    const get = cw.commandCalls(GetMetricDataCommand)[0].args[0].input;
    expect([get.StartTime, get.EndTime]).toEqual([minute(0), minute(5)]);
    expect(loads).toEqual([
      {
        cell: 'eu-1',
        currentRps: 30,
        peakRps: 100,
        activeTenants: 38,
        missingPeriods: 0,
        topTenants: [
          { tenant: 'acme', rps: 25, peakRps: 70 },
          { tenant: 'globex', rps: 4, peakRps: 5 },
        ],
      },
      { cell: 'eu-2', currentRps: 15, peakRps: 20, activeTenants: 7, missingPeriods: 2, topTenants: [] },
    ]);
  });

  it("adds up every region's routers", async () => {
    cw.on(ListMetricsCommand).resolves({ Metrics: [] });
    cw.on(GetMetricDataCommand).callsFake((input) => answer(recorded, input));
    const loads = await readRouterLoads(options([new CloudWatchClient({ region: 'eu-west-1' }), new CloudWatchClient({ region: 'us-east-1' })]));
    expect(loads[0]).toMatchObject({ currentRps: 60, peakRps: 200 });
  });

  it('follows NextToken pages', async () => {
    cw.on(ListMetricsCommand).resolves({ Metrics: [] });
    let page = 0;
    cw.on(GetMetricDataCommand).callsFake((input) => {
      const full = answer(recorded, input);
      page += 1;
      // The first page holds the first two minutes, the second the rest, under the same ids.
      const split = (first: boolean) =>
        full.MetricDataResults.map((r) => ({
          ...r,
          Timestamps: r.Timestamps.filter((t) => t < minute(2) === first),
          Values: r.Values.filter((_, i) => r.Timestamps[i] < minute(2) === first),
        }));
      return input.NextToken ? { MetricDataResults: split(false) } : { MetricDataResults: split(true), NextToken: 'page-2' };
    });
    const loads = await readRouterLoads(options([new CloudWatchClient({ region: 'eu-west-1' })]));
    expect(page).toBe(2);
    expect(loads[0]).toMatchObject({ currentRps: 30, peakRps: 100, missingPeriods: 0 });
  });

  it('retries throttling with backoff, then says what failed', async () => {
    const throttled = Object.assign(new Error('Rate exceeded'), { name: 'Throttling' });
    cw.on(ListMetricsCommand).resolves({ Metrics: [] });
    cw.on(GetMetricDataCommand)
      .rejectsOnce(throttled)
      .rejectsOnce(throttled)
      .callsFake((input) => answer(recorded, input));
    const loads = await readRouterLoads(options([new CloudWatchClient({ region: 'eu-west-1' })]));
    expect(slept).toEqual([1000, 2000]);
    expect(loads[0].peakRps).toBe(100);

    cw.reset();
    slept.length = 0;
    cw.on(ListMetricsCommand).resolves({ Metrics: [] });
    cw.on(GetMetricDataCommand).rejects(throttled);
    await expect(readRouterLoads({ ...options([new CloudWatchClient({ region: 'eu-west-1' })]), attempts: 3 })).rejects.toThrow(
      'CloudWatch GetMetricData: Throttling: Rate exceeded (still throttled after 3 attempts; try again, or a shorter --window)',
    );
    expect(slept).toEqual([1000, 2000]);
  });

  it('does not retry an access error', async () => {
    cw.on(ListMetricsCommand).rejects(Object.assign(new Error('User is not authorized to perform cloudwatch:ListMetrics'), { name: 'AccessDenied' }));
    await expect(readRouterLoads(options([new CloudWatchClient({ region: 'eu-west-1' })]))).rejects.toThrow(
      /^CloudWatch ListMetrics: AccessDenied: User is not authorized/,
    );
    expect(slept).toEqual([]);
  });

  it('judges a cell with no data at all as idle with every period missing', async () => {
    cw.on(ListMetricsCommand).resolves({ Metrics: [] });
    cw.on(GetMetricDataCommand).callsFake((input) => answer({}, input));
    const loads = await readRouterLoads(options([new CloudWatchClient({ region: 'eu-west-1' })]));
    expect(loads[1]).toEqual({ cell: 'eu-2', currentRps: 0, peakRps: 0, activeTenants: 0, missingPeriods: 5, topTenants: [] });
  });
});

describe("readCellSignals (CloudWatch in each cell's account)", () => {
  const cw = mockClient(CloudWatchClient);
  const slept: number[] = [];
  beforeEach(() => {
    cw.reset();
    slept.length = 0;
  });
  /** What a Fargate + Aurora cell stack publishes (lib/constructs/cell/metrics-access.ts), with deployed names. */
  const record: CellSignalsRecord = {
    schemaVersion: 2,
    signals: {
      computeCpu: {
        namespace: 'AWS/ECS',
        metricName: 'CPUUtilization',
        statistic: 'Average',
        dimensions: { ClusterName: 'orders-cell-eu-1-Cluster1', ServiceName: 'orders-cell-eu-1-Service2' },
        running: {
          namespace: 'ECS/ContainerInsights',
          metricName: 'RunningTaskCount',
          statistic: 'Average',
          dimensions: { ClusterName: 'orders-cell-eu-1-Cluster1', ServiceName: 'orders-cell-eu-1-Service2' },
        },
        maximum: 10,
        unit: 'tasks',
      },
      databaseCpu: {
        namespace: 'AWS/RDS',
        metricName: 'CPUUtilization',
        statistic: 'Average',
        dimensions: { DBClusterIdentifier: 'orders-cell-eu-1-cluster3' },
      },
      databaseConnections: {
        namespace: 'AWS/RDS',
        metricName: 'DatabaseConnections',
        statistic: 'Average',
        dimensions: { DBClusterIdentifier: 'orders-cell-eu-1-cluster3' },
      },
      queueAgeSeconds: {
        namespace: 'AWS/SQS',
        metricName: 'ApproximateAgeOfOldestMessage',
        statistic: 'Maximum',
        dimensions: { QueueName: 'orders-cell-eu-1-Work4' },
      },
    },
  };
  const recorded: Recorded = {
    // 12:00-12:04 whole minutes; 12:05 has not ended (partial) and must not count, however high.
    // The service scales out at 60% CPU: its average stays near it while tasks are added.
    'CPUUtilization|ClusterName=orders-cell-eu-1-Cluster1,ServiceName=orders-cell-eu-1-Service2|Average': {
      0: 58,
      1: 61,
      2: 72,
      3: 60,
      4: 59,
      5: 99,
    },
    // Container Insights had no point at 12:02: that minute is missing for the compute, however high its CPU.
    'RunningTaskCount|ClusterName=orders-cell-eu-1-Cluster1,ServiceName=orders-cell-eu-1-Service2|Average': { 0: 2, 1: 3, 3: 4, 4: 4, 5: 10 },
    // The database reported nothing at 12:01 and 12:02: missing periods, not zero CPU.
    'CPUUtilization|DBClusterIdentifier=orders-cell-eu-1-cluster3|Average': { 0: 55, 3: 61, 4: 58 },
    'DatabaseConnections|DBClusterIdentifier=orders-cell-eu-1-cluster3|Average': { 0: 120, 1: 140, 2: 135, 3: 128, 4: 130 },
    // No queue data at all (an idle queue reports nothing): missing, never 0.
  };
  const options = (client: CloudWatchClient) => ({
    sources: [{ cell: 'eu-1', client, record: async () => record }],
    windowMinutes: 5,
    now: NOW,
    sleep: async (ms: number) => {
      slept.push(ms);
    },
  });

  it('reads every signal with its statistic over whole periods: current and peak, missing periods, no data as missing', async () => {
    cw.on(GetMetricDataCommand).callsFake((input) => answer(recorded, input));
    const [result] = await readCellSignals(options(new CloudWatchClient({ region: 'eu-west-1' })));
    const get = cw.commandCalls(GetMetricDataCommand)[0].args[0].input;
    expect([get.StartTime, get.EndTime]).toEqual([minute(0), minute(5)]);
    expect(get.MetricDataQueries!.map((q) => [q.MetricStat!.Metric!.Namespace, q.MetricStat!.Stat, q.MetricStat!.Period])).toEqual([
      ['AWS/ECS', 'Average', 60],
      ['AWS/RDS', 'Average', 60],
      ['AWS/RDS', 'Average', 60],
      ['AWS/SQS', 'Maximum', 60],
      ['ECS/ContainerInsights', 'Average', 60],
    ]);
    expect(result).toEqual({
      cell: 'eu-1',
      signals: {
        // The share of the 10 tasks the cell may have: 4 at 60% at 12:03 (24%), 4 at 59% last (23.6%).
        computeCpu: {
          current: 23.6,
          peak: 24,
          missingPeriods: 1,
          maximum: 10,
          unit: 'tasks',
          peakRunning: 4,
          peakCpu: 60,
          currentRunning: 4,
          currentCpu: 59,
        },
        databaseCpu: { current: 58, peak: 61, missingPeriods: 2 },
        databaseConnections: { current: 130, peak: 140, missingPeriods: 0 },
        queueAgeSeconds: { missingPeriods: 5 },
      },
    });
  });

  it('reads a compute without a running count (Container Insights or group metrics off) as missing, not from its CPU alone', async () => {
    const { 'RunningTaskCount|ClusterName=orders-cell-eu-1-Cluster1,ServiceName=orders-cell-eu-1-Service2|Average': _count, ...noCount } = recorded;
    cw.on(GetMetricDataCommand).callsFake((input) => answer(noCount, input));
    const [result] = await readCellSignals(options(new CloudWatchClient({ region: 'eu-west-1' })));
    expect(result).toMatchObject({ signals: { computeCpu: { missingPeriods: 5, maximum: 10, unit: 'tasks' } } });
    expect((result as { signals: { computeCpu: object } }).signals.computeCpu).not.toHaveProperty('peak');
  });

  it('retries a throttled cell with backoff; a cell still throttled, or whose record cannot be read, gets its error while the others are read', async () => {
    const throttled = Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
    cw.on(GetMetricDataCommand)
      .rejectsOnce(throttled)
      .callsFake((input) => answer(recorded, input));
    const [ok] = await readCellSignals(options(new CloudWatchClient({ region: 'eu-west-1' })));
    expect(slept).toEqual([1000]);
    expect(ok).toMatchObject({ signals: { computeCpu: { peak: 24 } } });

    cw.reset();
    slept.length = 0;
    const client = new CloudWatchClient({ region: 'eu-west-1' });
    cw.on(GetMetricDataCommand).callsFake((input) => {
      if (input.MetricDataQueries[0].MetricStat.Metric.Dimensions[0].Value === 'throttled-cluster') throw throttled;
      return answer(recorded, input);
    });
    const busy = {
      ...record,
      signals: { computeCpu: { ...record.signals.computeCpu!, dimensions: { ClusterName: 'throttled-cluster', ServiceName: 's' } } },
    };
    const results = await readCellSignals({
      ...options(client),
      attempts: 2,
      sources: [
        { cell: 'eu-1', client, record: async () => record },
        { cell: 'eu-2', client, record: async () => busy },
        {
          cell: 'eu-3',
          client,
          record: async () => {
            throw new Error('cannot assume arn:aws:iam::333333333333:role/orders-eu-3-metrics-reader (AccessDenied: not authorized)');
          },
        },
      ],
    });
    expect(results).toEqual([
      { cell: 'eu-1', signals: expect.objectContaining({ databaseCpu: { current: 58, peak: 61, missingPeriods: 2 } }) },
      {
        cell: 'eu-2',
        error: 'CloudWatch GetMetricData: ThrottlingException: Rate exceeded (still throttled after 2 attempts; try again, or a shorter --window)',
      },
      { cell: 'eu-3', error: 'cannot assume arn:aws:iam::333333333333:role/orders-eu-3-metrics-reader (AccessDenied: not authorized)' },
    ]);
  });

  it("stops at an error of the operator's own credentials instead of reporting it once per cell", async () => {
    const expired = Object.assign(new Error('The security token included in the request is expired'), { name: 'ExpiredTokenException' });
    await expect(
      readCellSignals({
        ...options(new CloudWatchClient({ region: 'eu-west-1' })),
        sources: [
          {
            cell: 'eu-1',
            client: new CloudWatchClient({ region: 'eu-west-1' }),
            record: async () => {
              throw expired;
            },
          },
        ],
      }),
    ).rejects.toBe(expired);
  });
});
