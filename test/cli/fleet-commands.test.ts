import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { makeTempDir } from '../../lib/local-fleet/postgres';
import { pidRunning } from '../../lib/files';
import { readFleetFile, startLocalFleet } from '../../lib/local-fleet';
import { until } from '../support/cells';
import { api } from '../support/workload';

const ROOT = path.join(__dirname, '..', '..');

test('cellctl fleet local: prints the router, mapping and cells, serves the README curl, and SIGTERM stops every process', async () => {
  const dir = makeTempDir('cells-cli-fleet-');
  const stateDir = path.join(dir, 'state');
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'cellctl.js'), 'fleet', 'local', '--cells', '2', '--port', '0', '--state-dir', stateDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await until('the fleet to start', async () => out.includes('Ctrl-C or SIGTERM stops the fleet'), 90_000);
    const fleet = readFleetFile(stateDir)!;
    expect(out).toContain(`router      ${fleet.routerUrl}`);
    expect(out).toContain(fleet.mappingFile);
    expect(out).toMatch(/cell-1\s+http:\/\/127\.0\.0\.1:\d+\s+postgres:\/\/127\.0\.0\.1:\d+\/cell\s+\d+\.\d%/);
    expect(out).toContain(`curl -H 'x-tenant-id: acme' -d '{"name":"x"}' ${fleet.routerUrl}/v1/items`);
    // What the README's curl sends (form-encoded content type) through the router.
    const response = await fetch(`${fleet.routerUrl}/v1/items`, { method: 'POST', headers: { 'x-tenant-id': 'acme', 'content-type': 'application/x-www-form-urlencoded' }, body: '{"name":"x"}' });
    expect(response.status).toBe(201);
    expect(response.headers.get('x-cell')).toMatch(/^cell-[12]$/);
    const pids = fleet.cells.flatMap((c) => [c.workloadPid, c.database.pid]);
    expect(pids.every(pidRunning)).toBe(true);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toContain('fleet stopped');
    for (const pid of pids) expect(pidRunning(pid)).toBe(false);
    expect((await api(fleet.routerUrl, 'GET', '/v1/items', 'acme')).status).toBe(0);
  } catch (error) {
    child.kill('SIGTERM');
    await exited;
    throw new Error(`${(error as Error).message}\nstdout:\n${out}\nstderr:\n${err}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 240_000);

test('a fleet whose cellctl was SIGKILLed is cleaned up by the next start, which reuses its state', async () => {
  const dir = makeTempDir('cells-cli-orphans-');
  const stateDir = path.join(dir, 'state');
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'cellctl.js'), 'fleet', 'local', '--cells', '2', '--port', '0', '--state-dir', stateDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let fleet: Awaited<ReturnType<typeof startLocalFleet>> | undefined;
  try {
    await until('the fleet to start', async () => out.includes('Ctrl-C or SIGTERM stops the fleet'), 90_000);
    const before = readFleetFile(stateDir)!;
    child.kill('SIGKILL');
    await exited;
    const orphans = before.cells.flatMap((c) => [c.workloadPid, c.database.pid]);
    expect(orphans.some(pidRunning)).toBe(true);
    fleet = await startLocalFleet({ cells: 2, port: 0, stateDir });
    for (const pid of orphans) expect(pidRunning(pid)).toBe(false);
    expect(fleet.routerUrl).toBe(before.routerUrl);
    expect((await api(fleet.routerUrl, 'GET', '/v1/items', 'acme')).status).toBe(200);
  } finally {
    child.kill('SIGKILL');
    await fleet?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 240_000);

test('cellctl fleet local refuses bad flags with the fix', async () => {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'cellctl.js'), 'fleet', 'local', '--cells', '0'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code).toBe(2);
  expect(err).toContain('--cells 0: give an integer from 1 to 64');
}, 240_000);
