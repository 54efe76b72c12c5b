import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { pidRunning } from '../../../lib/domain/files';
import {
  injectFault,
  LocalFleet,
  markdownTable,
  renderSvg,
  request,
  ScenarioResult,
  startFloodProcess,
  startLocalFleet,
  steadyLoad,
  summarize,
  tenantsPerCell,
} from '../../../lib/operations/local-fleet';
import { childPids, makeTempDir } from '../../../lib/operations/local-fleet/postgres';
import { initialMapping, lookup, MappingDocument, parseMapping } from '../../../lib/domain/mapping';
import { until } from '../../support/cells';

describe('measurement', () => {
  const doc = initialMapping(
    ['a', 'b', 'c', 'd'].map((id) => ({ id, state: 'active' as const, canary: false, endpoint: `http://${id}` })),
    16384,
    { now: '2026-01-01T00:00:00Z' },
  );

  test('tenantsPerCell gives every cell the same number of tenants, each routed there by bucket', () => {
    const byCell = tenantsPerCell(doc, 7);
    expect([...byCell.keys()]).toEqual(['a', 'b', 'c', 'd']);
    for (const [cell, tenants] of byCell) {
      expect(tenants).toHaveLength(7);
      for (const t of tenants) expect(lookup(doc, t).cell).toBe(cell);
    }
  });

  test("summarize: shares over the tenants the window reached, the others' errors and p99 apart", () => {
    const samples = [
      { tenant: 'a1', ok: false, status: 503, ms: 1 },
      { tenant: 'a1', ok: true, status: 200, ms: 50 },
      { tenant: 'b1', ok: true, status: 200, ms: 10 },
      { tenant: 'b2', ok: true, status: 200, ms: 20 },
    ];
    // a2 was never reached: three tenants seen, one of them in the faulty cell.
    const r = summarize('workload-killed', 2, 'a', 0.5, new Set(['a1', 'a2']), samples, 1);
    expect(r).toMatchObject({
      tenants: 3,
      expectedShare: 1 / 3,
      affectedShare: 1 / 3,
      othersWithErrors: 0,
      othersErrorRate: 0,
      othersP99Ms: 20,
      cellP99Ms: 50,
      requests: 4,
    });
    const worse = summarize('tenant-flood', 2, 'a', 0.5, new Set(['a1', 'a2']), [...samples, { tenant: 'b2', ok: false, status: 0, ms: 5000 }], 1);
    expect(worse).toMatchObject({ affectedShare: 2 / 3, othersWithErrors: 1, othersErrorRate: 1 / 3 });
  });
});

