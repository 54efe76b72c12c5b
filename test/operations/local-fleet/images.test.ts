import { spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { LocalFleet, readFleetFile, startLocalFleet } from '../../../lib/operations/local-fleet';
import { runningFleetContainers } from '../../../lib/operations/local-fleet/images';
import { podman } from '../../../lib/runtime/images/podman';
import { lookup, parseMapping } from '../../../lib/domain/mapping';
import { makeTempDir } from '../../../lib/operations/local-fleet/postgres';
import { missingContainerTools } from '../../support/containers';
import { until } from '../../support/cells';
import { pidRunning } from '../../../lib/domain/files';
import { api } from '../../support/workload';
import { testClient } from '../../support/postgres';

/**
 * `cellctl fleet local --images`: the fleet's workloads and router run from the images that ship
 * (built from the same contexts as synth's assets, on the tests' stand-in base images and in their
 * store, so the image tests' builds are reused), each cell's PostgreSQL on the host as from source.
 */
const missing = missingContainerTools('local');
const describeImages = missing ? describe.skip : describe;
if (missing)
  test('the image tests can run here', () => {
    throw new Error(`image tests: ${missing}`);
  });

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
    expect(
      (await podman(['ps', '--all', '--filter', `label=cell-factory.fleet=${path.resolve(fleet.stateDir)}`, '--format', '{{.Names}}'])).stdout.trim(),
    ).toBe('');
  });
});

describeImages('cellctl fleet local --images, then cellctl fleet local stop', () => {
  const ROOT = path.join(__dirname, '..', '..', '..');
  const cellctl = path.join(ROOT, 'bin', 'cellctl.js');
  let dir: string;

  beforeAll(() => {
    dir = makeTempDir('cells-fleet-images-cli-');
  });

  afterAll(() => {
    for (const state of ['state', 'killed'])
      spawnSync(process.execPath, [cellctl, 'fleet', 'local', 'stop', '--state-dir', path.join(dir, state)], { cwd: ROOT });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** `cellctl fleet local --images` of one cell in `stateDir`; its output so far (stdout and stderr). */
  const startImageFleet = (stateDir: string) => {
    const child = spawn(
      process.execPath,
      [cellctl, 'fleet', 'local', '--images', '--base-images', 'local', '--cells', '1', '--port', '0', '--state-dir', stateDir],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    return { child, output: () => out };
  };

  it('serves through the router container, and `fleet local stop` ends the fleet and every container', async () => {
    const stateDir = path.join(dir, 'state');
    const { child, output } = startImageFleet(stateDir);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await until('the fleet to start', async () => /^workloads +from localhost\/cell-factory\/workload:/m.test(output()), 600_000);
    const file = readFleetFile(stateDir)!;
    const created = await api(file.routerUrl, 'POST', '/v1/items', 'acme', { name: 'x' });
    expect([created.status, created.headers.get('x-cell')]).toEqual([201, 'cell-1']);
    expect(await runningFleetContainers(stateDir)).toHaveLength(3);

    const stop = spawnSync(process.execPath, [cellctl, 'fleet', 'local', 'stop', '--state-dir', stateDir], { cwd: ROOT, encoding: 'utf8' });
    expect([stop.status, stop.stdout]).toEqual([0, 'fleet stopped\n']);
    expect(await exited).toBe(0);
    expect(pidRunning(file.pid)).toBe(false);
    expect(await runningFleetContainers(stateDir)).toEqual([]);
  }, 900_000);

  it('after a SIGKILLed cellctl, `fleet local stop` removes the router containers it left (the workload containers stop with their watchdog)', async () => {
    const stateDir = path.join(dir, 'killed');
    const { child, output } = startImageFleet(stateDir);
    await until('the fleet to start', async () => /^workloads /m.test(output()), 600_000);
    child.kill('SIGKILL');
    await until(
      'the workload container to stop',
      async () => (await runningFleetContainers(stateDir)).every((n) => /-router-(haproxy|agent)$/.test(n)),
      60_000,
    );
    expect((await runningFleetContainers(stateDir)).length).toBe(2);
    const stop = spawnSync(process.execPath, [cellctl, 'fleet', 'local', 'stop', '--state-dir', stateDir], { cwd: ROOT, encoding: 'utf8' });
    expect([stop.status, stop.stdout, stop.stderr]).toEqual([
      0,
      'fleet stopped\n',
      expect.stringMatching(/^removed 2 containers left running: .*-router-haproxy, .*-router-agent\n$/),
    ]);
    expect(await runningFleetContainers(stateDir)).toEqual([]);
  }, 900_000);

  it('refuses a bad --base-images and an unknown action with the fix', () => {
    const bad = spawnSync(process.execPath, [cellctl, 'fleet', 'local', '--images', '--base-images', 'docker'], { cwd: ROOT, encoding: 'utf8' });
    expect([bad.status, bad.stderr.trim()]).toEqual([2, expect.stringContaining('--base-images docker: give pull or local')]);
    const unknown = spawnSync(process.execPath, [cellctl, 'fleet', 'local', 'start'], { cwd: ROOT, encoding: 'utf8' });
    expect([unknown.status, unknown.stderr]).toEqual([2, expect.stringContaining('`node bin/cellctl.js fleet local stop` stops one')]);
    // A machine without buildah and podman: one line with the install hint.
    const bin = makeTempDir('cells-no-podman-');
    try {
      fs.symlinkSync('/bin/sh', path.join(bin, 'sh'));
      const none = spawnSync(process.execPath, [cellctl, 'fleet', 'local', '--images', '--state-dir', path.join(dir, 'no-tools')], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, PATH: bin },
      });
      expect([none.status, none.stderr.trim().split('\n')]).toEqual([
        1,
        [
          'error: --images: buildah, podman, runc not installed; apt-get install -y buildah podman runc (Debian/Ubuntu; add debootstrap for --base-images local)',
        ],
      ]);
    } finally {
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });
});
