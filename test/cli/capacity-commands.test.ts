import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { cellctl } from '../support/cli';
import { compileMapping, initialMapping, MappingDocument } from '../../lib/domain/mapping';
import { CellDatabase } from '../../lib/operations/moves/cell-data';
import { LocalRouter, startLocalRouter } from '../../lib/runtime/router/local';
import { TENANT_RATE_PERIOD_SECONDS } from '../../lib/runtime/router/haproxy-config';
import { FakeCell, onFreePorts, routed, startCell } from '../support/cells';
import { countColour, rowsWithColour, screenshot } from '../support/browser';
import { STATUS_COLOURS, TARGET_COLOUR } from '../../lib/domain/capacity';
import { PostgresServer, sql, startPostgres } from '../operations/moves/postgres-fixture';

/**
 * `cellctl capacity|place --local` on a fleet.json as `cellctl fleet local` writes it: real
 * PostgreSQL databases, fake cells behind a real local router (HAProxy + agent) whose keys table
 * counts each tenant. Skewed load: one tenant sends ten times what each other tenant sends, and
 * its cell is over its target (cells judged as tested at 20 req/s: target 10 req/s).
 */
describe('cellctl capacity --local, with skewed load', () => {
  let pg: PostgresServer;
  let router: LocalRouter;
  let cells: FakeCell[];
  let dir: string;
  let mappingFile: string;
  let port: number;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const dbs: Record<string, CellDatabase> = {};
  const local = () => ['--local', '--state-dir', dir, '--tested-rps', '20', '--samples', '1'];
  const mapping = () => JSON.parse(fs.readFileSync(mappingFile, 'utf8')) as MappingDocument;
  let heavy: string;
  let light: string[];

  /** Tenant names the mapping sends to `cell`. */
  const tenantsOn = (cell: string, count: number, prefix: string) => {
    const compiled = compileMapping(mapping());
    const found: string[] = [];
    for (let i = 0; found.length < count; i++) if (compiled.lookup(`${prefix}${i}`).cell === cell) found.push(`${prefix}${i}`);
    return found;
  };
  /** Requests within the rate period: the heavy tenant 6 req/s, each light one 0.6 req/s. */
  const sendLoad = async () => {
    const sends: [string, number][] = [[heavy, 10 * 6], ...light.map((t): [string, number] => [t, 6])];
    await Promise.all(
      sends.map(async ([tenant, n]) => {
        for (let i = 0; i < n; i++) expect((await routed(agent, port, tenant)).status).toBe(200);
      }),
    );
  };

  beforeAll(async () => {
    pg = await startPostgres();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cells-local-'));
    cells = await Promise.all(['cell-a', 'cell-b', 'cell-c'].map((name) => startCell(name)));
    for (const cell of cells) dbs[cell.name] = await pg.createDatabase(`cap_${cell.name.replace('-', '_')}`);
    mappingFile = path.join(dir, 'mapping.json');
    fs.writeFileSync(
      mappingFile,
      JSON.stringify(
        initialMapping(
          cells.map((c) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const })),
          1024,
          { now: new Date().toISOString() },
        ),
      ),
    );
    fs.mkdirSync(path.join(dir, 'router'));
    router = await onFreePorts(1, async (ports) => {
      port = ports[0];
      return startLocalRouter({
        mappingFile,
        port,
        debugHeaders: true,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 1024,
        healthCheckPath: '/health',
        log: () => undefined,
        pollMs: 100,
        stateDir: path.join(dir, 'router'),
      });
    });
    fs.writeFileSync(
      path.join(dir, 'fleet.json'),
      JSON.stringify({
        mappingFile: 'mapping.json',
        routerUrl: `http://127.0.0.1:${port}`,
        cells: Object.fromEntries(Object.entries(dbs).map(([id, db]) => [id, { database: db }])),
      }),
    );
    heavy = tenantsOn('cell-a', 1, 'heavy-')[0];
    light = [...tenantsOn('cell-a', 8, 'a-'), ...tenantsOn('cell-b', 2, 'b-'), ...tenantsOn('cell-c', 2, 'c-')];
    await sql(
      dbs['cell-a'],
      `insert into items (id, tenant_id, data) select gen_random_uuid()::text, '${heavy}', jsonb_build_object('n', g) from generate_series(1, 500) g`,
    );
  });
  afterAll(async () => {
    agent.destroy();
    await router?.stop();
    await Promise.all((cells ?? []).map((c) => c.close()));
    await pg?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('names the hot cell and the heavy tenant, plans the fewest moves, and the plan brings the measured rate under the target', async () => {
    await sendLoad();
    const judged = await cellctl('capacity', '--json', ...local());
    expect([judged.code, judged.err]).toEqual([0, '']);
    const fleet = JSON.parse(judged.out);
    const cellA = fleet.cells.find((c: { cell: string }) => c.cell === 'cell-a');
    // 60 + 8 × 6 requests in the rate period (HAProxy's rate may have begun to decay: at least most of them).
    expect(cellA).toMatchObject({ status: 'hot', testedRps: 20, targetRps: 10, activeTenants: 9, maxTenants: 500 });
    expect(cellA.peakRps).toBeGreaterThan(10);
    expect(cellA.peakRps).toBeLessThanOrEqual(108 / TENANT_RATE_PERIOD_SECONDS);
    expect(cellA.largestTenant.tenant).toBe(heavy);
    expect(fleet.cells.filter((c: { status: string }) => c.status !== 'ok').map((c: { cell: string }) => c.cell)).toEqual(['cell-a']);
    const text = await cellctl('capacity', ...local());
    expect(text.out).toMatch(new RegExp(`cell-a .* ${heavy} .* hot`));
    expect(text.out).toMatch(/cell-a is hot: `cellctl capacity plan --out FILE` moves tenants away/);

    const planFile = path.join(dir, 'plan.json');
    const planned = await cellctl('capacity', 'plan', '--out', planFile, ...local());
    expect([planned.code, planned.err]).toEqual([0, '']);
    const plan = JSON.parse(fs.readFileSync(planFile, 'utf8'));
    // One move: the heavy tenant (two light ones would not be enough; the fewest tenants).
    expect(plan.capacity.moves).toEqual([expect.objectContaining({ tenant: heavy, from: 'cell-a' })]);
    expect(plan.moves).toHaveLength(1);
    const to = plan.capacity.moves[0].to;
    expect(plan.capacity.cells.find((c: { cell: string }) => c.cell === 'cell-a').peakRpsAfter).toBeLessThan(10);
    expect(plan.capacity.cells.find((c: { cell: string }) => c.cell === to).peakRpsAfter).toBeLessThanOrEqual(10);
    expect(planned.out).toContain(`run it with \`cellctl move plan ${planFile} --local\``);

    const ran = await cellctl('move', 'plan', planFile, '--local', '--state-dir', dir, '--json');
    expect([ran.code, ran.err]).toEqual([0, expect.stringMatching(/^plan 1\/\d+: /m)]);
    expect(JSON.parse(ran.out)).toEqual([expect.objectContaining({ source: 'cell-a', target: to, rowsCopied: 500 })]);
    expect(compileMapping(mapping()).lookup(heavy).cell).toBe(to);

    // The same load again: measured at the router, cell-a is under its target now.
    await sendLoad();
    const after = JSON.parse((await cellctl('capacity', '--json', ...local())).out);
    const a = after.cells.find((c: { cell: string }) => c.cell === 'cell-a');
    expect(a.peakRps).toBeLessThanOrEqual(10);
    expect(a.status).toBe('ok');
    expect(after.cells.find((c: { cell: string }) => c.cell === to).topTenants[0].tenant).toBe(heavy);
  });

  it('places a new tenant by best fit and prints the pin that puts it there', async () => {
    const placed = await cellctl('place', 'newcomer', '--expected-rps', '2', '--json', ...local());
    expect([placed.code, placed.err]).toEqual([0, '']);
    const answer = JSON.parse(placed.out);
    expect(answer).toMatchObject({ kind: 'fits', tenant: 'newcomer' });
    expect(answer.command).toBe(
      `cellctl mapping pin newcomer ${answer.cell} --mapping ${mappingFile} --plan place-newcomer.json && cellctl move plan place-newcomer.json --local`,
    );
    const big = await cellctl('place', 'giant', '--expected-rps', '11', ...local());
    expect(big.out).toMatch(/^giant at 11\.0 req\/s is above the target of every cell that may take it \(10\.0 req\/s\)/);
    const bad = await cellctl('place', 'bad key', '--expected-rps', '1', ...local());
    expect([bad.code, bad.err]).toEqual([2, expect.stringMatching(/^error: tenant "bad key": /)]);
    const nan = await cellctl('place', 'x', '--expected-rps', 'lots', ...local());
    expect([nan.code, nan.err]).toEqual([2, 'error: --expected-rps lots: give requests per second, a number of 0 or more\n']);
  });

  it('writes one self-contained page a browser shows: bars against the target, the plan', async () => {
    await sendLoad();
    const file = path.join(dir, 'capacity.html');
    const written = await cellctl('capacity', '--html', file, ...local());
    expect(written.code).toBe(0);
    const html = fs.readFileSync(file, 'utf8');
    expect(html).not.toMatch(/<script|<link|src=|url\(/);
    expect(html).toContain(heavy);
    const picture = screenshot(file, path.join(dir, 'capacity.png'), 1400, 900);
    if (process.env.KEEP_CAPACITY_SCREENSHOT) fs.copyFileSync(path.join(dir, 'capacity.png'), process.env.KEEP_CAPACITY_SCREENSHOT);
    // Three bars (one per cell) and a target line crossing each.
    expect(
      countColour(picture, STATUS_COLOURS.ok) + countColour(picture, STATUS_COLOURS.hot) + countColour(picture, STATUS_COLOURS.full),
    ).toBeGreaterThan(3 * 200);
    expect(rowsWithColour(picture, TARGET_COLOUR).length).toBeGreaterThan(3 * 20);
  });

  it('says what is wrong when no local fleet runs there', async () => {
    const missing = await cellctl('capacity', '--local', '--state-dir', path.join(dir, 'nowhere'));
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/^error: .*fleet\.json not found: start the local fleet/);
  });
});
