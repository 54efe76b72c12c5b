import { ChildProcess, spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { S3Client } from '@aws-sdk/client-s3';
import { addCell, initialMapping, lookup, MappingDocument, pinKey } from '../../lib/mapping';
import { MappingStore, publishMapping } from '../../lib/mapping-store';
import { FakeCell, freePort, load, routed, startCell, until } from '../support/cells';
import { REPO_ROOT } from '../support/fleet';
import { LocalS3, localS3Client, startLocalS3 } from '../support/s3';

/**
 * The router task as the images run it: HAProxy with the configuration `cellctl router config`
 * generates at image build, and the agent's container entry point (`bin/router-agent.ts`, configured
 * by environment only), the two sharing a state directory and the runtime API on a loopback port.
 * The agent is killed and started again the way ECS restarts a non-essential container in place.
 */
const NOW = { now: '2026-11-29T16:00:00.000Z' };
const GROUP = 'main';

const exited = (p: ChildProcess) => new Promise<number | null>((resolve) => (p.exitCode !== null ? resolve(p.exitCode) : p.once('exit', (code) => resolve(code))));

describe('the router task (generated HAProxy configuration + the agent entry point)', () => {
  let s3: LocalS3;
  let client: S3Client;
  let store: MappingStore;
  let cells: FakeCell[];
  let haproxy: ChildProcess;
  let agentProcess: ChildProcess | undefined;
  let stdout = '';
  let stderr = '';
  let port: number;
  let healthPort: number;
  let adminPort: number;
  let stateDir: string;
  let v1: MappingDocument;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

  const agentEnv = () => ({
    PATH: process.env.PATH,
    MAPPING_BUCKET: s3.bucket, ROUTER_GROUP: GROUP, STATE_DIR: stateDir, HAPROXY_ADMIN: `127.0.0.1:${adminPort}`,
    HEALTH_PORT: String(healthPort), POLL_SECONDS: '1', METRICS_SECONDS: '1',
    AWS_ENDPOINT_URL_S3: s3.endpoint, S3_FORCE_PATH_STYLE: 'true', AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER',
  });
  const startAgent = () => {
    stdout = '';
    agentProcess = spawn(process.execPath, ['--require', 'tsx/cjs', 'bin/router-agent.ts'], { cwd: REPO_ROOT, env: agentEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    agentProcess.stdout!.on('data', (d) => { stdout += d; });
    agentProcess.stderr!.on('data', (d) => { stderr += d; });
  };
  const health = () => new Promise<{ status: number; body: { ready: boolean; version: number | null } }>((resolve, reject) => {
    http.get(`http://127.0.0.1:${healthPort}/ready`, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(body) }));
    }).on('error', reject);
  });
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
    v1 = initialMapping(cells.slice(0, 3).map((c, i) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const, canary: i === 0 })), 16384, NOW);
    await publishMapping(store, v1, { groups: [GROUP], bakeSeconds: 0 });
    [port, healthPort, adminPort] = [await freePort(), await freePort(), await freePort()];
    // What the HAProxy image's build stage runs (another port, state directory and admin address).
    stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-task-'));
    const config = spawnSync(process.execPath, [
      path.join(REPO_ROOT, 'bin', 'cellctl.js'), 'router', 'config', '--config', 'cells.config.ts', '--port', String(port),
      '--state-dir', stateDir, '--admin-socket', `127.0.0.1:${adminPort}`, '--stats-port', String(await freePort()), '--out-dir', stateDir,
    ], { cwd: REPO_ROOT, encoding: 'utf8' });
    if (config.status !== 0) throw new Error(`cellctl router config failed: ${config.stderr}`);
    haproxy = spawn('haproxy', ['-f', path.join(stateDir, 'haproxy.cfg'), '-db'], { stdio: 'ignore' });
    startAgent();
    await until('the agent to be ready', async () => (await health()).status === 200, 30_000);
  }, 60_000);

  afterAll(async () => {
    agent.destroy();
    agentProcess?.kill('SIGKILL');
    haproxy?.kill('SIGKILL');
    await Promise.all(cells.map((c) => c.close()));
    client.destroy();
    await s3.stop();
  });

  it('routes every key like the TypeScript lookup once the agent is ready', async () => {
    expect((await health()).body).toMatchObject({ ready: true, version: 1 });
    const keys = Array.from({ length: 300 }, (_, i) => `task-${i}`);
    expect(await routesLike(v1, keys)).toBe(true);
    expect((await routed(agent, port, 'bad key')).status).toBe(400);
  });

  it('emits the EMF metrics on stdout, and keeps stdout to EMF and JSON log lines', async () => {
    await until('a metrics line', async () => stdout.includes('"CloudWatchMetrics"'), 10_000);
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
    const metrics = lines.find((l) => l._aws && l.RouterGroup === GROUP && !l.Cell);
    expect(metrics).toMatchObject({ MappingVersion: 1, RejectedDocuments: 0 });
  });

  it('applies a newer document published to the group, a new cell and a pinned key included', async () => {
    const v2 = pinKey(addCell(v1, { id: 'cell-c', endpoint: cells[3].endpoint }, NOW), 'vip-1', 'cell-c', NOW);
    await publishMapping(store, v2, { groups: [GROUP], bakeSeconds: 0 });
    await until('version 2', async () => (await health()).body.version === v2.version, 15_000);
    expect(await servedBy('vip-1')).toBe('cell-c');
    expect(await routesLike(v2, Array.from({ length: 300 }, (_, i) => `task-${i}`))).toBe(true);
  });

  it('keeps HAProxy serving while the agent is dead, and a restarted agent serves the last-known-good with S3 down', async () => {
    const version = (await health()).body.version;
    const running = load(4, 4000, (i) => routed(agent, port, `restart-${i % 200}`));
    agentProcess!.kill('SIGKILL');
    await exited(agentProcess!);
    await new Promise((r) => setTimeout(r, 1000));
    await expect(health()).rejects.toThrow(); // nobody answers readiness: the NLB would stop new flows
    s3.fault({ status: 503, code: 'ServiceUnavailable' });
    try {
      startAgent();
      await until('the restarted agent to be ready', async () => (await health()).status === 200, 30_000);
      expect((await health()).body.version).toBe(version);
      expect(stdout).toContain('"event":"lkg-loaded"');
      // HAProxy did not restart: the log says the agent re-applied its last-known-good.
      await until('the re-apply', async () => stdout.includes('"event":"lkg-reapplied"'), 5000);
      expect(stdout).not.toContain('"event":"haproxy-restarted"');
    } finally {
      s3.fault(undefined);
    }
    const answers = await running;
    expect(answers.length).toBeGreaterThan(100);
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
  }, 40_000);

  it('exits 0 on SIGTERM, and 2 (no restart helps) when its configuration is missing', async () => {
    agentProcess!.kill('SIGTERM');
    expect(await exited(agentProcess!)).toBe(0);
    const missing = spawnSync(process.execPath, ['--require', 'tsx/cjs', 'bin/router-agent.ts'], {
      cwd: REPO_ROOT, encoding: 'utf8', env: { ...agentEnv(), MAPPING_BUCKET: '' },
    });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('MAPPING_BUCKET is not set');
    expect(stderr).not.toContain('Error:');
  });
});
