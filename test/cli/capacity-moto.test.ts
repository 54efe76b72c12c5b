import { CloudWatchClient, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { CellSignalsRecord } from '../../lib/domain/capacity';
import { Fleet } from '../../lib/domain/fleet';
import { cellMetricsReaderRoleName, cellSignalsParameter } from '../../lib/domain/names';
import { cellctl } from '../support/cli';
import { exampleFleet } from '../support/fleet';
import { Moto, startMoto } from '../support/moto';

/**
 * `cellctl capacity`'s read of the cells' own signals against moto, through the SDK's own endpoint,
 * credential and wire handling (AWS_ENDPOINT_URL): it assumes each cell's metrics reader role (moto
 * gives an assumed role its account's own namespace, so a cell's data is found only with that cell's
 * credentials), reads the signals parameter there and asks GetMetricData for what it names. eu-1
 * published its signals and has data; eu-2 has not deployed yet (no parameter).
 */
describe("cellctl capacity: the cells' own signals, against moto", () => {
  let moto: Moto;
  let fleet: Fleet;
  const saved: Record<string, string | undefined> = {};
  const ENV = {
    AWS_ENDPOINT_URL: '',
    AWS_ACCESS_KEY_ID: 'testing',
    AWS_SECRET_ACCESS_KEY: 'testing',
    AWS_PROFILE: undefined,
    AWS_SESSION_TOKEN: undefined,
  };
  /** Whole minutes before now: the last whole minute is `ago(1)`. */
  const ago = (minutes: number) => new Date(Math.floor(Date.now() / 60_000) * 60_000 - minutes * 60_000);

  /** Clients in `account` (an assumed role there), in `region`, as the cell stack's resources would write. */
  const as = async (account: string, role: string, region: string) => {
    const sts = new STSClient({ region, endpoint: moto.endpoint });
    const { Credentials: c } = await sts.send(new AssumeRoleCommand({ RoleArn: `arn:aws:iam::${account}:role/${role}`, RoleSessionName: 'seed' }));
    sts.destroy();
    const config = {
      region,
      endpoint: moto.endpoint,
      credentials: { accessKeyId: c!.AccessKeyId!, secretAccessKey: c!.SecretAccessKey!, sessionToken: c!.SessionToken },
    };
    return { ssm: new SSMClient(config), cw: new CloudWatchClient(config) };
  };

  beforeAll(async () => {
    moto = await startMoto();
    // cellctl windows by the wall clock: seed and read within one minute, not across its end.
    while (Date.now() % 60_000 > 40_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - (Date.now() % 60_000) + 50));
    for (const [k, v] of Object.entries({ ...ENV, AWS_ENDPOINT_URL: moto.endpoint })) {
      saved[k] = process.env[k];
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    fleet = exampleFleet();
    const cell = fleet.cells.find((c) => c.id === 'eu-1')!;
    const { ssm, cw } = await as(cell.account, cellMetricsReaderRoleName(fleet.app, cell.id), cell.region);
    // Custom namespaces: the record names whatever metrics the cell stack published.
    const record: CellSignalsRecord = {
      schemaVersion: 2,
      signals: {
        computeCpu: {
          namespace: 'Test/ECS',
          metricName: 'CPUUtilization',
          statistic: 'Average',
          dimensions: { ClusterName: 'eu-1-cluster', ServiceName: 'eu-1-service' },
          running: {
            namespace: 'Test/ContainerInsights',
            metricName: 'RunningTaskCount',
            statistic: 'Average',
            dimensions: { ClusterName: 'eu-1-cluster', ServiceName: 'eu-1-service' },
          },
          maximum: 8,
          unit: 'tasks',
        },
        databaseCpu: { namespace: 'Test/RDS', metricName: 'CPUUtilization', statistic: 'Average', dimensions: { DBClusterIdentifier: 'eu-1-db' } },
        queueAgeSeconds: {
          namespace: 'Test/SQS',
          metricName: 'ApproximateAgeOfOldestMessage',
          statistic: 'Maximum',
          dimensions: { QueueName: 'eu-1-work' },
        },
      },
    };
    await ssm.send(new PutParameterCommand({ Name: cellSignalsParameter(fleet.app, cell.id), Value: JSON.stringify(record), Type: 'String' }));
    const put = (
      namespace: string,
      name: string,
      dimensions: Record<string, string>,
      points: [Date, number][],
      unit: 'Percent' | 'Count' = 'Percent',
    ) =>
      cw.send(
        new PutMetricDataCommand({
          Namespace: namespace,
          MetricData: points.map(([Timestamp, Value]) => ({
            MetricName: name,
            Dimensions: Object.entries(dimensions).map(([Name, V]) => ({ Name, Value: V })),
            Timestamp,
            Value,
            Unit: unit,
          })),
        }),
      );
    // Two points in one minute average; the current minute (partial) must not count.
    await put('Test/ECS', 'CPUUtilization', { ClusterName: 'eu-1-cluster', ServiceName: 'eu-1-service' }, [
      [ago(3), 40],
      [new Date(ago(3).getTime() + 20_000), 60],
      [ago(2), 30],
      [ago(1), 35],
      [new Date(ago(0).getTime() + 1000), 99],
    ]);
    // Four of the eight tasks the cell may have; no count in the last minute (that minute is missing for the compute).
    await put(
      'Test/ContainerInsights',
      'RunningTaskCount',
      { ClusterName: 'eu-1-cluster', ServiceName: 'eu-1-service' },
      [
        [ago(3), 4],
        [ago(2), 4],
      ],
      'Count',
    );
    await put('Test/RDS', 'CPUUtilization', { DBClusterIdentifier: 'eu-1-db' }, [[ago(2), 85]]);
    ssm.destroy();
    cw.destroy();
  }, 60_000);

  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await moto?.stop();
  });

  it("reads a deployed cell's signals through its role, and names a cell that has not published them", async () => {
    const result = await cellctl('capacity', '--json', '--window', '5');
    expect(result.code).toBe(0);
    const cells = JSON.parse(result.out).cells as { cell: string; status: string; statusBy: string[]; signals?: unknown; signalsError?: string }[];
    const eu1 = cells.find((c) => c.cell === 'eu-1')!;
    expect(eu1).toMatchObject({
      status: 'hot',
      statusBy: ['databaseCpu'],
      signals: {
        // 4 of 8 tasks at 50% CPU, then at 30%: a quarter of the maximum at its peak.
        computeCpu: {
          current: 15,
          peak: 25,
          missingPeriods: 3,
          maximum: 8,
          unit: 'tasks',
          peakRunning: 4,
          peakCpu: 50,
          currentRunning: 4,
          currentCpu: 30,
        },
        databaseCpu: { current: 85, peak: 85, missingPeriods: 4 },
        queueAgeSeconds: { missingPeriods: 5 },
      },
    });
    const eu2 = cells.find((c) => c.cell === 'eu-2')!;
    expect(eu2.signals).toBeUndefined();
    expect(eu2.signalsError).toBe(
      `SSM /orders/cell/eu-2/signals in eu-west-1 not found: the cell stack orders-cell-eu-2 has not published its signals; deploy it (the pipeline's cell waves)`,
    );
    expect(result.err).toContain('eu-2: its own signals were not read: SSM /orders/cell/eu-2/signals in eu-west-1 not found');
  });
});
