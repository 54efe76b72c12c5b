import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CloudWatchClient, GetMetricDataCommand, ListMetricsCommand } from '@aws-sdk/client-cloudwatch';
import { mockClient } from 'aws-sdk-client-mock';
import { cellctl } from '../support/cli';
import { compileMapping, initialMapping, MappingDocument } from '../../lib/mapping';
import { exampleFleet } from '../support/fleet';

/**
 * `cellctl capacity`, `capacity plan` and `place` without --local: the example fleet's routers'
 * metrics as CloudWatch answers them (recorded shapes, aws-sdk-client-mock), the mapping from a file.
 * eu-1 (tested at 2,000 req/s, target 1,000) peaks at 1,500: hot; its busiest tenant 700.
 */
describe('cellctl capacity against CloudWatch-shaped data', () => {
  const cw = mockClient(CloudWatchClient);
  let dir: string;
  let mappingFile: string;
  let doc: MappingDocument;
  let acme: string;
  let globex: string;
  const perMinute: Record<string, number> = { 'eu-1': 1500, 'eu-2': 200, 'us-1': 400 };

  beforeAll(() => {
    const fleet = exampleFleet();
    doc = initialMapping(fleet.cells.map((c) => ({ id: c.id, endpoint: `http://${c.id}.internal`, state: 'active' as const, canary: c.canary })), fleet.bucketCount, { now: '2026-12-01T00:00:00Z' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'capacity-aws-'));
    mappingFile = path.join(dir, 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    const compiled = compileMapping(doc);
    const on = (cell: string, prefix: string) => { for (let i = 0; ; i++) if (compiled.lookup(`${prefix}${i}`).cell === cell) return `${prefix}${i}`; };
    acme = on('eu-1', 'acme-');
    globex = on('eu-1', 'globex-');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    cw.reset();
    cw.on(ListMetricsCommand).callsFake((input) => ({
      Metrics: input.Dimensions[0].Value === 'eu-1'
        ? [acme, globex].map((t) => ({ Namespace: 'CellRouter', MetricName: 'TenantRequestsPerSecond', Dimensions: [{ Name: 'Cell', Value: 'eu-1' }, { Name: 'Tenant', Value: t }] }))
        : [],
    }));
    // The eu-west-1 routers saw the traffic (the first region asked); us-east-1's saw none.
    cw.on(GetMetricDataCommand).callsFake(async (input, getClient) => {
      const region = await getClient().config.region();
      const start = new Date(input.StartTime).getTime();
      const minutes = Array.from({ length: 10 }, (_, m) => new Date(start + m * 60_000));
      return {
        MetricDataResults: input.MetricDataQueries.map((q: { Id: string; MetricStat: { Metric: { MetricName: string; Dimensions: { Name: string; Value: string }[] } } }) => {
          const dims = Object.fromEntries(q.MetricStat.Metric.Dimensions.map((d) => [d.Name, d.Value]));
          const value = region !== 'eu-west-1' ? undefined
            : q.MetricStat.Metric.MetricName === 'Requests' && dims.RouterGroup === 'main' && dims.Cell in perMinute ? perMinute[dims.Cell] * 60
            : q.MetricStat.Metric.MetricName === 'ActiveTenants' ? (dims.Cell === 'eu-1' ? 40 : 5)
            : q.MetricStat.Metric.MetricName === 'TenantRequestsPerSecond' ? (dims.Tenant === acme ? 700 : 300)
            : undefined;
          return { Id: q.Id, StatusCode: 'Complete', Timestamps: value === undefined ? [] : minutes, Values: value === undefined ? [] : minutes.map(() => value) };
        }),
      };
    });
  });

  it('judges every cell of the fleet from the routers\' metrics', async () => {
    const result = await cellctl('capacity', '--json', '--window', '10');
    expect([result.code, result.err]).toEqual([0, '']);
    const fleet = JSON.parse(result.out);
    expect(fleet.cells.map((c: { cell: string }) => c.cell)).toEqual(exampleFleet().cells.map((c) => c.id));
    expect(fleet.cells.find((c: { cell: string }) => c.cell === 'eu-1')).toMatchObject({
      status: 'hot', peakRps: 1500, currentRps: 1500, testedRps: 2000, targetRps: 1000, activeTenants: 40, maxTenants: 500,
      largestTenant: { tenant: acme, peakRps: 700 }, missingPeriods: 0,
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
    expect(placed.out).toBe('eu-2: best fit under its target, 950 of 1000 req/s after (48% of tested)\n'
      + 'pin it there (the move copies its rows, none for a new tenant, then pins it):\n'
      + `  cellctl mapping pin initech eu-2 --mapping ${mappingFile} --plan place-initech.json && cellctl move plan place-initech.json\n`);
    const tooBig = await cellctl('place', 'megacorp', '--expected-rps', '1200', '--window', '10');
    expect(tooBig.out).toMatch(/^megacorp at 1200 req\/s is above the target of every cell that may take it \(1000 req\/s\)/);
  });
});