describe('one fault on a real local fleet', () => {
  let dir: string;
  let fleet: LocalFleet;

  beforeAll(async () => {
    dir = makeTempDir('cells-blast-');
    fleet = await startLocalFleet({ cells: 2, port: 0, stateDir: path.join(dir, 'state'), testFaults: true });
  });

  afterAll(async () => {
    await fleet?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("a killed workload affects exactly its cell's tenants; the others see no error", async () => {
    const parsed = parseMapping(fs.readFileSync(fleet.mappingFile, 'utf8'));
    if (!parsed.ok) throw new Error('bad mapping');
    const byCell = tenantsPerCell(parsed.document, 6);
    const tenants = [...byCell.values()].flat();
    const victim = fleet.cell('cell-2');
    const cellTenants = new Set(byCell.get('cell-2'));
    const end = await injectFault('workload-killed', victim, { routerUrl: fleet.routerUrl, header: 'x-tenant-id', tenantInCell: '' });
    const samples = await steadyLoad({ routerUrl: fleet.routerUrl, header: 'x-tenant-id', tenants, concurrency: 4, seconds: 1.5 });
    await end();
    const result = summarize('workload-killed', 2, 'cell-2', 0.5, cellTenants, samples, 1.5);
    const failed = new Set(samples.filter((s) => !s.ok).map((s) => s.tenant));
    expect([...failed].every((t) => cellTenants.has(t))).toBe(true);
    expect(result.othersWithErrors).toBe(0);
    expect(result.affectedShare).toBe(result.expectedShare);
  });

  const mapping = (): MappingDocument => {
    const parsed = parseMapping(fs.readFileSync(fleet.mappingFile, 'utf8'));
    if (!parsed.ok) throw new Error('bad mapping');
    return parsed.document;
  };
  const tenantOf = (cell: string) => {
    const doc = mapping();
    for (let n = 0; ; n++) if (lookup(doc, `flood-${n}`).cell === cell) return `flood-${n}`;
  };

  test('the flood runs in its own process at the priority asked, reaches its cell, and reports what it sent when stopped', async () => {
    const tenant = tenantOf('cell-2');
    // The previous test restarted cell-2's workload: the router's health check must see it up again.
    await until(
      'the router to serve cell-2 again',
      async () => (await request(fleet.routerUrl, 'x-tenant-id', tenant, 'GET', '/v1/items?limit=1')).status === 200,
      60_000,
    );
    const flood = await startFloodProcess({ routerUrl: fleet.routerUrl, header: 'x-tenant-id', tenant, clients: 8, nice: 19, timeoutMs: 60_000 });
    expect(flood.pid).not.toBe(process.pid);
    expect(os.getPriority(flood.pid)).toBe(19);
    const summary = await flood.stop();
    // Every client finishes the request it has in flight before the process reports and exits.
    expect(summary.clients).toBe(8);
    expect(summary.requests).toBeGreaterThanOrEqual(8);
    expect(Object.values(summary.statuses).reduce((a, b) => a + b, 0)).toBe(summary.requests);
    expect(summary).toMatchObject({ statuses: { 200: expect.any(Number) } });
    await until('the flood process to exit', async () => !pidRunning(flood.pid), 60_000);
  });

  test("setPriority lowers a cell's workload and database processes, and keeps it after each restarts", async () => {
    const cell = fleet.cell('cell-2');
    const other = fleet.cell('cell-1');
    const treeNice = (pid: number | undefined) => {
      if (pid === undefined) throw new Error('no process');
      return [pid, ...childPids(pid)].map((p) => os.getPriority(p));
    };
    cell.setPriority(19);
    expect(new Set(treeNice(cell.workloadPid))).toEqual(new Set([19]));
    // The postmaster and every process it runs (backends of the workload's pool, background workers).
    expect(childPids(cell.database.pid!).length).toBeGreaterThan(0);
    expect(new Set(treeNice(cell.database.pid))).toEqual(new Set([19]));
    // Another cell is untouched.
    expect(os.getPriority(other.workloadPid!)).toBe(os.getPriority(process.pid));
    expect(os.getPriority(other.database.pid!)).toBe(os.getPriority(process.pid));

    // A crashed workload comes back (the supervisor) at the same priority; so does a restarted database.
    const crashed = cell.workloadPid;
    await cell.killWorkload({ restart: true });
    await until('the supervisor to restart the workload', async () => cell.workloadPid !== undefined && cell.workloadPid !== crashed, 60_000);
    expect(os.getPriority(cell.workloadPid!)).toBe(19);
    await cell.startWorkload();
    const end = await injectFault('database-stopped', cell, { routerUrl: fleet.routerUrl, header: 'x-tenant-id', tenantInCell: '' });
    await end();
    expect(new Set(treeNice(cell.database.pid))).toEqual(new Set([19]));
    expect(os.getPriority(cell.workloadPid!)).toBe(19);
  });
});

describe('the chart', () => {
  const results: ScenarioResult[] = [4, 8].flatMap((cells) =>
    (['none', 'workload-killed', 'database-stopped', 'database-slow', 'poison-request', 'tenant-flood'] as const).map((fault) => ({
      fault,
      cells,
      cell: 'cell-2',
      keyspaceShare: 1 / cells,
      tenants: cells * 10,
      expectedShare: 1 / cells,
      affectedShare: fault === 'none' || fault === 'database-slow' ? 0 : 1 / cells,
      othersWithErrors: 0,
      othersErrorRate: 0,
      othersP99Ms: 40,
      cellP99Ms: 60,
      requests: 1000,
      seconds: 8,
    })),
  );
  const baseline = new Map([
    [4, 38],
    [8, 41],
  ]);

  test('the table has a row per fleet size and fault', () => {
    const table = markdownTable(results, baseline).split('\n');
    expect(table).toHaveLength(2 + results.length);
    expect(table[2]).toContain('| 4 | no fault (baseline) | 25.0% | 25.0% of 40 | 0.0% | 0 (0.0%) | 40.0 ms | 38.0 ms | - |');
    expect(table[3]).toContain('| 4 | workload process killed | 25.0% | 25.0% of 40 | 25.0% |');
  });

  test('renders in a browser: chromium draws the bars (a screenshot is far from blank)', () => {
    const dir = makeTempDir('cells-chart-');
    try {
      const svg = path.join(dir, 'chart.svg');
      const blank = path.join(dir, 'blank.svg');
      fs.writeFileSync(svg, renderSvg(results, baseline));
      fs.writeFileSync(
        blank,
        '<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="470"><rect width="1000" height="470" fill="white"/></svg>',
      );
      const shot = (file: string, png: string) => {
        const profile = fs.mkdtempSync(path.join(dir, 'profile-'));
        const r = spawnSync(
          'chromium',
          [
            '--headless',
            '--no-sandbox',
            '--disable-gpu',
            '--disable-quic',
            '--no-first-run',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
            `--user-data-dir=${profile}`,
            '--window-size=1000,470',
            `--screenshot=${png}`,
            `file://${file}`,
          ],
          { encoding: 'utf8', timeout: 60_000 },
        );
        if (!fs.existsSync(png)) throw new Error(`chromium wrote no screenshot: ${r.stderr}`);
        return fs.statSync(png).size;
      };
      const chart = shot(svg, path.join(dir, 'chart.png'));
      const empty = shot(blank, path.join(dir, 'blank.png'));
      expect(chart).toBeGreaterThan(empty * 5);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
