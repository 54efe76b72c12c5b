import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { makeTempDir } from '../../lib/operations/local-fleet/postgres';
import { pidRunning } from '../../lib/domain/files';
import { readFleetFile, startLocalFleet } from '../../lib/operations/local-fleet';
import { until } from '../support/cells';
import { api } from '../support/workload';
import { cellctl } from '../support/cli';

const ROOT = path.join(__dirname, '..', '..');

test('cellctl fleet local: prints the router, mapping and cells, serves the documented curl, and SIGTERM stops every process', async () => {
  const dir = makeTempDir('cells-cli-fleet-');
  const stateDir = path.join(dir, 'state');
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'bin', 'cellctl.js'), 'fleet', 'local', '--cells', '2', '--port', '0', '--state-dir', stateDir],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await until('the fleet to start', async () => out.includes('Ctrl-C or SIGTERM stops the fleet'), 90_000);
    const fleet = readFleetFile(stateDir)!;
    expect(out).toContain(`router      ${fleet.routerUrl}`);
    expect(out).toContain(fleet.mappingFile);
    expect(out).toMatch(/cell-1\s+http:\/\/127\.0\.0\.1:\d+\s+postgres:\/\/127\.0\.0\.1:\d+\/cell\s+\d+\.\d%/);
    expect(out).toContain(`curl -H 'x-tenant-id: acme' -d '{"name":"x"}' ${fleet.routerUrl}/v1/items`);
    // What the curl of docs/getting-started.md sends (form-encoded content type) through the router.
    const response = await fetch(`${fleet.routerUrl}/v1/items`, {
      method: 'POST',
      headers: { 'x-tenant-id': 'acme', 'content-type': 'application/x-www-form-urlencoded' },
      body: '{"name":"x"}',
    });
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

