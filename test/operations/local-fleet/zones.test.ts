import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { runCli } from '../../../lib/cli';
import { LocalFleet, readFleetFile, startLocalFleet } from '../../../lib/operations/local-fleet';
import { makeTempDir } from '../../../lib/operations/local-fleet/postgres';
import { configDir } from '../../support/fleet';
import type { UndrainResult, ZoneChangeResult } from '../../../lib/operations/zones';

/**
 * Draining a zone in the local fleet: each cell's workload runs in three zones (three processes on
 * the cell's database, each on its zone's loopback network), the router has one server per cell and
 * zone, and `cellctl zone drain|undrain --local` writes the zones document the router follows. Under
 * continuous load from 50 tenants, every answer says its cell and zone.
 */
const TENANTS = Array.from({ length: 50 }, (_, i) => `tenant-${i}`);

let dir: string;
let fleet: LocalFleet;
const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });

interface Answer {
  /** When the request was sent: one sent before a drain applied may still be answered from the zone (in flight, it finishes). */
  readonly sent: number;
  readonly at: number;
  readonly status: number;
  readonly zone?: string;
  readonly cell?: string;
}

/** Continuous load: 10 clients, the 50 tenants in turn, until stopped. */
function load(): { stop: () => Promise<Answer[]> } {
  const answers: Answer[] = [];
  let stopped = false;
  let n = 0;
  const one = (tenant: string) =>
    new Promise<Answer>((resolve) => {
      const sent = Date.now();
      const req = http.get(`${fleet.routerUrl}/healthz`, { agent, headers: { 'x-tenant-id': tenant }, timeout: 10_000 }, (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            sent,
            at: Date.now(),
            status: res.statusCode ?? 0,
            zone: res.headers['x-zone'] as string,
            cell: res.headers['x-cell'] as string,
          }),
        );
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve({ sent, at: Date.now(), status: 0 }));
    });
  const running = Promise.all(
    Array.from({ length: 10 }, async () => {
      while (!stopped) answers.push(await one(TENANTS[n++ % TENANTS.length]));
    }),
  );
  return {
    stop: async () => {
      stopped = true;
      await running;
      return answers;
    },
  };
}

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli([...args, '--local', '--state-dir', fleet.stateDir], { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

beforeAll(async () => {
  dir = makeTempDir('cells-zones-');
  fleet = await startLocalFleet({ cells: 2, port: 0, stateDir: path.join(dir, 'state'), zones: 3 });
}, 180_000);

afterAll(async () => {
  agent.destroy();
  await fleet?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('fleet.json names the zones, and every cell answers from all three, naming its zone', async () => {
  const file = readFleetFile(fleet.stateDir)!;
  expect(file.zones).toMatchObject({ region: 'local', ids: ['lcl1-az1', 'lcl1-az2', 'lcl1-az3'] });
  expect(file.cells[0].zones!.map((z) => z.url)).toEqual(
    ['lcl1-az1', 'lcl1-az2', 'lcl1-az3'].map((_, z) => `http://127.0.${101 + z}.1:${file.cells[0].workloadPort}`),
  );
  const running = load();
  await new Promise((r) => setTimeout(r, 1500));
  const answers = await running.stop();
  expect(answers.filter((a) => a.status !== 200)).toEqual([]);
  for (const cell of ['cell-1', 'cell-2'])
    expect(new Set(answers.filter((a) => a.cell === cell).map((a) => a.zone))).toEqual(new Set(['lcl1-az1', 'lcl1-az2', 'lcl1-az3']));
  const status = await cli(['zone', 'status']);
  expect(status.code).toBe(0);
  expect(status.out).toMatch(/lcl1-az2\s+100%\s+33\.3%\s+100\s+2\/2/);
});

test('`zone drain --plan` says what moves, what does not and what the zones left take, and changes nothing', async () => {
  const plan = await cli(['zone', 'drain', 'lcl1-az2', '--plan']);
  expect(plan.code).toBe(0);
  expect(plan.out).toContain('each takes 1.50× the requests it takes now');
  expect(plan.out).toContain('keep running');
  // Capacity's figures (`cellctl capacity --local`), one line per cell (their rates are this machine's).
  expect(plan.out).toMatch(/capacity +2 cells read; /);
  expect(plan.out).toMatch(/cell-1 [\d.]+ rps × 1\.50 = [\d.]+ of 2000 tested/);
  expect(JSON.parse(fs.readFileSync(readFleetFile(fleet.stateDir)!.zones!.file, 'utf8')).version).toBe(1);
});

test('under load from 50 tenants, a drain moves new requests off the zone within one poll, an undrain in 1% steps brings them back, and no request fails', async () => {
  const running = load();
  await new Promise((r) => setTimeout(r, 1000));
  // The load this machine reaches is not the point here (the capacity test below is about that).
  const drained = await cli(['zone', 'drain', 'lcl1-az2', '--reason', 'test', '--json', '--no-capacity-check']);
  expect(drained.code).toBe(0);
  const drain = JSON.parse(drained.out) as ZoneChangeResult;
  process.stderr.write(`zone drain: applied in ${drain.appliedMs} ms; then ${drain.measured.inZone}/${drain.measured.requests} in the zone\n`);
  // Measured by the command at the routers: after it applied, none of the new requests reached the zone.
  expect(drain.measured.requests).toBeGreaterThan(100);
  expect(drain.measured.inZone / drain.measured.requests).toBeLessThanOrEqual(0.01);
  const appliedAt = Date.now() - drain.measured.ms;
  const undrained = await cli(['zone', 'undrain', 'lcl1-az2', '--steps', '1,2,3,100', '--bake', '1', '--measure', '1', '--json']);
  const answers = await running.stop();
  expect(undrained.code).toBe(0);
  const undrain = JSON.parse(undrained.out) as UndrainResult;
  expect(undrain.failed).toBeUndefined();
  expect(undrain.steps.map((s) => s.weight)).toEqual([1, 2, 3, 100]);
  // At 1%, 2%, 3% of its share the zone takes about 1/201, 2/202, 3/203 of the requests; then a third.
  for (const step of undrain.steps.slice(0, 3)) expect(step.measured.inZone / step.measured.requests).toBeLessThan(0.05);
  const full = undrain.steps[3];
  expect(full.measured.inZone / full.measured.requests).toBeGreaterThan(0.2);
  // Not one request failed through the drain and the undrain; none sent while it was drained reached the zone.
  expect(answers.filter((a) => a.status !== 200)).toEqual([]);
  const whileDrained = answers.filter((a) => a.sent > appliedAt && a.at < appliedAt + drain.measured.ms);
  expect(whileDrained.length).toBeGreaterThan(50);
  expect(whileDrained.filter((a) => a.zone === 'lcl1-az2')).toEqual([]);
}, 120_000);

test("refuses a drain the zones left would not hold by capacity's figures, naming the cells, unless --force", async () => {
  // A fleet file whose shapes were tested at 2 requests a second: the 50 tenants' load passes it.
  const dir = configDir((text) =>
    text.replace(/requestsPerSecond: \d+/g, 'requestsPerSecond: 2').replace(/tenantRequestsPer5Min: \d+/g, 'tenantRequestsPer5Min: 300'),
  );
  try {
    const running = load();
    try {
      await new Promise((r) => setTimeout(r, 1500));
      const config = ['--config', path.join(dir, 'cells.config.ts')];
      const refused = await cli(['zone', 'drain', 'lcl1-az3', ...config, '--measure', '0']);
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/the zones left would not hold the load: 2 cell\(s\) past their tested rate/);
      expect(refused.err).toMatch(/cell-1 [\d.]+ rps × 1\.50 = [\d.]+ of 2 tested/);
      expect(JSON.parse(fs.readFileSync(readFleetFile(fleet.stateDir)!.zones!.file, 'utf8')).zones['lcl1-az3'].weight).toBe(100);
      const forced = await cli(['zone', 'drain', 'lcl1-az3', ...config, '--measure', '0', '--force']);
      expect(forced.code).toBe(0);
      expect(forced.err).toMatch(/--force: draining although 2 cell\(s\) pass their tested rate/);
    } finally {
      await running.stop();
    }
    expect((await cli(['zone', 'undrain', 'lcl1-az3', '--steps', '100', '--measure', '0'])).code).toBe(0);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

test('refuses a zone the fleet does not have, and draining the last zone serving', async () => {
  expect((await cli(['zone', 'drain', 'use1-az1'])).err).toMatch(/not one of the fleet's zones/);
  expect((await cli(['zone', 'drain', 'lcl1-az1', '--measure', '0', '--no-capacity-check'])).code).toBe(0);
  expect((await cli(['zone', 'drain', 'lcl1-az3', '--measure', '0', '--no-capacity-check'])).code).toBe(0);
  const last = await cli(['zone', 'drain', 'lcl1-az2', '--measure', '0', '--no-capacity-check']);
  expect(last.code).toBe(1);
  expect(last.err).toMatch(/every zone is drained/);
  // What is in force is unchanged: lcl1-az2 serves alone.
  const status = await cli(['zone', 'status', '--json']);
  const doc = (JSON.parse(status.out) as { document: { zones: Record<string, { weight: number }> } }).document;
  expect(Object.fromEntries(Object.entries(doc.zones).map(([z, s]) => [z, s.weight]))).toEqual({ 'lcl1-az1': 0, 'lcl1-az2': 100, 'lcl1-az3': 0 });
}, 60_000);
