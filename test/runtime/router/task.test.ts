import { ChildProcess, spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { S3Client } from '@aws-sdk/client-s3';
import { imageContext } from '../../../lib/runtime/images';
import { addCell, initialMapping, lookup, MappingDocument, pinKey } from '../../../lib/domain/mapping';
import { MappingStore, publishMapping } from '../../../lib/adapters/mapping-store';
import { FakeCell, freePorts, load, routed, startCell, startProxyProtocolForwarder, until } from '../../support/cells';
import { REPO_ROOT } from '../../support/fleet';
import { healthCheckGet } from '../../support/nlb';
import { LocalS3, localS3Client, startLocalS3 } from '../../support/s3';

/**
 * The router task as the images run it: HAProxy with the configuration `cellctl router config`
 * generates at image build, and the agent's container entry point (`bin/router-agent.ts` bundled as the
 * image bundles it, configured by environment only), the two sharing a state directory and the runtime API on a loopback port.
 * The agent is killed and started again the way ECS restarts a non-essential container in place.
 */
const NOW = { now: '2026-11-29T16:00:00.000Z' };
const GROUP = 'main';

const exited = (p: ChildProcess) =>
  new Promise<number | null>((resolve) => (p.exitCode !== null ? resolve(p.exitCode) : p.once('exit', (code) => resolve(code))));

describe('the router task (generated HAProxy configuration + the agent entry point)', () => {
  let s3: LocalS3;
  let client: S3Client;
  let store: MappingStore;
  let cells: FakeCell[];
  let haproxy: ChildProcess;
  let nlb: { port: number; close(): Promise<void> };
  let readyPort: number;
  let haproxyPort: number;
  let agentProcess: ChildProcess | undefined;
  let stdout = '';
  let stderr = '';
  let port: number;
  let healthPort: number;
  let adminPort: number;
  let statsPort: number;
  let stateDir: string;
  /** The agent as its image runs it: the bundled file of its image context (lib/runtime/images). */
  let agentBundle: string;
  let v1: MappingDocument;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

  const agentEnv = () => ({
    PATH: process.env.PATH,
    MAPPING_BUCKET: s3.bucket,
    ROUTER_GROUP: GROUP,
    STATE_DIR: stateDir,
    HAPROXY_ADMIN: `127.0.0.1:${adminPort}`,
    HEALTH_PORT: String(healthPort),
    POLL_SECONDS: '1',
    METRICS_SECONDS: '1',
    ALLOW_LOOPBACK_ENDPOINTS: 'true',
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    S3_FORCE_PATH_STYLE: 'true',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
  });
  const startAgent = () => {
    stdout = '';
    agentProcess = spawn(process.execPath, [agentBundle], { cwd: stateDir, env: agentEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    agentProcess.stdout!.on('data', (d) => {
      stdout += d;
    });
    agentProcess.stderr!.on('data', (d) => {
      stderr += d;
    });
  };
  /**
   * The agent's own /ready (`on` = the agent), or HAProxy's, which the NLB checks (`on` = 'haproxy')
   * with the PROXY v2 header first, as it does once the target group has proxy protocol on.
   */
  const health = async (on: 'agent' | 'haproxy' = 'agent'): Promise<{ status: number; body: { ready: boolean; version: number | null } }> => {
    if (on === 'haproxy') {
      const answer = await healthCheckGet(readyPort, '/ready', { proxy: true, timeoutMs: 5000 });
      return { status: answer.status, body: JSON.parse(answer.body) };
    }
    return new Promise((resolve, reject) => {
      http
        .get(`http://127.0.0.1:${healthPort}/ready`, (res) => {
          let body = '';
          res.on('data', (d) => {
            body += d;
          });
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(body) }));
        })
        .on('error', reject);
    });
  };
  const servedBy = async (key: string) => (await routed(agent, port, key)).body;
  const routesLike = async (doc: MappingDocument, keys: readonly string[]) => {
    for (const key of keys) if ((await servedBy(key)) !== lookup(doc, key).cell) return false;
    return true;
  };

  beforeAll(async () => {
    s3 = await startLocalS3();
    client = localS3Client(s3, 1);
    store = new MappingStore(client, s3.bucket);
    cells = await Promise.all(['canary', 'cell-a', 'cell-b', 'cell-c'].map((name) => startCell(name)));
    v1 = initialMapping(
      cells.slice(0, 3).map((c, i) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const, canary: i === 0 })),
      16384,
      NOW,
    );
    await publishMapping(store, v1, { groups: [GROUP], bakeSeconds: 0 });
    [haproxyPort, healthPort, adminPort, readyPort, statsPort] = await freePorts(5);
    // What the HAProxy image's build stage runs (another port, state directory and admin address).
    stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-task-'));
    agentBundle = path.join(stateDir, 'router-agent.js');
    fs.copyFileSync(path.join(imageContext('router-agent'), 'router-agent.js'), agentBundle);
    const config = spawnSync(
      process.execPath,
      [
        path.join(REPO_ROOT, 'bin', 'cellctl.js'),
        'router',
        'config',
        '--config',
        'cells.config.ts',
        '--port',
        String(haproxyPort),
        '--state-dir',
        stateDir,
        '--admin-socket',
        `127.0.0.1:${adminPort}`,
        '--stats-port',
        String(statsPort),
        '--out-dir',
        stateDir,
        // Below this machine's file-descriptor limit (the task's is sized for the default).
        '--max-conn',
        '2000',
        '--ready-port',
        String(readyPort),
      ],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    if (config.status !== 0) throw new Error(`cellctl router config failed: ${config.stderr}`);
    haproxy = spawn('haproxy', ['-f', path.join(stateDir, 'haproxy.cfg'), '-db'], { stdio: 'ignore' });
    // The bind has accept-proxy: clients arrive through a stand-in for the NLB that sends PROXY v2.
    nlb = await startProxyProtocolForwarder(haproxyPort);
    port = nlb.port;
    startAgent();
    await until('the agent to be ready', async () => (await health()).status === 200, 60_000);
  }, 180_000);

  afterAll(async () => {
    agent.destroy();
    agentProcess?.kill('SIGKILL');
    haproxy?.kill('SIGKILL');
    await nlb?.close();
    await Promise.all(cells.map((c) => c.close()));
    client.destroy();
    await s3.stop();
  });

  it('routes every key like the TypeScript lookup once the agent is ready', async () => {
    expect((await health()).body).toMatchObject({ ready: true, version: 1 });
    expect(await health('haproxy')).toMatchObject({ status: 200, body: { ready: true, version: 1 } });
    const keys = Array.from({ length: 300 }, (_, i) => `task-${i}`);
    expect(await routesLike(v1, keys)).toBe(true);
    expect((await routed(agent, port, 'bad key')).status).toBe(400);
  });

  it('takes the client address from the PROXY v2 header: the cell sees it in x-forwarded-for, and https from the listener port', async () => {
    const key = 'proxy-1';
    expect((await routed(agent, port, key)).status).toBe(200);
    const cell = cells.find((c) => c.name === lookup(v1, key).cell)!;
    expect(cell.lastHeaders).toMatchObject({ 'x-forwarded-for': '198.51.100.7', 'x-forwarded-proto': 'https', 'x-tenant-id': key });
    // Without the header (straight to HAProxy, as if proxy protocol were off on the target group) nothing is served.
    expect((await routed(new http.Agent(), haproxyPort, key)).status).toBe(0);
  });

  it('emits the EMF metrics on stdout, and keeps stdout to EMF and JSON log lines', async () => {
    await until('a metrics line once the mapping is applied', async () => stdout.includes('"MappingVersion":1'), 60_000);
    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const metrics = lines.filter((l) => l._aws && l.RouterGroup === GROUP && !l.Cell).pop();
    expect(metrics).toMatchObject({ MappingVersion: 1, RejectedDocuments: 0 });
  });

  it('applies a newer document published to the group, a new cell and a pinned key included', async () => {
    const v2 = pinKey(addCell(v1, { id: 'cell-c', endpoint: cells[3].endpoint }, NOW), 'vip-1', 'cell-c', NOW);
    await publishMapping(store, v2, { groups: [GROUP], bakeSeconds: 0 });
    await until('version 2', async () => (await health()).body.version === v2.version, 60_000);
    expect(await servedBy('vip-1')).toBe('cell-c');
    expect(
      await routesLike(
        v2,
        Array.from({ length: 300 }, (_, i) => `task-${i}`),
      ),
    ).toBe(true);
  });

  it('keeps HAProxy serving while the agent is dead, and a restarted agent serves the last-known-good with S3 down', async () => {
    const version = (await health()).body.version;
    // At most about 800 requests a second: all of them come from the stand-in's one client address,
    // which the task's configuration holds to 20,000 requests per 10 s (429 past it).
    const running = load(4, 4000, async (i) => {
      const answer = await routed(agent, port, `restart-${i % 200}`);
      await new Promise((r) => setTimeout(r, 5));
      return answer;
    });
    agentProcess!.kill('SIGKILL');
    await exited(agentProcess!);
    await new Promise((r) => setTimeout(r, 1000));
    await expect(health()).rejects.toThrow(); // the agent is gone
    // The readiness the NLB checks is HAProxy's: the mapping is still in force, so the task stays in service.
    expect(await health('haproxy')).toMatchObject({ status: 200, body: { ready: true, version } });
    s3.fault({ status: 503, code: 'ServiceUnavailable' });
    try {
      startAgent();
      await until('the restarted agent to be ready', async () => (await health()).status === 200, 60_000);
      expect((await health()).body.version).toBe(version);
      expect(stdout).toContain('"event":"lkg-loaded"');
      // HAProxy did not restart: the log says the agent re-applied its last-known-good.
      await until('the re-apply', async () => stdout.includes('"event":"lkg-reapplied"'), 60_000);
      expect(stdout).not.toContain('"event":"haproxy-restarted"');
    } finally {
      s3.fault(undefined);
    }
    const answers = await running;
    expect(answers.length).toBeGreaterThan(100);
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
  }, 180_000);

  it('exits 0 on SIGTERM, and 2 (no restart helps) when its configuration is missing', async () => {
    agentProcess!.kill('SIGTERM');
    expect(await exited(agentProcess!)).toBe(0);
    const missing = spawnSync(process.execPath, [agentBundle], {
      cwd: stateDir,
      encoding: 'utf8',
      env: { ...agentEnv(), MAPPING_BUCKET: '' },
    });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('MAPPING_BUCKET is not set');
    // A heartbeat a move would take for a dead task's, or no number at all: refused, not silently NaN.
    for (const [name, value] of [
      ['REPORT_SECONDS', '20'],
      ['POLL_SECONDS', 'five'],
    ]) {
      const bad = spawnSync(process.execPath, [agentBundle], {
        cwd: stateDir,
        encoding: 'utf8',
        env: { ...agentEnv(), [name]: value },
        timeout: 60_000,
      });
      expect([bad.status, bad.stderr]).toEqual([2, expect.stringContaining(`router-agent: ${name}=${value} must be a number of seconds in (0, 15]`)]);
    }
    expect(stderr).not.toContain('Error:');
  });
});
