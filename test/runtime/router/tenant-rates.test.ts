import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { initialMapping, lookup, MappingDocument, pinKey } from '../../../lib/domain/mapping';
import {
  cellLoadsOf,
  LocalRouter,
  mergeTenantRates,
  overWindow,
  parseKeyTable,
  readTenantRates,
  RuntimeApi,
  startLocalRouter,
  TENANT_RATE_PERIOD_SECONDS,
} from '../../../lib/runtime/router';
import { FakeCell, onFreePorts, routed, startCell } from '../../support/cells';

const NOW = { now: '2026-12-01T00:00:00.000Z' };

describe('parseKeyTable', () => {
  it('reads tenants with a bucket and a rate, and skips keys that failed the check', () => {
    const answer = [
      '# table: keys, type: string, size:128000, used:3',
      '0x55d0c8e0a0d8: key=tenant-1 use=0 exp=1799993 gpt0=5 http_req_rate(10000)=30',
      '0x55d0c8e0a1d8: key=bad%20key use=0 exp=1799993 gpt0=0 http_req_rate(10000)=7',
      '0x55d0c8e0a2d8: key=tenant-2 use=1 exp=1799993 shard=0 gpt0=9 http_req_rate(10000)=5',
      '',
    ].join('\n');
    expect(parseKeyTable(answer, 10)).toEqual([
      { tenant: 'tenant-1', requests: 30, rps: 3 },
      { tenant: 'tenant-2', requests: 5, rps: 0.5 },
    ]);
  });

  it('sums routers and takes the peak over samples', () => {
    const a = [{ tenant: 't1', requests: 10, rps: 1 }];
    const b = [
      { tenant: 't1', requests: 20, rps: 2 },
      { tenant: 't2', requests: 5, rps: 0.5 },
    ];
    expect(mergeTenantRates([a, b])).toEqual([
      { tenant: 't1', requests: 30, rps: 3 },
      { tenant: 't2', requests: 5, rps: 0.5 },
    ]);
    const mapping = initialMapping([{ id: 'c1', endpoint: 'http://c1', state: 'active' }], 1024, NOW);
    const window = overWindow([cellLoadsOf(b, mapping), cellLoadsOf(a, mapping)]);
    expect(window).toEqual([{ cell: 'c1', currentRps: 1, peakRps: 2.5, activeTenants: 1, topTenants: [{ tenant: 't1', rps: 1, peakRps: 2 }] }]);
  });
});

describe('tenant rates from a real router', () => {
  let cells: FakeCell[];
  let router: LocalRouter;
  let port: number;
  let doc: MappingDocument;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

  beforeAll(async () => {
    cells = await Promise.all(['cell-a', 'cell-b'].map((name) => startCell(name)));
    doc = pinKey(
      initialMapping(
        cells.map((c) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const })),
        16384,
        NOW,
      ),
      'pinned-1',
      'cell-b',
      NOW,
    );
    const mappingFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-')), 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    router = await onFreePorts(1, async (ports) => {
      port = ports[0];
      return startLocalRouter({
        mappingFile,
        port,
        debugHeaders: true,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: () => undefined,
        pollMs: 200,
      });
    });
  });
  afterAll(async () => {
    agent.destroy();
    await router.stop();
    await Promise.all(cells.map((c) => c.close()));
  });

  it("counts each tenant's requests in its keys-table entry, per cell, without bad keys", async () => {
    const sends: [string, number][] = [
      ['heavy', 40],
      ['light-1', 4],
      ['light-2', 2],
      ['pinned-1', 6],
      ['bad key', 5],
    ];
    for (const [tenant, n] of sends) for (let i = 0; i < n; i++) await routed(agent, port, tenant);
    const rates = await readTenantRates(new RuntimeApi(path.join(router.stateDir, 'admin.sock')));
    const requests = Object.fromEntries(rates.map((r) => [r.tenant, r.requests]));
    expect(requests).toEqual({ heavy: 40, 'light-1': 4, 'light-2': 2, 'pinned-1': 6 });
    expect(rates.find((r) => r.tenant === 'heavy')!.rps).toBe(40 / TENANT_RATE_PERIOD_SECONDS);

    const loads = cellLoadsOf(rates, doc, 2);
    const expected = (cell: string) => rates.filter((r) => lookup(doc, r.tenant).cell === cell);
    for (const load of loads) {
      expect(load.activeTenants).toBe(expected(load.cell).length);
      expect(load.currentRps).toBeCloseTo(expected(load.cell).reduce((n, r) => n + r.rps, 0));
      expect(load.topTenants.length).toBe(Math.min(2, load.activeTenants));
    }
    expect(loads.find((l) => l.cell === 'cell-b')!.topTenants.map((t) => t.tenant)).toContain('pinned-1');

    // The agent's EMF lines: per cell its active tenants, per top tenant its rate.
    const lines = (await router.agent.tenantMetrics(1)).map((l) => JSON.parse(l));
    const active = lines.filter((l) => 'ActiveTenants' in l);
    expect(active.map((l) => [l.Cell, l.ActiveTenants]).sort()).toEqual(loads.map((l) => [l.cell, l.activeTenants]).sort());
    expect(active[0]._aws.CloudWatchMetrics[0]).toEqual({
      Namespace: 'CellRouter',
      Dimensions: [['Cell']],
      Metrics: [{ Name: 'ActiveTenants', Unit: 'Count' }],
    });
    const heavy = lines.find((l) => l.Tenant === 'heavy');
    expect(heavy).toMatchObject({ Cell: lookup(doc, 'heavy').cell, TenantRequestsPerSecond: 40 / TENANT_RATE_PERIOD_SECONDS });
    expect(heavy._aws.CloudWatchMetrics[0].Dimensions).toEqual([['Cell', 'Tenant']]);
    expect(lines.filter((l) => 'Tenant' in l)).toHaveLength(loads.filter((l) => l.activeTenants > 0).length);
  });
});
