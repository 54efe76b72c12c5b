import * as fs from 'fs';
import * as path from 'path';
import { LocalFleet, readFleetFile, startLocalFleet } from '../../../lib/operations/local-fleet';
import { runCli } from '../../../lib/cli';
import { lookup, parseMapping } from '../../../lib/domain/mapping';
import { until } from '../../support/cells';
import { cellctl } from '../../support/cli';
import { makeTempDir } from '../../../lib/operations/local-fleet/postgres';
import { pidRunning } from '../../../lib/domain/files';
import { api } from '../../support/workload';
import { testClient } from '../../support/postgres';

let dir: string;
let fleet: LocalFleet;
const tenants = Array.from({ length: 40 }, (_, i) => `tenant-${i}`);

function mapping() {
  const parsed = parseMapping(fs.readFileSync(fleet.mappingFile, 'utf8'));
  if (!parsed.ok) throw new Error('bad mapping');
  return parsed.document;
}

beforeAll(async () => {
  dir = makeTempDir('cells-fleet-');
  fleet = await startLocalFleet({ cells: 3, port: 0, stateDir: path.join(dir, 'state'), testFaults: true, restartDelayMs: 200 });
});

afterAll(async () => {
  await fleet?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("fleet.json describes the router, the mapping and each cell's workload and database", () => {
  const file = readFleetFile(fleet.stateDir)!;
  expect(file).toMatchObject({ schemaVersion: 1, pid: process.pid, routerUrl: fleet.routerUrl, mappingFile: fleet.mappingFile, bucketCount: 16384 });
  expect(file.cells.map((c) => c.id)).toEqual(['cell-1', 'cell-2', 'cell-3']);
  for (const cell of file.cells) {
    expect(cell.workloadUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(cell.database).toMatchObject({ host: '127.0.0.1', database: 'cell' });
    expect(pidRunning(cell.workloadPid)).toBe(true);
    expect(pidRunning(cell.database.pid)).toBe(true);
  }
  expect(Object.values(mapping().cells).map((c) => c.endpoint)).toEqual(file.cells.map((c) => c.workloadUrl));
});

test("every tenant is served by the cell the mapping names, and its data lands in that cell's database only", async () => {
  const doc = mapping();
  const seen = new Set<string>();
  for (const tenant of tenants.slice(0, 12)) {
    const r = await api(fleet.routerUrl, 'POST', '/v1/items', tenant, { name: tenant });
    expect(r.status).toBe(201);
    const cell = lookup(doc, tenant).cell;
    expect(r.headers.get('x-cell')).toBe(cell);
    seen.add(cell);
    for (const c of fleet.cells) {
      const db = await testClient({ connectionString: c.database.url('cell') });
      const { rows } = await db.query('select count(*)::int as n from items where tenant_id = $1', [tenant]).finally(() => db.end());
      expect([c.id, rows[0].n]).toEqual([c.id, c.id === cell ? 1 : 0]);
    }
  }
  expect(seen.size).toBeGreaterThan(1);
});

test("cellctl mapping against the fleet's mapping file takes effect (the agent re-reads it, as in AWS)", async () => {
  const doc = mapping();
  const tenant = 'pinned-tenant';
  const target = fleet.cells.map((c) => c.id).find((id) => id !== lookup(doc, tenant).cell)!;
  const io = { out: () => undefined, err: () => undefined };
  expect(await runCli(['mapping', 'pin', tenant, target, '--mapping', fleet.mappingFile, '--routing-only'], io)).toBe(0);
  await until(
    'the router to serve the pinned tenant from its new cell',
    async () => (await api(fleet.routerUrl, 'GET', '/v1/items', tenant)).headers.get('x-cell') === target,
    60_000,
  );
});

test('a killed cell affects only its own tenants, and serves again once restarted', async () => {
  const doc = mapping();
  const victim = fleet.cell('cell-2');
  await victim.killWorkload({ restart: false });
  // The router's health check marks the cell down; every other tenant keeps working.
  for (const tenant of tenants) {
    const r = await api(fleet.routerUrl, 'GET', '/v1/items', tenant);
    if (lookup(doc, tenant).cell === 'cell-2') expect([tenant, r.status === 0 || r.status >= 500]).toEqual([tenant, true]);
    else expect([tenant, r.status]).toEqual([tenant, 200]);
  }
  await victim.startWorkload();
  const back = tenants.find((t) => lookup(doc, t).cell === 'cell-2')!;
  await until('cell-2 to serve again', async () => (await api(fleet.routerUrl, 'GET', '/v1/items', back)).status === 200, 60_000);
});

test('a poison request crashes the workload, which is restarted like a replaced task', async () => {
  const doc = mapping();
  const tenant = tenants.find((t) => lookup(doc, t).cell === 'cell-3')!;
  const cell = fleet.cell('cell-3');
  const pid = cell.workloadPid;
  const r = await api(fleet.routerUrl, 'GET', '/v1/items', tenant, undefined, { 'x-fault': 'crash' });
  expect([0, 502, 503]).toContain(r.status);
  await until(
    'the workload to be restarted',
    async () => cell.workloadPid !== undefined && cell.workloadPid !== pid && (await api(cell.workloadUrl, 'GET', '/healthz')).status === 200,
    60_000,
  );
  await until('the router to route to it again', async () => (await api(fleet.routerUrl, 'GET', '/v1/items', tenant)).status === 200, 60_000);
  expect(cell.restarts).toBeGreaterThanOrEqual(1);
});

test('cellctl fleet get asks every active cell through the router, and names a stopped cell in a partial answer by the deadline', async () => {
  const all = await cellctl('fleet', 'get', '/healthz', '--local', '--state-dir', fleet.stateDir, '--json');
  expect(all.code).toBe(0);
  const body = JSON.parse(all.out) as { partial: boolean; asked: number; missing: unknown[]; cells: { cell: string; status: number }[] };
  expect(body).toMatchObject({ partial: false, asked: 3, missing: [] });
  expect(body.cells.map((c) => [c.cell, c.status])).toEqual([
    ['cell-1', 200],
    ['cell-2', 200],
    ['cell-3', 200],
  ]);
  const stopped = fleet.cells[2];
  await stopped.killWorkload({ restart: false });
  try {
    const r = await cellctl('fleet', 'get', '/healthz', '--local', '--state-dir', fleet.stateDir, '--deadline-ms', '1500');
    expect(r.code).toBe(3);
    expect(r.out).toMatch(/^\/healthz from 3 active cells within 1500 ms: 2 answered, 1 missing \(partial\)/);
    expect(r.out).toContain(`missing ${stopped.id}: ECONNREFUSED connecting to ${stopped.workloadUrl}`);
    // cellctl status reads the same way: the stopped cell's health says why it gave no answer.
    const status = await cellctl('status', '--local', '--state-dir', fleet.stateDir);
    expect(status.code).toBe(0);
    const version = mapping().version;
    expect(status.out).toMatch(new RegExp(`^local fleet in .*: running \\(pid ${process.pid}, since .*\\), router ${fleet.routerUrl}\n`));
    expect(status.out).toContain(`mapping: version ${version} in mapping.json, version ${version} in force at the router`);
    expect(status.out).toMatch(/cell-1 +active +\d+ +\d+\.\d% +200 in \d+ ms/);
    expect(status.out).toMatch(new RegExp(`${stopped.id} +active +\\d+ +\\d+\\.\\d% +no answer: ECONNREFUSED connecting to`));
    expect(status.out).toContain('moves in progress: none');
    expect(status.out).toContain('drains: none');
  } finally {
    await stopped.startWorkload();
  }
  // Without the token the listener answers nobody.
  const file = readFleetFile(fleet.stateDir)!;
  expect((await fetch(`${file.fleetRead!.url}/fleet/healthz`)).status).toBe(401);
  expect(fs.statSync(file.fleetRead!.tokenFile).mode & 0o777).toBe(0o600);
});

test('stop leaves nothing running; a second start reuses the state (data, ports, mapping)', async () => {
  const before = readFleetFile(fleet.stateDir)!;
  const pids = before.cells.flatMap((c) => [c.workloadPid, c.database.pid]);
  let created = await api(fleet.routerUrl, 'POST', '/v1/items', 'survivor', { keep: true });
  await until(
    'the survivor item to be written',
    async () => {
      if (created.status !== 201) created = await api(fleet.routerUrl, 'POST', '/v1/items', 'survivor', { keep: true });
      return created.status === 201;
    },
    60_000,
  );
  await fleet.stop();
  for (const pid of pids) expect(pidRunning(pid)).toBe(false);
  expect((await api(fleet.routerUrl, 'GET', '/v1/items', 'survivor')).status).toBe(0);

  fleet = await startLocalFleet({ cells: 3, port: 0, stateDir: path.join(dir, 'state'), testFaults: true });
  const after = readFleetFile(fleet.stateDir)!;
  expect(after.cells.map((c) => c.workloadUrl)).toEqual(before.cells.map((c) => c.workloadUrl));
  expect(after.routerUrl).toBe(before.routerUrl);
  expect(mapping().overrides.exact['pinned-tenant']).toBeDefined();
  const read = await api(fleet.routerUrl, 'GET', `/v1/items/${created.body.id}`, 'survivor');
  expect(read.status).toBe(200);
});
