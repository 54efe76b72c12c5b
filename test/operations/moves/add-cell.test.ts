import * as fs from 'fs';
import * as path from 'path';
import { runCli } from '../../../lib/cli';
import { compileMapping, MappingDocument } from '../../../lib/domain/mapping';
import { FleetFile, LocalFleet, makeTempDir, startLocalFleet } from '../../../lib/operations/local-fleet';
import { api } from '../../support/workload';

async function cellctl(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, {
    out: (s) => {
      out += s;
    },
    err: (s) => {
      err += s;
    },
  });
  return { code, out, err };
}

/**
 * A fifth cell added to a running four-cell local fleet (real PostgreSQL servers, reference
 * workloads, the real router), then an add-cell plan run onto it: the tenants of the buckets it
 * takes are served from it, with all their items, and keep working.
 */
describe('add-cell onto a running local fleet', () => {
  let fleet: LocalFleet;
  let dir: string;
  let stateDir: string;
  const mapping = () => JSON.parse(fs.readFileSync(fleet.mappingFile, 'utf8')) as MappingDocument;
  const fleetFile = () => JSON.parse(fs.readFileSync(path.join(stateDir, 'fleet.json'), 'utf8')) as FleetFile;

  beforeAll(async () => {
    dir = makeTempDir('e2e-add-cell-');
    stateDir = path.join(dir, 'state');
    fleet = await startLocalFleet({ cells: 4, port: 0, stateDir, bucketCount: 1024, log: () => undefined });
  }, 300_000);
  afterAll(async () => {
    await fleet?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('cellctl fleet add-cell starts cell-5; an add-cell plan moves its share of buckets there with their data', async () => {
    const tenants = Array.from({ length: 60 }, (_, i) => `t${i}`);
    const items = new Map<string, string[]>();
    for (const t of tenants) {
      const ids: string[] = [];
      for (let n = 0; n < 3; n++) {
        const r = await api(fleet.routerUrl, 'POST', '/v1/items', t, { n });
        expect(r.status).toBe(201);
        ids.push(r.body.id);
      }
      items.set(t, ids);
    }

    const added = await cellctl('fleet', 'add-cell', '--state-dir', stateDir, '--json');
    expect([added.code, added.err]).toEqual([0, '']);
    const cell = JSON.parse(added.out) as { id: string; workloadUrl: string; database: string };
    expect(cell.id).toBe('cell-5');
    expect(fleetFile().cells.map((c) => c.id)).toEqual(['cell-1', 'cell-2', 'cell-3', 'cell-4', 'cell-5']);
    expect((await fetch(`${cell.workloadUrl}/healthz`)).status).toBe(200);
    expect(fleet.cells.map((c) => c.id)).toContain('cell-5');

    // Without --json: the next commands, with this fleet's paths.
    const text = await cellctl('fleet', 'add-cell', '--state-dir', stateDir);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/^added cell-6: workload http:\/\/127\.0\.0\.1:\d+, database postgres:\/\/\S+\n/);
    expect(text.out).toContain(`cellctl mapping add-cell cell-6 --endpoint http://127.0.0.1:`);
    // The plan file goes into the fleet's state directory, not the working directory.
    const hinted = path.join(stateDir, 'add-cell-6.json');
    expect(text.out).toContain(`--plan ${hinted}\n  cellctl move plan ${hinted} --local --state-dir ${stateDir}\n`);

    const before = compileMapping(mapping());
    const plan = path.join(dir, 'add.plan.json');
    const mapped = await cellctl('mapping', 'add-cell', 'cell-5', '--endpoint', cell.workloadUrl, '--mapping', fleet.mappingFile, '--plan', plan);
    expect(mapped.code).toBe(0);
    const ran = await cellctl('move', 'plan', plan, '--json', '--local', '--state-dir', stateDir);
    expect([ran.code, ran.err]).toEqual([0, expect.stringMatching(/^plan 4\/4: /m)]);
    const moves = JSON.parse(ran.out) as { status: string }[];
    expect(moves).toHaveLength(4);
    expect(moves.every((m) => m.status === 'retained')).toBe(true);

    const doc = compileMapping(mapping());
    const onFive = tenants.filter((t) => doc.lookup(t).cell === 'cell-5');
    expect(onFive.length).toBeGreaterThan(3);
    // Every tenant reads all its items through the router, the moved ones from cell-5, and can still write.
    for (const t of tenants) {
      const page = await api(fleet.routerUrl, 'GET', '/v1/items?limit=100', t);
      expect(page.status).toBe(200);
      expect(page.headers.get('x-cell')).toBe(doc.lookup(t).cell);
      expect(page.body.items.map((i: { id: string }) => i.id).sort()).toEqual([...items.get(t)!].sort());
    }
    const wrote = await api(fleet.routerUrl, 'POST', '/v1/items', onFive[0], { after: true });
    expect([wrote.status, wrote.headers.get('x-cell')]).toEqual([201, 'cell-5']);
    // Its old cell refuses a moved tenant (a stale router would get 421), naming cell-5.
    const oldCell = fleet.cell(before.lookup(onFive[0]).cell);
    const direct = await api(oldCell.workloadUrl, 'GET', '/v1/items', onFive[0]);
    expect([direct.status, direct.body.cell]).toEqual([421, 'cell-5']);
  }, 600_000);
});
