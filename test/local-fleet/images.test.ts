import * as fs from 'fs';
import * as path from 'path';
import { LocalFleet, readFleetFile, startLocalFleet } from '../../lib/local-fleet';
import { runningFleetContainers } from '../../lib/local-fleet/images';
import { podman } from '../../lib/images/podman';
import { lookup, parseMapping } from '../../lib/mapping';
import { makeTempDir } from '../../lib/local-fleet/postgres';
import { missingContainerTools } from '../support/containers';
import { api } from '../support/workload';
import { testClient } from '../support/postgres';

/**
 * `cellctl fleet local --images`: the fleet's workloads and router run from the images that ship
 * (built from the same contexts as synth's assets, on the tests' stand-in base images and in their
 * store, so the image tests' builds are reused), each cell's PostgreSQL on the host as from source.
 */
const missing = missingContainerTools('local');
const describeImages = missing ? describe.skip : describe;
if (missing) test('the image tests can run here', () => { throw new Error(`image tests: ${missing}`); });

describeImages('the local fleet from its images', () => {
  let dir: string;
  let fleet: LocalFleet;
  const log: string[] = [];

  beforeAll(async () => {
    dir = makeTempDir('cells-fleet-images-');
    fleet = await startLocalFleet({ cells: 2, port: 0, stateDir: path.join(dir, 'state'), images: { baseImages: 'local' }, log: (l) => log.push(l) });
  }, 1_200_000);

  afterAll(async () => {
    await fleet?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs every workload and the router task as containers of the built images', async () => {
    const file = readFleetFile(fleet.stateDir)!;
    expect(file.images).toEqual(fleet.images);
    expect(fleet.router).toBeUndefined();
    const running = await runningFleetContainers(fleet.stateDir);
    expect(running).toHaveLength(4);
    const images = new Map<string, string>();
    for (const name of running) images.set(name, (await podman(['inspect', name, '--format', '{{.ImageName}}'])).stdout.trim());
    expect(images.get(running.find((n) => n.endsWith('-router-haproxy'))!)).toBe(fleet.images!.haproxy);
    expect(images.get(running.find((n) => n.endsWith('-router-agent'))!)).toBe(fleet.images!.agent);
    for (const cell of fleet.cells) expect(images.get(running.find((n) => n.endsWith(`-${cell.id}`))!)).toBe(fleet.images!.workload);
  });

  it('routes each tenant through the router container to its cell, whose workload container writes and reads its items', async () => {
    const parsed = parseMapping(fs.readFileSync(fleet.mappingFile, 'utf8'));
    if (!parsed.ok) throw new Error('bad mapping');
    const seen = new Set<string>();
    for (const tenant of Array.from({ length: 8 }, (_, i) => `tenant-${i}`)) {
      const cell = lookup(parsed.document, tenant).cell;
      const created = await api(fleet.routerUrl, 'POST', '/v1/items', tenant, { name: tenant });
      expect([created.status, created.headers.get('x-cell')]).toEqual([201, cell]);
      const read = await api(fleet.routerUrl, 'GET', `/v1/items/${created.body.id}`, tenant);
      expect([read.status, read.headers.get('x-cell'), read.body.data]).toEqual([200, cell, { name: tenant }]);
      // In that cell's database, and no other's.
      for (const c of fleet.cells) {
        const db = await testClient({ connectionString: c.database.url('cell') });
        const { rows } = await db.query('select count(*)::int as n from items where tenant_id = $1', [tenant]).finally(() => db.end());
        expect([c.id, rows[0].n]).toEqual([c.id, c.id === cell ? 1 : 0]);
      }
      seen.add(cell);
    }
    expect(seen.size).toBe(2);
  });

  it('stops every container it started', async () => {
    await fleet.stop();
    expect(await runningFleetContainers(fleet.stateDir)).toEqual([]);
    expect((await podman(['ps', '--all', '--filter', `label=cell-factory.fleet=${path.resolve(fleet.stateDir)}`, '--format', '{{.Names}}'])).stdout.trim()).toBe('');
  });
});
