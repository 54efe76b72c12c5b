import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CloudWatchClient, GetMetricDataCommand, ListMetricsCommand } from '@aws-sdk/client-cloudwatch';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { mockClient } from 'aws-sdk-client-mock';
import { Fleet } from '../../lib/domain/fleet';
import { cellMetricsReaderRoleName, cellSignalsParameter } from '../../lib/domain/names';
import { CellSignalsRecord, STATUS_COLOURS } from '../../lib/domain/capacity';
import { countColour, evaluateInPage, screenshot } from '../support/browser';
import { cellctl } from '../support/cli';
import { compileMapping, initialMapping, MappingDocument } from '../../lib/domain/mapping';
import { exampleFleet } from '../support/fleet';

/** The record a cell stack publishes (lib/constructs/cell/metrics-access.ts), with names as CloudFormation makes them. */
const recordOf = (cell: string): CellSignalsRecord => ({
  schemaVersion: 2,
  signals: {
    computeCpu: {
      namespace: 'AWS/ECS',
      metricName: 'CPUUtilization',
      statistic: 'Average',
      dimensions: { ClusterName: `${cell}-Cluster`, ServiceName: `${cell}-Service` },
      running: {
        namespace: 'ECS/ContainerInsights',
        metricName: 'RunningTaskCount',
        statistic: 'Average',
        dimensions: { ClusterName: `${cell}-Cluster`, ServiceName: `${cell}-Service` },
      },
      maximum: 10,
      unit: 'tasks',
    },
    databaseCpu: { namespace: 'AWS/RDS', metricName: 'CPUUtilization', statistic: 'Average', dimensions: { DBClusterIdentifier: `${cell}-db` } },
    databaseConnections: {
      namespace: 'AWS/RDS',
      metricName: 'DatabaseConnections',
      statistic: 'Average',
      dimensions: { DBClusterIdentifier: `${cell}-db` },
    },
    queueAgeSeconds: {
      namespace: 'AWS/SQS',
      metricName: 'ApproximateAgeOfOldestMessage',
      statistic: 'Maximum',
      dimensions: { QueueName: `${cell}-Work` },
    },
  },
});

/** The access key STS gives the reader role of `account`: a cell's calls are signed with it. */
const keyOf = (account: string) => `ASIA${account}`;

/**
 * `cellctl capacity`, `capacity plan` and `place` without --local: the example fleet's routers'
 * metrics as CloudWatch answers them (recorded shapes, aws-sdk-client-mock), the mapping from a file,
 * and each cell's own signals read in its account through its metrics reader role (STS AssumeRole,
 * SSM GetParameter, GetMetricData signed with the assumed credentials, in the cell's region).
 * eu-1 (tested at 2,000 req/s, target 1,000) peaks at 1,500: hot; its busiest tenant 700. eu-2's
 * rate is under its target, its database CPU peaks at 80%: hot by its database. Every cell's tasks
 * run at 60% CPU, their scaling target: 2 of 10 tasks use 12% of what the cell may have, which is
 * not hot; us-1 runs 9 of 10 at 70% (63%): hot by its compute. us-2's role cannot be assumed (not
 * deployed yet): its signals are not read, the rest is.
 */
