import { spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { initialMapping, lookup, pinKey } from '../../lib/domain/mapping';
import { pidRunning } from '../../lib/domain/files';
import { connectionLimits, overflowConnections, ROUTER_TASK_MEMORY_MIB } from '../../lib/runtime/router';
import { freePort, routed, startCell, until } from '../support/cells';
import { routerImageConfig } from '../../lib/constructs/isolation';
import { HAPROXY_ADMIN, ROUTER_PORT, STATE_DIR } from '../../lib/constructs/router';
import { exampleFleet, REPO_ROOT, shippedConfigText } from '../support/fleet';

const BIN = path.join(REPO_ROOT, 'bin', 'cellctl.js');
const NOW = { now: '2026-11-29T16:00:00.000Z' };

describe('cellctl router', () => {
  it('local: serves the mapping file, follows its changes, and stops cleanly on SIGTERM', async () => {
    const cells = await Promise.all(['cell-a', 'cell-b'].map((name) => startCell(name)));
    const doc = initialMapping(
      cells.map((c) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const })),
      16384,
      NOW,
    );
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-cli-')), 'mapping.json');
    fs.writeFileSync(file, JSON.stringify(doc));
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, 'router', 'local', '--mapping', file, '--port', String(port), '--debug-headers'], { cwd: REPO_ROOT });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.resume();
    const agent = new http.Agent({ keepAlive: false });
    try {
      await until('the router to listen', async () => out.includes('router listening'), 60_000);
      const key = 'tenant-7';
      expect(await routed(agent, port, key)).toMatchObject({ status: 200, cell: lookup(doc, key).cell, version: 1 });
      const other = lookup(doc, key).cell === 'cell-a' ? 'cell-b' : 'cell-a';
      fs.writeFileSync(file, JSON.stringify(pinKey(doc, key, other, NOW)));
      // The version map is committed last, so once it says 2 every route is version 2's.
      await until('version 2', async () => (await routed(agent, port, key)).version === 2, 60_000);
      expect(await routed(agent, port, key)).toMatchObject({ status: 200, cell: other, version: 2 });
    } finally {
      child.kill('SIGTERM');
    }
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(0);
    expect(out).toContain('router stopped');
    expect((await routed(agent, port, 'tenant-7')).status).toBe(0);
    const stateDir = /state in (\S+?)\)/.exec(out)![1];
    expect(fs.existsSync(stateDir)).toBe(false);
    await Promise.all(cells.map((c) => c.close()));
  }, 180_000);

  /** `cellctl router local` on a one-cell mapping, started by `sh` (its parent) in the background. */
  const startUnderShell = async () => {
    const cell = await startCell('cell-a');
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-cli-')), 'mapping.json');
    fs.writeFileSync(file, JSON.stringify(initialMapping([{ id: 'cell-a', endpoint: cell.endpoint, state: 'active' }], 16384, NOW)));
    const port = await freePort();
    const shell = spawn(
      'sh',
      ['-c', '"$@" & echo "router pid $!"; wait', 'sh', process.execPath, BIN, 'router', 'local', '--mapping', file, '--port', String(port)],
      { cwd: REPO_ROOT },
    );
    let out = '';
    shell.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    shell.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await until('the router to listen', async () => out.includes('router listening'), 60_000);
    const router = Number(/router pid (\d+)/.exec(out)![1]);
    const haproxy = Number(/HAProxy pid (\d+)/.exec(out)![1]);
    const stateDir = /state in (\S+?)\)/.exec(out)![1];
    const agent = new http.Agent({ keepAlive: false });
    expect((await routed(agent, port, 'tenant-1')).status).toBe(200);
    return { cell, shell, port, router, haproxy, stateDir, agent, output: () => out };
  };

  it('local: stops, HAProxy and state folder included, when the process that started it dies', async () => {
    const r = await startUnderShell();
    try {
      // As `npx cellctl router local … & kill $!` does to npx: the parent goes, no signal reaches the router.
      r.shell.kill('SIGKILL');
      await until('the router to exit', async () => !pidRunning(r.router), 60_000);
      expect(r.output()).toMatch(/the process that started this router \(pid \d+\) exited; stopping/);
      expect(r.output()).toContain('router stopped');
      await until('HAProxy to exit', async () => !pidRunning(r.haproxy), 60_000);
      expect((await routed(r.agent, r.port, 'tenant-1')).status).toBe(0);
      expect(fs.existsSync(r.stateDir)).toBe(false);
    } finally {
      for (const pid of [r.router, r.haproxy]) if (pidRunning(pid)) process.kill(pid, 'SIGKILL');
      await r.cell.close();
    }
  }, 180_000);

  it('local: a SIGKILLed router leaves no HAProxy serving and no state folder behind', async () => {
    const r = await startUnderShell();
    try {
      process.kill(r.router, 'SIGKILL'); // nothing of the router runs after this: its watchdog must act
      await until('HAProxy to exit', async () => !pidRunning(r.haproxy), 60_000);
      expect((await routed(r.agent, r.port, 'tenant-1')).status).toBe(0);
      await until('the state folder to be removed', async () => !fs.existsSync(r.stateDir), 60_000);
    } finally {
      for (const pid of [r.router, r.haproxy]) if (pidRunning(pid)) process.kill(pid, 'SIGKILL');
      r.shell.kill('SIGKILL');
      await r.cell.close();
    }
  }, 180_000);

  it('local: says once that an edit without a higher version is ignored, and once, with the fix, that an endpoint does not resolve', async () => {
    const cell = await startCell('cell-a');
    const doc = initialMapping([{ id: 'cell-a', endpoint: cell.endpoint, state: 'active' }], 16384, NOW);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-cli-')), 'mapping.json');
    fs.writeFileSync(file, JSON.stringify(doc));
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, 'router', 'local', '--mapping', file, '--port', String(port)], { cwd: REPO_ROOT });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const lines = (event: string) => out.split('\n').filter((l) => l.includes(`"event":"${event}"`));
    try {
      await until('the router to listen', async () => out.includes('router listening'), 60_000);
      fs.writeFileSync(file, JSON.stringify({ ...pinKey(doc, 'tenant-7', 'cell-a', NOW), version: 1 })); // edited, version not raised
      await until('the ignored edit reported', async () => lines('ignored').length > 0, 60_000);
      // The mapping `init` writes by default names AWS endpoints, which do not resolve here.
      fs.writeFileSync(
        file,
        JSON.stringify({ ...doc, version: 2, cells: { 'cell-a': { ...doc.cells['cell-a'], endpoint: 'http://cell-a.orders.cells.invalid:8080' } } }),
      );
      await until('the unresolvable endpoint reported', async () => lines('rejected').length > 0, 60_000);
      await new Promise((r) => setTimeout(r, 3000)); // six more polls
      expect(lines('ignored')).toHaveLength(1);
      expect(lines('ignored')[0]).toContain('its version 1 is the version in force; raise `version`');
      expect(lines('rejected')).toHaveLength(1);
      expect(JSON.parse(lines('rejected')[0])).toMatchObject({
        version: 2,
        keptVersion: 1,
        hint: expect.stringContaining('`cellctl mapping init --endpoints FILE --force`'),
        problems: [{ message: expect.stringContaining('endpoint host cell-a.orders.cells.invalid does not resolve') }],
      });
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.on('exit', resolve));
      await cell.close();
    }
  }, 180_000);

  it('local: a port already in use is one line, and leaves no state folder behind', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-cli-')), 'mapping.json');
    fs.writeFileSync(file, JSON.stringify(initialMapping([{ id: 'cell-a', endpoint: 'http://127.0.0.1:9001', state: 'active' }], 16384, NOW)));
    const busy = http.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'router-cli-tmp-'));
    try {
      const result = await new Promise<{ status: number | null; stderr: string; stdout: string }>((resolve) => {
        const child = spawn(process.execPath, [BIN, 'router', 'local', '--mapping', file, '--port', String(port)], {
          cwd: REPO_ROOT,
          env: { ...process.env, TMPDIR: tmp },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => {
          stdout += d.toString();
        });
        child.stderr.on('data', (d: Buffer) => {
          stderr += d.toString();
        });
        child.on('exit', (status) => resolve({ status, stdout, stderr }));
      });
      expect(result.status).toBe(1);
      expect(result.stderr).toBe(`error: port ${port} is already in use on 127.0.0.1; stop what is listening there or pick another --port\n`);
      expect(fs.readdirSync(tmp).filter((name) => name.startsWith('cell-router-'))).toEqual([]);
    } finally {
      busy.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('local: refuses fewer --slots than the mapping has cells, before starting anything', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-cli-')), 'mapping.json');
    const cells = ['cell-a', 'cell-b', 'cell-c'].map((id, i) => ({ id, endpoint: `http://127.0.0.1:${9001 + i}`, state: 'active' as const }));
    fs.writeFileSync(file, JSON.stringify(initialMapping(cells, 16384, NOW)));
    const result = spawnSync(process.execPath, [BIN, 'router', 'local', '--mapping', file, '--port', '18999', '--slots', '2'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--slots 2: the mapping names 3 cells; give at least 3');
  });

  it('local: says how to install HAProxy when it is missing', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-cli-')), 'mapping.json');
    fs.writeFileSync(file, JSON.stringify(initialMapping([{ id: 'cell-a', endpoint: 'http://127.0.0.1:9001', state: 'active' }], 16384, NOW)));
    const result = spawnSync(process.execPath, [BIN, 'router', 'local', '--mapping', file, '--port', '18999'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: { ...process.env, PATH: path.dirname(process.execPath) },
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('haproxy is not installed');
    expect(result.stderr).toContain('apt-get install -y haproxy');
  });

  it('config: writes a configuration HAProxy accepts, with its error and map files', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-config-'));
    const result = spawnSync(process.execPath, [BIN, 'router', 'config', '--state-dir', dir, '--out-dir', dir], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(result.status).toBe(0);
    expect(fs.readdirSync(dir).sort()).toEqual([
      '503.http',
      // Each redirect backend's region URL (router.reach), filled by the agent.
      'away.map',
      'buckets.map',
      'cells.map',
      'exact.map',
      'haproxy.cfg',
      'homes.map',
      'hosts.map',
      // The tenant-token key slots, empty unless partitionKey.source is jwt.
      'jwt-key-1.pem',
      'jwt-key-2.pem',
      'jwt-key-3.pem',
      'jwt-key-4.pem',
      'meta.map',
      'prefix.map',
      // A full task's permission to leave its target group (0: stay in).
      'readiness.map',
    ]);
    expect(fs.readFileSync(path.join(dir, 'readiness.map'), 'utf8')).toBe('full-may-leave 0\n');
    const check = spawnSync('haproxy', ['-c', '-f', path.join(dir, 'haproxy.cfg')], { encoding: 'utf8' });
    expect(check.status).toBe(0);
    const config = fs.readFileSync(path.join(dir, 'haproxy.cfg'), 'utf8');
    expect(config).toContain('stats socket ipv4@127.0.0.1:9999 level admin');
    // As many backend slots as the fleet's router.slots (8 cells: the default 64).
    expect(config.match(/^backend slot\d+$/gm)).toHaveLength(64);
    expect(config.match(/^ {2}default-server .* maxconn 67 weight 100$/gm)).toHaveLength(64); // 200 over 3 zonal servers
    // Behind the NLB: PROXY protocol, HTTP/1.1 only, readiness for its health check, limits from the task memory.
    // The serving limit from the task's memory, and the overflow a full task only answers 503 in.
    const { maxConn } = connectionLimits(ROUTER_TASK_MEMORY_MIB);
    expect(config).toContain(`bind 0.0.0.0:8080 proto h1 accept-proxy\n  maxconn ${maxConn + overflowConnections(maxConn)}\n`);
    // The NLB sends the PROXY header on its health-check connections too.
    expect(config).toContain('frontend ready\n  bind 0.0.0.0:8081 accept-proxy\n');
    expect(config).toContain('timeout queue 1000ms');
    // An image that could not serve the fleet is refused.
    const few = spawnSync(process.execPath, [BIN, 'router', 'config', '--slots', '8'], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(few.status).toBe(2);
    expect(few.stderr).toContain('--slots 8: the fleet has 8 cells, and a change needs one slot more; give at least 9');
  });

  it('config: with its defaults, prints what a router group renders into its image and the CellIsolation pack audits (one renderer)', () => {
    const result = spawnSync(process.execPath, [BIN, 'router', 'config'], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(result.status).toBe(0);
    // RouterGroup.haproxyConfig is routerImageConfig's for the same fleet (test/constructs/router/router-image.test.ts).
    expect(result.stdout).toBe(routerImageConfig(exampleFleet()));
    // The task's own settings are the defaults.
    const task = spawnSync(
      process.execPath,
      [
        BIN,
        'router',
        'config',
        '--config',
        'cells.config.ts',
        '--state-dir',
        STATE_DIR,
        '--admin-socket',
        HAPROXY_ADMIN,
        '--port',
        String(ROUTER_PORT),
      ],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    expect(task.stdout).toBe(result.stdout);
  });

  it('config: takes per-cell concurrency, queue timeout and slots from the fleet', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-config-fleet-'));
    const source = shippedConfigText()
      .replace('cellMaxConn: 200,', 'cellMaxConn: 50, slots: 20,')
      .replace('queueTimeoutMs: 1000,', 'queueTimeoutMs: 250,');
    fs.writeFileSync(path.join(dir, 'cells.config.ts'), source);
    fs.copyFileSync(path.join(REPO_ROOT, 'cells.accounts.json'), path.join(dir, 'cells.accounts.json'));
    const result = spawnSync(
      process.execPath,
      [BIN, 'router', 'config', '--config', path.join(dir, 'cells.config.ts'), '--state-dir', dir, '--out-dir', dir],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    expect([result.status, result.stderr]).toEqual([0, expect.any(String)]);
    const config = fs.readFileSync(path.join(dir, 'haproxy.cfg'), 'utf8');
    expect(config.match(/^backend slot\d+$/gm)).toHaveLength(20);
    // The cell's 50 split over one server per zone (the example fleet's regions have 3 zones).
    expect(config.match(/^ {2}default-server .* maxconn 17 weight 100$/gm)).toHaveLength(20);
    expect(config.match(/^ {2}server z\d /gm)).toHaveLength(60);
    expect(config).toContain('timeout queue 250ms');
  });
});