/** Every process descended from `pid` (workloads, PostgreSQL and its backends, HAProxy, watchdogs), from /proc. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  for (let queue = [pid]; queue.length > 0;) {
    const next = children.get(queue.shift()!) ?? [];
    found.push(...next);
    queue.push(...next);
  }
  return found;
}

function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/** `cellctl fleet local` started by `sh` (its parent) in the background, as `cellctl fleet local … &` in a shell. */
async function fleetUnderShell(prefix: string) {
  const dir = makeTempDir(prefix);
  const stateDir = path.join(dir, 'state');
  const shell = spawn(
    'sh',
    [
      '-c',
      '"$@" & echo "fleet pid $!"; wait',
      'sh',
      process.execPath,
      path.join(ROOT, 'bin', 'cellctl.js'),
      'fleet',
      'local',
      '--cells',
      '2',
      '--port',
      '0',
      '--state-dir',
      stateDir,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  shell.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  shell.stderr.on('data', (d: Buffer) => {
    out += d.toString();
  });
  await until('the fleet to start', async () => out.includes('Ctrl-C or SIGTERM stops the fleet'), 90_000);
  const fleetPid = Number(/fleet pid (\d+)/.exec(out)![1]);
  const fleet = readFleetFile(stateDir)!;
  const started = descendants(fleetPid);
  const named = fleet.cells.flatMap((c) => [c.workloadPid!, c.database.pid!]);
  // Each cell's workload and database, HAProxy and a watchdog for each of them, at least.
  expect(named.every((pid) => started.includes(pid))).toBe(true);
  expect(started.filter((pid) => /haproxy/.test(commandLine(pid)))).toHaveLength(1);
  expect(started.filter((pid) => /cell-watchdog/.test(commandLine(pid)))).toHaveLength(2 * 2 + 1);
  return {
    dir,
    stateDir,
    shell,
    fleetPid,
    fleet,
    started,
    output: () => out,
    cleanUp: () => {
      for (const pid of [fleetPid, ...started]) if (pidRunning(pid)) process.kill(pid, 'SIGKILL');
      shell.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('cellctl fleet local stops, every process it started included, when the process that started it dies', async () => {
  const r = await fleetUnderShell('cells-cli-parent-');
  try {
    // As `npx cellctl fleet local … & kill $!` does to npx: the parent goes, no signal reaches the fleet.
    r.shell.kill('SIGKILL');
    await until('the fleet to exit', async () => !pidRunning(r.fleetPid), 60_000);
    expect(r.output()).toContain(`the process that started this fleet (pid ${r.shell.pid}) exited; stopping`);
    expect(r.output()).toContain('fleet stopped');
    await until('every process the fleet started to exit', async () => !r.started.some(pidRunning), 60_000);
    expect((await api(r.fleet.routerUrl, 'GET', '/v1/items', 'acme')).status).toBe(0);
  } catch (error) {
    throw new Error(
      `${(error as Error).message}\noutput:\n${r.output()}\nstill running: ${r.started
        .filter(pidRunning)
        .map((p) => `${p} ${commandLine(p)}`)
        .join('; ')}`,
    );
  } finally {
    r.cleanUp();
  }
}, 300_000);

test('a SIGKILLed cellctl fleet local leaves nothing running: a watchdog stops each workload, database and HAProxy', async () => {
  const r = await fleetUnderShell('cells-cli-killed-');
  try {
    process.kill(r.fleetPid, 'SIGKILL'); // nothing of cellctl runs after this: the watchdogs must act
    await until('every process the fleet started to exit', async () => !r.started.some(pidRunning), 60_000);
    expect((await api(r.fleet.routerUrl, 'GET', '/v1/items', 'acme')).status).toBe(0);
  } catch (error) {
    throw new Error(
      `${(error as Error).message}\nstill running: ${r.started
        .filter(pidRunning)
        .map((p) => `${p} ${commandLine(p)}`)
        .join('; ')}`,
    );
  } finally {
    r.cleanUp();
  }
}, 300_000);

test('a fleet whose cellctl and watchdogs were SIGKILLed is cleaned up by the next start, which reuses its state', async () => {
  const dir = makeTempDir('cells-cli-orphans-');
  const stateDir = path.join(dir, 'state');
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'bin', 'cellctl.js'), 'fleet', 'local', '--cells', '2', '--port', '0', '--state-dir', stateDir],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let fleet: Awaited<ReturnType<typeof startLocalFleet>> | undefined;
  try {
    await until('the fleet to start', async () => out.includes('Ctrl-C or SIGTERM stops the fleet'), 90_000);
    const before = readFleetFile(stateDir)!;
    // Everything of cellctl gone at once (watchdogs included, as a `kill -9` of them all would),
    // leaving its workloads and databases to the next start.
    const watchdogs = descendants(child.pid!).filter((pid) => /cell-watchdog/.test(commandLine(pid)));
    expect(watchdogs.length).toBeGreaterThan(0);
    for (const pid of watchdogs) process.kill(pid, 'SIGKILL');
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
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'cellctl.js'), 'fleet', 'local', '--cells', '0'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code).toBe(2);
  expect(err).toContain('--cells 0: give an integer from 1 to 64');
}, 240_000);

test('cellctl fleet local --cell-zero: cell zero holds every bucket and the existing tenants, prints the way out, and a restart keeps its data', async () => {
  const dir = makeTempDir('cells-cli-zero-');
  const stateDir = path.join(dir, 'state');
  const start = async () => {
    const child = spawn(
      process.execPath,
      [
        path.join(ROOT, 'bin', 'cellctl.js'),
        'fleet',
        'local',
        '--cell-zero',
        '--port',
        '0',
        '--state-dir',
        stateDir,
        ...(fs.existsSync(stateDir) ? [] : ['--cells', '1']),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const run = {
      out: '',
      err: '',
      exited: new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code))),
      stop: async () => {
        child.kill('SIGTERM');
        return run.exited;
      },
    };
    child.stdout.on('data', (d: Buffer) => {
      run.out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      run.err += d.toString();
    });
    await until('the fleet to start', async () => run.out.includes('Ctrl-C or SIGTERM stops the fleet'), 90_000).catch(async (error: Error) => {
      await run.stop();
      throw new Error(`${error.message}\nstdout:\n${run.out}\nstderr:\n${run.err}`);
    });
    return run;
  };
  try {
    const first = await start();
    const fleet = readFleetFile(stateDir)!;
    expect(fleet.cellZero).toBe('zero');
    expect(fleet.cells.map((c) => c.id)).toEqual(['zero', 'cell-1']);
    expect(first.out).toMatch(/^zero \(cell zero\)\s+http:\/\/127\.0\.0\.1:\d+\s+postgres:\/\/127\.0\.0\.1:\d+\/cell\s+100\.0%/m);
    expect(first.out).toMatch(/^cell-1\s+\S+\s+\S+\s+0\.0%/m);
    expect(first.out).toContain(
      `  node bin/cellctl.js cell-zero check --url ${fleet.cells[0].database.url} --sql | psql ${fleet.cells[0].database.url} -v ON_ERROR_STOP=1\n`,
    );
    expect(first.out).toContain(`  node bin/cellctl.js cell-zero retire --local --state-dir ${stateDir}\n`);
    const seeded = await api(fleet.routerUrl, 'GET', '/v1/items', 'existing-1');
    expect([seeded.status, seeded.headers.get('x-cell'), seeded.body.items.length]).toEqual([200, 'zero', 5]);
    expect(await first.stop()).toBe(0);

    // Started again from the same state: the same cells, cell zero's database as it was (not seeded twice).
    const second = await start();
    expect(readFleetFile(stateDir)!.cells.map((c) => c.id)).toEqual(['zero', 'cell-1']);
    const again = await api(readFleetFile(stateDir)!.routerUrl, 'GET', '/v1/items', 'existing-1');
    expect([again.status, again.headers.get('x-cell'), again.body.items.length]).toEqual([200, 'zero', 5]);
    expect(second.err).not.toContain('recreating');
    expect(await second.stop()).toBe(0);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 240_000);

test('cellctl fleet local --detach returns once the fleet serves, which outlives it until fleet local stop; a different start does not replace its data', async () => {
  const dir = makeTempDir('cells-cli-detach-');
  const stateDir = path.join(dir, 'state');
  try {
    const started = await cellctl('fleet', 'local', '--detach', '--cells', '2', '--port', '0', '--state-dir', stateDir);
    expect(started.code).toBe(0);
    const file = readFleetFile(stateDir)!;
    expect(started.out).toContain(
      `fleet running in the background (pid ${file.pid}): router ${file.routerUrl}, state ${stateDir}, output ${stateDir}.log`,
    );
    // The command has returned; the fleet runs on, in a process of its own, and serves.
    expect(file.pid).not.toBe(process.pid);
    expect(pidRunning(file.pid)).toBe(true);
    const served = await api(file.routerUrl, 'GET', '/v1/items', 'tenant-a');
    expect(served.status).toBe(200);
    expect((await cellctl('fleet', 'local', '--detach', '--state-dir', stateDir)).err).toMatch(
      /a fleet already runs from .* \(pid \d+\): stop it first/,
    );
    expect((await cellctl('fleet', 'local', 'stop', '--state-dir', stateDir)).code).toBe(0);
    expect(pidRunning(file.pid)).toBe(false);

    // A start with other options would replace the fleet's databases and mapping: refused without --fresh, nothing deleted.
    const other = await cellctl('fleet', 'local', '--cells', '3', '--port', '0', '--state-dir', stateDir);
    expect(other.code).toBe(1);
    expect(other.err).toContain(
      `${stateDir} holds a fleet of 2 cells, with its databases and mapping; starting 3 cells would replace it: add --fresh to start over`,
    );
    expect(fs.existsSync(path.join(stateDir, 'cells', 'cell-1'))).toBe(true);
    // A directory that is not a fleet's is never emptied.
    const notAFleet = path.join(dir, 'project');
    fs.mkdirSync(notAFleet);
    fs.writeFileSync(path.join(notAFleet, 'README.md'), 'mine');
    const refused = await cellctl('fleet', 'local', '--fresh', '--port', '0', '--state-dir', notAFleet);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(`${notAFleet} is not a local fleet's state directory (it holds README.md): give a new or empty --state-dir`);
    expect(fs.readFileSync(path.join(notAFleet, 'README.md'), 'utf8')).toBe('mine');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(`${stateDir}.log`, { force: true });
  }
}, 240_000);