describe('cellctl capacity against CloudWatch-shaped data', () => {
  const cw = mockClient(CloudWatchClient);
  const sts = mockClient(STSClient);
  const ssm = mockClient(SSMClient);
  let fleet: Fleet;
  /** Per cell: the account and region its signal calls were signed for. */
  const signed: { cell: string; service: string; key: string; region: string }[] = [];
  /** Cells whose reader role cannot be assumed (not deployed yet). */
  const undeployed = new Set<string>();
  /** Cells whose database CPU peaks at 80%. */
  const hotDatabase = new Set<string>();
  /** Cells running 9 of their 10 tasks at 70% CPU (the others 2 at 60%). */
  const hotCompute = new Set<string>();
  let dir: string;
  let mappingFile: string;
  let doc: MappingDocument;
  let acme: string;
  let globex: string;
  const perMinute: Record<string, number> = { 'eu-1': 1500, 'eu-2': 200, 'us-1': 400 };

  beforeAll(() => {
    fleet = exampleFleet();
    doc = initialMapping(
      fleet.cells.map((c) => ({ id: c.id, endpoint: `http://${c.id}.internal`, state: 'active' as const, canary: c.canary })),
      fleet.bucketCount,
      { now: '2026-12-01T00:00:00Z' },
    );
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'capacity-aws-'));
    mappingFile = path.join(dir, 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    const compiled = compileMapping(doc);
    const on = (cell: string, prefix: string) => {
      for (let i = 0; ; i++) if (compiled.lookup(`${prefix}${i}`).cell === cell) return `${prefix}${i}`;
    };
    acme = on('eu-1', 'acme-');
    globex = on('eu-1', 'globex-');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    cw.reset();
    sts.reset();
    ssm.reset();
    signed.length = 0;
    undeployed.clear();
    hotDatabase.clear();
    hotCompute.clear();
    sts.on(AssumeRoleCommand).callsFake((input) => {
      const cell = fleet.cells.find((c) => input.RoleArn === `arn:aws:iam::${c.account}:role/${cellMetricsReaderRoleName(fleet.app, c.id)}`);
      if (!cell || undeployed.has(cell.id))
        throw Object.assign(new Error(`User is not authorized to perform: sts:AssumeRole on resource: ${input.RoleArn}`), { name: 'AccessDenied' });
      return {
        Credentials: { AccessKeyId: keyOf(cell.account), SecretAccessKey: 's', SessionToken: 't', Expiration: new Date(Date.now() + 3600_000) },
      };
    });
    ssm.on(GetParameterCommand).callsFake(async (input, getClient) => {
      const client = getClient();
      const key = (await client.config.credentials()).accessKeyId;
      const cell = fleet.cells.find((c) => input.Name === cellSignalsParameter(fleet.app, c.id))!;
      signed.push({ cell: cell.id, service: 'ssm', key, region: await client.config.region() });
      return { Parameter: { Name: input.Name, Value: JSON.stringify(recordOf(cell.id)) } };
    });
    cw.on(ListMetricsCommand).callsFake((input) => ({
      Metrics:
        input.Dimensions[0].Value === 'eu-1'
          ? [acme, globex].map((t) => ({
              Namespace: 'CellRouter',
              MetricName: 'TenantRequestsPerSecond',
              Dimensions: [
                { Name: 'Cell', Value: 'eu-1' },
                { Name: 'Tenant', Value: t },
              ],
            }))
          : [],
    }));
    // The eu-west-1 routers saw the traffic (the first region asked); us-east-1's saw none.
    cw.on(GetMetricDataCommand).callsFake(async (input, getClient) => {
      // The mock's getClient answers the client of the latest call: take it before any await.
      const client = getClient();
      const region = await client.config.region();
      const start = new Date(input.StartTime).getTime();
      const minutes = Array.from({ length: 10 }, (_, m) => new Date(start + m * 60_000));
      const first = input.MetricDataQueries[0].MetricStat.Metric;
      if (first.Namespace !== 'CellRouter') {
        // A cell's own signals: signed with its reader role's credentials.
        const cell = first.Dimensions[0].Value.replace(/-Cluster$/, '');
        signed.push({ cell, service: 'cloudwatch', key: (await client.config.credentials()).accessKeyId, region });
        const values: Record<string, number[] | undefined> = {
          computecpu: minutes.map(() => (hotCompute.has(cell) ? 70 : 60)),
          computerunning: minutes.map(() => (hotCompute.has(cell) ? 9 : 2)),
          databasecpu: hotDatabase.has(cell) ? minutes.map((_, m) => (m === 4 ? 80 : 35)) : minutes.map(() => 30),
          databaseconnections: minutes.map(() => 42),
          queueageseconds: undefined, // an idle queue reports nothing
        };
        return {
          MetricDataResults: input.MetricDataQueries.map((q: { Id: string }) => ({
            Id: q.Id,
            StatusCode: 'Complete',
            Timestamps: values[q.Id] ? minutes : [],
            Values: values[q.Id] ?? [],
          })),
        };
      }
      return {
        MetricDataResults: input.MetricDataQueries.map(
          (q: { Id: string; MetricStat: { Metric: { MetricName: string; Dimensions: { Name: string; Value: string }[] } } }) => {
            const dims = Object.fromEntries(q.MetricStat.Metric.Dimensions.map((d) => [d.Name, d.Value]));
            const value =
              region !== 'eu-west-1'
                ? undefined
                : q.MetricStat.Metric.MetricName === 'Requests' && dims.RouterGroup === 'main' && dims.Cell in perMinute
                  ? perMinute[dims.Cell] * 60
                  : q.MetricStat.Metric.MetricName === 'ActiveTenants'
                    ? dims.Cell === 'eu-1'
                      ? 40
                      : 5
                    : q.MetricStat.Metric.MetricName === 'TenantRequestsPerSecond'
                      ? dims.Tenant === acme
                        ? 700
                        : 300
                      : undefined;
            return {
              Id: q.Id,
              StatusCode: 'Complete',
              Timestamps: value === undefined ? [] : minutes,
              Values: value === undefined ? [] : minutes.map(() => value),
            };
          },
        ),
      };
    });
  });

  it("judges every cell of the fleet from the routers' metrics", async () => {
    const result = await cellctl('capacity', '--json', '--window', '10');
    expect([result.code, result.err]).toEqual([0, '']);
    const fleet = JSON.parse(result.out);
    expect(fleet.cells.map((c: { cell: string }) => c.cell)).toEqual(exampleFleet().cells.map((c) => c.id));
    expect(fleet.cells.find((c: { cell: string }) => c.cell === 'eu-1')).toMatchObject({
      status: 'hot',
      peakRps: 1500,
      currentRps: 1500,
      testedRps: 2000,
      targetRps: 1000,
      activeTenants: 40,
      maxTenants: 500,
      largestTenant: { tenant: acme, peakRps: 700 },
      missingPeriods: 0,
    });
    expect(fleet.cells.find((c: { cell: string }) => c.cell === 'us-2')).toMatchObject({ status: 'ok', peakRps: 0, missingPeriods: 10 });
    expect(fleet.largeTenants).toEqual([{ tenant: acme, cell: 'eu-1', peakRps: 700, shareOfTarget: 0.7 }]);
    const text = await cellctl('capacity', '--window', '10');
    expect(text.out).toMatch(/eu-1 is hot: `cellctl capacity plan --out FILE` moves tenants away/);
    expect(text.out).toMatch(/us-2 .* ok \(10 periods without data\)/);
  });

  it('plans the move as a tenant move (the routers list only the busiest tenants) and writes the page', async () => {
    const out = path.join(dir, 'plan.json');
    const planned = await cellctl('capacity', 'plan', '--out', out, '--window', '10', '--mapping', mappingFile);
    expect([planned.code, planned.err]).toEqual([0, '']);
    const plan = JSON.parse(fs.readFileSync(out, 'utf8'));
    // 500 over: acme alone covers it; it goes to the best-fit regular cell of eu-west-1 with room (never the canary).
    expect(plan.moves).toEqual([{ tenant: acme, from: 'eu-1', to: 'eu-2' }]);
    expect(plan.mappingVersion).toBe(doc.version);
    const page = path.join(dir, 'capacity.html');
    expect((await cellctl('capacity', '--window', '10', '--mapping', mappingFile, '--html', page)).code).toBe(0);
    expect(fs.readFileSync(page, 'utf8')).toMatch(new RegExp(`${acme}</td><td>tenant \\(pin\\)</td><td>eu-1</td><td>eu-2</td>`));

    const missing = await cellctl('capacity', 'plan', '--out', out, '--window', '10');
    expect([missing.code, missing.err]).toEqual([2, 'error: capacity plan needs the mapping in force: pass --mapping FILE (or --local)\n']);
  });

  it('places a large tenant by best fit and names the pin', async () => {
    const placed = await cellctl('place', 'initech', '--expected-rps', '750', '--region', 'eu-west-1', '--mapping', mappingFile, '--window', '10');
    expect([placed.code, placed.err]).toEqual([0, '']);
    expect(placed.out).toBe(
      'eu-2: best fit under its target, 950 of 1000 req/s after (48% of tested)\n' +
        'pin it there (the move copies its rows, none for a new tenant, then pins it):\n' +
        `  cellctl mapping pin initech eu-2 --mapping ${mappingFile} --plan place-initech.json && cellctl move plan place-initech.json\n`,
    );
    const tooBig = await cellctl('place', 'megacorp', '--expected-rps', '1200', '--window', '10');
    expect(tooBig.out).toMatch(/^megacorp at 1200 req\/s is above the target of every cell that may take it \(1000 req\/s\)/);
    // --tier: only that tier's cells; the example fleet's are all the default tier's.
    const tier = await cellctl('place', 'initech', '--expected-rps', '750', '--tier', 'gold', '--window', '10');
    expect([tier.code, tier.err]).toEqual([
      2,
      "error: no cell in the fleet's tier `gold` (tiers: general); leave out --region/--in-shape or name a tier, region and shape the fleet has together\n",
    ]);
  });

  it("reads each cell's own signals in its account and region through its metrics reader role, and judges a cell hot by its database CPU", async () => {
    undeployed.add('us-2');
    hotDatabase.add('eu-2');
    hotCompute.add('us-1');
    const result = await cellctl('capacity', '--json', '--window', '10');
    expect(result.code).toBe(0);
    // The unreadable cell is named on stderr, once, with the role and the reason.
    expect(result.err).toBe(
      `us-2: its own signals were not read: cannot assume arn:aws:iam::${fleet.cells.find((c) => c.id === 'us-2')!.account}:role/orders-us-2-metrics-reader (AccessDenied: User is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::${fleet.cells.find((c) => c.id === 'us-2')!.account}:role/orders-us-2-metrics-reader)\n`,
    );
    const assumed = sts
      .commandCalls(AssumeRoleCommand)
      .map((c) => c.args[0].input.RoleArn)
      .sort();
    expect(assumed).toEqual(fleet.cells.map((c) => `arn:aws:iam::${c.account}:role/orders-${c.id}-metrics-reader`).sort());
    for (const cell of fleet.cells.filter((c) => c.id !== 'us-2')) {
      expect(
        signed
          .filter((s) => s.cell === cell.id)
          .map((s) => [s.service, s.key, s.region])
          .sort(),
      ).toEqual([
        ['cloudwatch', keyOf(cell.account), cell.region],
        ['ssm', keyOf(cell.account), cell.region],
      ]);
    }
    const judged = JSON.parse(result.out);
    const cell = (id: string) => judged.cells.find((c: { cell: string }) => c.cell === id);
    // Ten whole minutes: 2 of 10 tasks at 60% CPU (the scaling target: not hot), database CPU 80 at the fifth; no queue data at all.
    expect(cell('eu-2')).toMatchObject({
      status: 'hot',
      statusBy: ['databaseCpu'],
      utilisation: 0.1,
      signals: {
        computeCpu: { current: 12, peak: 12, missingPeriods: 0, maximum: 10, unit: 'tasks', peakRunning: 2, peakCpu: 60 },
        databaseCpu: { current: 35, peak: 80, missingPeriods: 0 },
        databaseConnections: { current: 42, peak: 42, missingPeriods: 0 },
        queueAgeSeconds: { missingPeriods: 10 },
      },
    });
    expect(cell('eu-1')).toMatchObject({ status: 'hot', statusBy: ['rate'] });
    expect(cell('us-1')).toMatchObject({ status: 'hot', statusBy: ['computeCpu'], signals: { computeCpu: { peakRunning: 9, peakCpu: 70 } } });
    expect(cell('us-1').signals.computeCpu.peak).toBeCloseTo(63);
    expect(cell('us-2')).toMatchObject({
      status: 'ok',
      signalsError: expect.stringMatching(/^cannot assume .*orders-us-2-metrics-reader \(AccessDenied/),
    });
    expect(cell('us-2').signals).toBeUndefined();

    undeployed.add('us-2');
    const text = await cellctl('capacity', '--window', '10');
    expect(text.out).toMatch(/\beu-2 .* 12% of max \(2 of 10 tasks at 60% CPU\) +80% +42 +missing +hot \(database CPU 80%\)/);
    expect(text.out).toMatch(
      /\bus-1 .* 63% of max \(9 of 10 tasks at 70% CPU\) +30% +42 +missing +hot \(compute used 63% of max \(9 of 10 tasks at 70% CPU\)\)/,
    );
    expect(text.out).toContain('us-1 is hot by compute used (above 50%) while its rate is under its target');
    expect(text.out).toMatch(/\bus-2 .* unread +unread +unread +unread +ok/);
    expect(text.out).toContain('eu-2 is hot by database CPU (above 50%) while its rate is under its target');
    expect(text.out).toContain('us-2: its own signals were not read: cannot assume');
  });

  it('never plans a move or places a tenant onto a cell hot by its CPU', async () => {
    // 300 req/s in eu-west-1: only eu-2 has the room under its rate target (eu-3 is small: 250), so
    // with its database hot no cell takes it.
    const place = () =>
      cellctl('place', 'initech', '--expected-rps', '300', '--region', 'eu-west-1', '--mapping', mappingFile, '--window', '10', '--json');
    expect(JSON.parse((await place()).out)).toMatchObject({ kind: 'fits', cell: 'eu-2' });
    hotDatabase.add('eu-2');
    expect(JSON.parse((await place()).out)).toMatchObject({ kind: 'no-room' });
    // Nor does a plan move eu-1's excess there: it goes nowhere, and a cell is to be added.
    const out = path.join(dir, 'hot-plan.json');
    expect((await cellctl('capacity', 'plan', '--out', out, '--window', '10', '--mapping', mappingFile)).code).toBe(0);
    const plan = JSON.parse(fs.readFileSync(out, 'utf8'));
    expect(plan.moves).toEqual([]);
    expect(plan.capacity.cellsToAdd).toEqual([{ region: 'eu-west-1', shape: 'standard', count: 1 }]);
  });

  it("writes a page that shows each cell's signals, missing ones as missing, and the signal that made a cell hot (checked in chromium)", async () => {
    undeployed.add('us-2');
    hotDatabase.add('eu-2');
    hotCompute.add('us-1');
    const page = path.join(dir, 'signals.html');
    expect((await cellctl('capacity', '--window', '10', '--mapping', mappingFile, '--html', page)).code).toBe(0);
    const html = fs.readFileSync(page, 'utf8');
    expect(html).toContain('<th>cell signals (peak)</th>');
    const row = (id: string) => html.split('<tr>').find((r) => r.includes(`<th scope="row">${id}<`))!;
    expect(row('eu-2')).toContain('<strong>database CPU 80%</strong>');
    expect(row('eu-2')).toContain('<div class="sub">by database CPU</div>');
    expect(row('eu-2')).toContain('oldest work message <span class="missing">missing</span>');
    expect(row('eu-2')).toContain('<td class="signals">compute used 12% of max (2 of 10 tasks at 60% CPU)<br><strong>database CPU 80%</strong>');
    expect(row('us-1')).toContain('<strong>compute used 63% of max (9 of 10 tasks at 70% CPU)</strong>');
    expect(row('us-1')).toContain('<div class="sub">by compute used</div>');
    expect(row('us-2')).toContain('<span class="missing">not read</span>');
    const shot = path.join(dir, 'signals.png');
    const picture = screenshot(page, shot, 1400, 1100);
    if (process.env.KEEP_CAPACITY_SCREENSHOT) fs.copyFileSync(shot, process.env.KEEP_CAPACITY_SCREENSHOT.replace(/\.png$/, '-aws.png'));
    // Three hot badges and bars (eu-1 by rate, eu-2 by its database, us-1 by its compute) in the status colour.
    expect(countColour(picture, STATUS_COLOURS.hot)).toBeGreaterThan(3 * 200);
    // The extra column still fits a 1,400 px window: nothing scrolls sideways.
    expect(evaluateInPage<number>(page, 'document.documentElement.scrollWidth', 1400, 1100)).toBeLessThanOrEqual(1400);
  });
});
