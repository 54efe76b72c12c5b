/**
 * npm run bench:router: throughput and latency through the router, through the same HAProxy as a
 * plain proxy to one backend, and direct to that backend — same machine, same run, same pinning
 * (proxies on CPU 0, load generator and backend on CPU 1). Two plain proxies: one with the
 * router's own configuration (global, defaults, logging, the cell backend with its health check)
 * and only the routing rules taken out, which is what the target compares against, and a minimal
 * one for reference. And a floor: the router's configuration whose frontend only computes the
 * DESIGN.md bucket and looks it up, the least any configuration routing by that hash can do. Runs
 * are interleaved over several rounds and medians reported, because this kind of machine varies by
 * ±25% from one run to the next; the proxies' CPU time per request is printed too, as it varies
 * less, and with valgrind installed the instructions per request (2,400 identical requests, one
 * at a time on one connection, health checks off; see `instructionsPerRequest`). Also times applying a document with
 * 16384 buckets and 10,000 overrides. Targets: router within 12% of the floor's instructions per
 * request and >= 0.85x plain-proxy throughput (docs/NOTES: re-based); p99 added latency < 1 ms at
 * half the maximum load; the large document applied in < 1 s.
 *
 * BENCH_RULES=1: instead, what each line of the router's frontend costs (see `ruleCosts`).
 */
import { ChildProcess, spawn, spawnSync } from 'child_process';
import { generateKeyPairSync, sign as cryptoSign } from 'crypto';
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { LoadResult, listening, median, pin, sleep, wrk } from './bench-load';
import { bucketOf, convertToHomes, initialMapping, MappingDocument, pinKey } from '../lib/domain/mapping';
import { PartitionKeySource, tenantMaxConnOf, clientMaxConnPerCellOf } from '../lib/domain/fleet';
import { bucketExpression, keyFetch, MAP_FILES, MappingApplier, NO_MAPPING_BACKEND, RuntimeApi, startLocalRouter } from '../lib/runtime/router';

const DURATION = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const CONNECTIONS = 64;
/**
 * BENCH_JWT=RS256 (or ES256): the tenant from a verified token instead of the x-tenant-id header
 * (partitionKey.source 'jwt'); each counted request carries its tenant's token, signed beforehand.
 */
const JWT = process.env.BENCH_JWT as 'RS256' | 'ES256' | undefined;
const JWT_KEYS = JWT
  ? JWT === 'RS256'
    ? generateKeyPairSync('rsa', { modulusLength: 2048 })
    : generateKeyPairSync('ec', { namedCurve: 'P-256' })
  : undefined;
const KEY: PartitionKeySource = JWT_KEYS
  ? { source: 'jwt', claim: 'tenant', algorithm: JWT!, publicKeys: [JWT_KEYS.publicKey.export({ type: 'spki', format: 'pem' }) as string] }
  : { source: 'header', name: 'x-tenant-id' };
const tokens = new Map<string, string>();
/** The header line that names `key`'s tenant: its token, or the key itself. */
function tenantHeader(key: string): string {
  if (!JWT_KEYS) return `x-tenant-id: ${key}`;
  let token = tokens.get(key);
  if (!token) {
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const unsigned = `${b64({ alg: JWT, typ: 'JWT' })}.${b64({ tenant: key, exp: 4_102_444_800 })}`;
    const signature = cryptoSign(
      'sha256',
      Buffer.from(unsigned),
      JWT === 'ES256' ? { key: JWT_KEYS.privateKey, dsaEncoding: 'ieee-p1363' } : JWT_KEYS.privateKey,
    );
    token = `${unsigned}.${signature.toString('base64url')}`;
    tokens.set(key, token);
  }
  return `authorization: Bearer ${token}`;
}

function start(argv: string[]): ChildProcess {
  return spawn(argv[0], argv.slice(1), { stdio: 'ignore' });
}

/** wrk against `port` with a random tenant key per request (scripts/bench-load.ts); any error or non-2xx fails the run. */
function load(dir: string, port: number, connections: number, paceMs?: number): LoadResult {
  const r = wrk({ dir, port, connections, seconds: DURATION, paceMs });
  if (r.errors > 0) throw new Error(`load against :${port}: ${r.errors} errors or non-2xx`);
  return r;
}

/** CPU time (user + system) a process has used, in microseconds. */
function cpuMicros(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100; // clock ticks, USER_HZ = 100
}

interface Target {
  readonly name: string;
  readonly port: number;
  readonly pid?: number;
}
interface Summary {
  rps: number;
  p50: number;
  p99: number;
  cpuPerRequest?: number;
  runs: number[];
}

/**
 * Each target once per round, in alternating order (ABBA), so slow spells of the machine hit all
 * targets alike; ratios are then taken within a round.
 */
function measure(dir: string, targets: readonly Target[], connections: number, paceMs?: number): Map<string, Summary> {
  const runs = new Map<string, { r: LoadResult; cpu?: number }[]>(targets.map((t) => [t.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const t of round % 2 === 0 ? targets : [...targets].reverse()) {
      const before = t.pid === undefined ? 0 : cpuMicros(t.pid);
      const r = load(dir, t.port, connections, paceMs);
      runs.get(t.name)!.push({ r, cpu: t.pid === undefined ? undefined : (cpuMicros(t.pid) - before) / r.requests });
    }
  }
  return new Map(
    [...runs].map(([name, rs]) => [
      name,
      {
        rps: median(rs.map((x) => x.r.rps)),
        p50: median(rs.map((x) => x.r.p50)),
        p99: median(rs.map((x) => x.r.p99)),
        cpuPerRequest: rs[0].cpu === undefined ? undefined : median(rs.map((x) => x.cpu!)),
        runs: rs.map((x) => x.r.rps),
      },
    ]),
  );
}

/**
 * A copy of the router's state directory and configuration whose frontend listens on `port`;
 * `rules`, when given, replace the frontend's routing rules.
 */
function copyRouter(stateDir: string, to: string, port: number, rules?: string): string {
  fs.cpSync(stateDir, to, { recursive: true, filter: (f) => !f.endsWith('.sock') });
  const config = fs.readFileSync(path.join(to, 'haproxy.cfg'), 'utf8').split(stateDir).join(to);
  const copy =
    rules === undefined
      ? config.replace(/(frontend router\n {2}bind )[^\n]*\n/, `$1127.0.0.1:${port}\n`)
      : config.replace(/(frontend router\n {2}bind )[^\n]*\n[\s\S]*?\n\n/, `$1127.0.0.1:${port}\n${rules}\n\n`);
  if (copy === config) throw new Error('could not derive a proxy from the router configuration');
  fs.writeFileSync(path.join(to, 'haproxy.cfg'), copy);
  return path.join(to, 'haproxy.cfg');
}

const CELL_MAX_CONN = 1000;
const TENANT_MAX_CONN = Number(process.env.BENCH_TENANT_MAX_CONN ?? tenantMaxConnOf(CELL_MAX_CONN));
const COUNTED_CONNECTIONS = Number(process.env.BENCH_COUNTED_CONNECTIONS ?? 1);
/** Tenants the counted requests draw their keys from (BENCH_TENANTS): 100,000 makes nearly every key new, 1,000 a warmed mix where tenants come back. */
const TENANTS = Number(process.env.BENCH_TENANTS ?? 100_000);
const COUNTED_PER_CONNECTION = Number(process.env.BENCH_COUNTED ?? 2400);

/**
 * Keep-alive connections sending an exact number of requests, each with a tenant key drawn from
 * tenant-1…tenant-100000 by a seeded generator. One connection by default
 * (BENCH_COUNTED_CONNECTIONS): with several, how many requests HAProxy handles per wake-up depends
 * on how busy the machine is, and that moved the count by up to 600 per request between runs of
 * one configuration at load average 25. Every configuration counted gets the same requests,
 * none is left half-done when the count stops, and no connection is opened while counting.
 */
class CountingClient {
  static async connect(port: number, connections: number): Promise<CountingClient> {
    const sockets = await Promise.all(
      Array.from(
        { length: connections },
        () =>
          new Promise<net.Socket>((resolve, reject) => {
            const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
            socket.once('error', reject);
          }),
      ),
    );
    return new CountingClient(port, sockets);
  }

  private seed = 42;

  private constructor(
    private readonly port: number,
    private readonly sockets: net.Socket[],
  ) {}

  /** `perConnection` requests on every connection, one at a time per connection; each must be a 200. */
  async send(perConnection: number): Promise<void> {
    await Promise.all(
      this.sockets.map(async (socket) => {
        for (let i = 0; i < perConnection; i++) await this.request(socket, `tenant-${1 + Math.floor(this.random() * TENANTS)}`);
      }),
    );
  }

  /** One request for every tenant, in order, on the first connection (BENCH_WARM=1: counted requests then meet only tenants seen before). */
  async warm(): Promise<void> {
    for (let t = 1; t <= TENANTS; t++) await this.request(this.sockets[0], `tenant-${t}`);
  }

  close(): void {
    this.sockets.forEach((s) => s.destroy());
  }

  /** mulberry32 */
  private random(): number {
    let t = (this.seed = (this.seed + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  private request(socket: net.Socket, key: string): Promise<void> {
    return new Promise((resolve, reject) => {
      let text = '';
      const onData = (d: Buffer) => {
        text += d.toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? NaN);
        if (text.length < end + 4 + length) return;
        socket.off('data', onData);
        socket.off('error', reject);
        if (!text.startsWith('HTTP/1.1 200')) reject(new Error(`counted request for ${key}: ${text.split('\r\n')[0]}`));
        else resolve();
      };
      socket.on('data', onData);
      socket.once('error', reject);
      socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${this.port}\r\n${tenantHeader(key)}\r\n\r\n`);
    });
  }
}

/**
 * User-space instructions HAProxy executes per request with this configuration, counted by
 * callgrind between a reset and a dump around an exact number of requests on connections opened
 * beforehand (`CountingClient`). Unlike time, this hardly varies from run to run, so it shows what a
 * configuration change costs even on a noisy machine.
 */
async function instructionsPerRequest(dir: string, name: string, config: string, port: number): Promise<number> {
  // callgrind_control reaches valgrind through vgdb and says OK whether or not the command arrived in
  // time: on a loaded machine a zeroing or a dump can land late, and the dump then holds start-up or
  // misses requests. A count is kept only when its dump started exactly one stream per request.
  for (let attempt = 1; ; attempt++) {
    const counted = await countOnce(dir, `${name}${attempt > 1 ? `-${attempt}` : ''}`, config, port);
    const requests = COUNTED_CONNECTIONS * COUNTED_PER_CONNECTION;
    if (counted.streams === requests) return counted.instructions / requests;
    process.stderr.write(
      `${name}: the callgrind dump holds ${counted.streams} streams for ${requests} requests (callgrind_control too late on a loaded machine); counting again\n`,
    );
    if (attempt === 3) throw new Error(`${name}: no clean callgrind count in 3 attempts`);
  }
}

/** Streams HAProxy started in a callgrind dump: the calls to `stream_new`, one per request on a keep-alive connection. */
function streamsIn(file: string): number {
  const tree = spawnSync('callgrind_annotate', ['--threshold=100', '--inclusive=yes', '--tree=caller', file], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  }).stdout;
  const block = tree.split(/\n\s*\n/).find((b) => /\*\s+\S*:stream_new \[/.test(b)) ?? '';
  return [...block.matchAll(/^\s*[\d,]+ \([^)]*\)\s+<.*\(([\d,]+)x\)/gm)].reduce((n, m) => n + Number(m[1].replace(/,/g, '')), 0);
}

async function countOnce(dir: string, name: string, config: string, port: number): Promise<{ instructions: number; streams: number }> {
  const out = path.join(dir, `callgrind-${name}`);
  // Under valgrind HAProxy runs tens of times slower: a request can take longer than the router's
  // request timeout to be read, which is a property of valgrind, not of the configuration.
  // Health checks run on a timer, not per request: counted, they would add a share that depends on
  // how fast the loaded machine let the requests through, so the counted copies have none (each
  // server keeps the state the agent left in the server-state file).
  fs.writeFileSync(
    config,
    fs
      .readFileSync(config, 'utf8')
      .replace(/timeout http-request \d+ms/, 'timeout http-request 120000ms')
      .replace(/ check inter \S+ fall \d+ rise \d+/g, ''),
  );
  const valgrind = spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, 'haproxy', '-f', config, '-db'], { stdio: 'ignore' });
  try {
    await listening(port, 180_000);
    const client = await CountingClient.connect(port, COUNTED_CONNECTIONS);
    try {
      // One request on each connection before counting: connection set-up is not a per-request cost.
      await client.send(1);
      if (process.env.BENCH_WARM) await client.warm();
      spawnSync('callgrind_control', ['-z', String(valgrind.pid)]);
      await client.send(COUNTED_PER_CONNECTION);
      spawnSync('callgrind_control', ['-d', String(valgrind.pid)]);
    } finally {
      client.close();
    }
    if (!fs.existsSync(`${out}.1`)) return { instructions: 0, streams: 0 };
    // BENCH_CALLGRIND_DIR=DIR: keep each count's callgrind output there, for callgrind_annotate.
    if (process.env.BENCH_CALLGRIND_DIR)
      fs.copyFileSync(`${out}.1`, path.join(process.env.BENCH_CALLGRIND_DIR, `callgrind-${name}-${TENANTS}${process.env.BENCH_WARM ? '-warm' : ''}`));
    const summary = /^summary: (\d+)$/m.exec(fs.readFileSync(`${out}.1`, 'utf8'));
    if (!summary) throw new Error(`no callgrind summary in ${out}.1`);
    const streams = streamsIn(`${out}.1`);
    if (process.env.BENCH_VERBOSE) process.stderr.write(`${name}: ${summary[1]} instructions, ${streams} streams\n`);
    return { instructions: Number(summary[1]), streams };
  } finally {
    // Gone before the next count binds the same port.
    const exited = new Promise((resolve) => valgrind.once('exit', resolve));
    if (valgrind.exitCode === null && valgrind.signalCode === null) valgrind.kill('SIGKILL');
    await exited;
  }
}

/**
 * BENCH_RULES=1 npm run bench:router: what each line of the router frontend costs, in instructions per request
 * (callgrind): the router's frontend, then the same frontend with one line taken out at a time,
 * and the floor and the plain proxy for reference. Only lines that do not decide the route are
 * taken out (bind, maxconn, the routing rules and the line keeping a tenant's bucket stay).
 */
async function ruleCosts(dir: string, stateDir: string, bucketOnly: (to: string) => string): Promise<void> {
  if (spawnSync('valgrind', ['--version']).error) throw new Error('BENCH_RULES needs valgrind: apt-get install -y valgrind');
  const config = fs.readFileSync(path.join(stateDir, 'haproxy.cfg'), 'utf8');
  const frontend = /frontend router\n {2}bind [^\n]*\n([\s\S]*?)\n\n/.exec(config)![1].split('\n');
  let port = 19100;
  const count = async (name: string, rules?: (to: string) => string) => {
    const to = path.join(dir, `rules-${port}`);
    const copy = copyRouter(stateDir, to, port, rules?.(to));
    return instructionsPerRequest(dir, name, copy, port++);
  };
  const router = await count('router');
  const rows: [string, number][] = [['router (every line)', router]];
  // BENCH_RULES=router: the router alone; BENCH_RULES=<regex>: only the lines it matches.
  const routerOnly = process.env.BENCH_RULES === 'router';
  const only = process.env.BENCH_RULES === '1' ? undefined : new RegExp(routerOnly ? '^$' : process.env.BENCH_RULES!);
  for (const [i, line] of frontend.entries()) {
    // The bucket kept in gpt0 is the route of a key seen before: without the line setting it, requests have
    // none; the key's capture is what every rule reads the key from.
    if (
      /^\s*(maxconn|use_backend|default_backend|capture request header)\b|sc-set-gpt0|track-sc0|http-request capture/.test(line) ||
      (only && !only.test(line))
    )
      continue;
    // A line whose removal leaves no clean count (the log-format line: its dumps hold no stream) is reported, not fatal.
    const without = await count(`without-${i}`, (to) =>
      frontend
        .filter((_, j) => j !== i)
        .join('\n')
        .split(stateDir)
        .join(to),
    ).catch((e: Error) => {
      process.stderr.write(`not counted: ${e.message}\n`);
      return NaN;
    });
    rows.push([`without \`${line.trim().slice(0, 140)}\``, without]);
    process.stderr.write(`${Math.round(router - without)}\t${line.trim()}\n`);
  }
  if (!routerOnly) rows.push(['floor', await count('floor', bucketOnly)], ['plain', await count('plain', () => '  default_backend slot0')]);
  process.stdout.write('| configuration | instructions/request | the line costs |\n|---|---|---|\n');
  for (const [name, n] of rows)
    process.stdout.write(`| ${name} | ${Math.round(n)} | ${name.startsWith('without') ? Math.round(router - n) : ''} |\n`);
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-router-'));
  // The backend: an HAProxy answering 200 itself, so the backend is never the bottleneck.
  const backendCfg = path.join(dir, 'backend.cfg');
  fs.writeFileSync(
    backendCfg,
    'global\n  maxconn 4000\ndefaults\n  mode http\n  timeout client 30s\n  timeout server 30s\n  timeout connect 2s\nfrontend f\n  bind 127.0.0.1:19001\n  bind 127.0.0.2:19001\n  bind 127.0.0.3:19001\n  bind 127.0.0.4:19001\n  http-request return status 200 content-type text/plain string ok\n',
  );
  const plainCfg = path.join(dir, 'plain.cfg');
  fs.writeFileSync(
    plainCfg,
    'global\n  maxconn 4000\ndefaults\n  mode http\n  timeout client 30s\n  timeout server 30s\n  timeout connect 2s\n  option http-keep-alive\nfrontend f\n  bind 127.0.0.1:19002\n  default_backend b\nbackend b\n  server s 127.0.0.1:19001 maxconn 1000\n',
  );
  const processes = [start(pin(1, ['haproxy', '-f', backendCfg, '-db'])), start(pin(0, ['haproxy', '-f', plainCfg, '-db']))];
  // Whatever happens, leave no HAProxy behind.
  process.on('exit', () => {
    processes.forEach((p) => p.kill('SIGKILL'));
    // The configurations, maps and callgrind outputs (several MB per counted configuration).
    fs.rmSync(dir, { recursive: true, force: true });
  });
  let doc: MappingDocument = initialMapping(
    [
      // One backend on four loopback addresses: a mapping's cells each have their own endpoint.
      { id: 'canary', endpoint: 'http://127.0.0.1:19001', state: 'active', canary: true },
      ...['cell-a', 'cell-b', 'cell-c'].map((id, i) => ({ id, endpoint: `http://127.0.0.${i + 2}:19001`, state: 'active' as const })),
    ],
    16384,
    { now: new Date().toISOString() },
  );
  doc = pinKey(doc, 'vip-1', 'cell-a', { now: doc.createdAt });
  // BENCH_FREEZE=1: moves' freezes in force (100 frozen tenants and 4 frozen buckets the load never
  // sends), to measure what the freeze costs everyone else.
  if (process.env.BENCH_FREEZE) {
    const sent = new Set(Array.from({ length: 100_000 }, (_, i) => bucketOf(`tenant-${i + 1}`, doc.bucketCount)));
    const unsent = Array.from({ length: doc.bucketCount }, (_, b) => b)
      .filter((b) => !sent.has(b))
      .slice(0, 4);
    doc = { ...doc, freeze: { exact: Array.from({ length: 100 }, (_, i) => `moving-${i}`), buckets: unsent.map((b) => ({ from: b, to: b })) } };
  }
  // BENCH_HOMES=1: home tables (docs/capacity.md, "Home regions"): a second table for keys that start
  // with `tenant-1` (about a ninth of the load), and the router's homes map lookup on every request.
  const homes = Boolean(process.env.BENCH_HOMES);
  if (homes) {
    const tables = [
      { regions: ['us-east-1'], prefixes: [] },
      { regions: ['eu-west-1'], prefixes: ['tenant-1'] },
    ];
    doc = convertToHomes(doc, { tables }, () => 'us-east-1', { now: doc.createdAt });
  }
  const mappingFile = path.join(dir, 'mapping.json');
  fs.writeFileSync(mappingFile, JSON.stringify(doc));
  // The router's HAProxy starts pinned to CPU 0 exactly like the plain proxy (same thread count).
  const pinned = path.join(dir, 'haproxy-cpu0');
  fs.writeFileSync(pinned, `#!/bin/sh\nexec ${pin(0, ['haproxy']).join(' ')} "$@"\n`, { mode: 0o755 });
  const router = await startLocalRouter({
    mappingFile,
    port: 19003,
    partitionKey: KEY,
    bucketCount: 16384,
    homeTables: homes,
    healthCheckPath: '/',
    log: () => undefined,
    cellMaxConn: CELL_MAX_CONN,
    haproxyBinary: pinned,
    // The per-tenant cap on requests in flight, as a fleet has it by default (half the cell's slots);
    // BENCH_TENANT_MAX_CONN=N another cap, 0 none (BENCH_RULES=sc0_trackers costs its line).
    // One client address's part of it, as a fleet has it by default (half the tenant's share).
    ...(TENANT_MAX_CONN > 0 ? { tenantMaxConn: TENANT_MAX_CONN, clientMaxConnPerCell: clientMaxConnPerCellOf(TENANT_MAX_CONN) } : {}),
  });
  router.stopAgent();
  process.on('exit', () => void router.stop());
  await sleep(1500);

  // The same HAProxy configuration as the router, routing rules taken out: every request to the
  // first cell's backend (address and state from the router's saved server state).
  const routerPid = Number(/Pid: (\d+)/.exec(await new RuntimeApi(path.join(router.stateDir, 'admin.sock')).send('show info'))?.[1]);
  const sameCfg = copyRouter(router.stateDir, path.join(dir, 'plain-same'), 19004, '  default_backend slot0');
  const same = start(pin(0, ['haproxy', '-f', sameCfg, '-db']));
  processes.push(same);
  // The floor: a frontend that only computes the DESIGN.md bucket and looks it up (no key check, no
  // overrides). Only what the router does beyond this can a configuration still make cheaper.
  const bucketOnly = (to: string) =>
    `  use_backend %[${keyFetch(KEY)},${bucketExpression(16384)},map_ip(${to}/${MAP_FILES.buckets})]\n  default_backend ${NO_MAPPING_BACKEND}`;
  const floorCfg = copyRouter(router.stateDir, path.join(dir, 'floor'), 19007, bucketOnly(path.join(dir, 'floor')));
  const floor = start(pin(0, ['haproxy', '-f', floorCfg, '-db']));
  processes.push(floor);
  await sleep(1000);

  // Counting instructions (BENCH_RULES) needs valgrind only; the throughput runs need wrk.
  if (process.env.BENCH_RULES) {
    await ruleCosts(dir, router.stateDir, bucketOnly);
    await router.stop();
    processes.forEach((p) => p.kill('SIGTERM'));
    return;
  }
  if (spawnSync('wrk', ['-v']).error) throw new Error('wrk is not installed: apt-get install -y wrk');
  const full = measure(
    dir,
    [
      { name: 'direct', port: 19001 },
      { name: 'plain-min', port: 19002, pid: processes[1].pid },
      { name: 'plain', port: 19004, pid: same.pid },
      { name: 'router', port: 19003, pid: routerPid },
      { name: 'floor', port: 19007, pid: floor.pid },
    ],
    CONNECTIONS,
  );
  const plain = full.get('plain')!;
  const routed = full.get('router')!;
  // Half of the plain proxy's maximum: connections each waiting 2 ms on average between requests.
  const half = Math.round(plain.rps / 2);
  // Each paced connection sends one request per (2 ms + its latency): calibrate the connection
  // count on the plain proxy so the offered load really is half the maximum.
  const calibration = load(dir, 19004, Math.max(1, Math.round((half * 2) / 1000)), 2);
  const paced = Math.max(1, Math.round(((half * 2) / 1000) * (half / calibration.rps)));
  const halfLoad = measure(
    dir,
    [
      { name: 'plain', port: 19004 },
      { name: 'router', port: 19003 },
    ],
    paced,
    2,
  );

  // The same two configurations under callgrind, each on its own port: instructions per request.
  let instructions: { plain: number; router: number; floor: number } | undefined;
  if (!spawnSync('valgrind', ['--version']).error) {
    const plainCopy = copyRouter(router.stateDir, path.join(dir, 'plain-count'), 19005, '  default_backend slot0');
    const routerCopy = copyRouter(router.stateDir, path.join(dir, 'router-count'), 19006);
    const floorCopy = copyRouter(router.stateDir, path.join(dir, 'floor-count'), 19008, bucketOnly(path.join(dir, 'floor-count')));
    instructions = {
      plain: await instructionsPerRequest(dir, 'plain', plainCopy, 19005),
      router: await instructionsPerRequest(dir, 'router', routerCopy, 19006),
      floor: await instructionsPerRequest(dir, 'floor', floorCopy, 19008),
    };
  }

  // Applying a large document: 16384 buckets and 10,000 exact overrides.
  const api = new RuntimeApi(path.join(router.stateDir, 'admin.sock'));
  const applier = new MappingApplier(api, { stateDir: router.stateDir, slots: 16, allowLoopback: true });
  const exact: Record<string, string> = {};
  for (let i = 0; i < 10_000; i++) exact[`tenant-${i}`] = ['cell-a', 'cell-b', 'cell-c'][i % 3];
  const big = { ...doc, version: doc.version + 1, overrides: { ...doc.overrides, exact } };
  const t0 = process.hrtime.bigint();
  await applier.apply(big);
  const applyMs = Number(process.hrtime.bigint() - t0) / 1e6;

  await router.stop();
  processes.forEach((p) => p.kill('SIGTERM'));

  const us = (x?: number) => (x === undefined ? '' : x.toFixed(1));
  const rows: [string, Summary][] = [
    ['direct to backend', full.get('direct')!],
    ['plain HAProxy, minimal configuration', full.get('plain-min')!],
    ["plain HAProxy, the router's configuration without routing", plain],
    ['router (key check, sha2 bucket, 3 map lookups)', routed],
    ['floor: the sha2 bucket and its lookup only', full.get('floor')!],
    [`plain proxy (router's configuration), paced to ~${half} req/s`, halfLoad.get('plain')!],
    [`router, paced to ~${half} req/s`, halfLoad.get('router')!],
  ];
  process.stdout.write(`| path | req/s (median) | p50 (ms) | p99 (ms) | proxy CPU µs/req | req/s per round |\n|---|---|---|---|---|---|\n`);
  for (const [name, r] of rows) process.stdout.write(`| ${name} | ${r.rps} | ${r.p50} | ${r.p99} | ${us(r.cpuPerRequest)} | ${r.runs.join(' ')} |\n`);
  const minimal = full.get('plain-min')!;
  const perRound = routed.runs.map((rps, i) => rps / plain.runs[i]);
  process.stdout.write(
    `\nrouter / plain throughput: ${median(perRound).toFixed(2)}x, median of the per-round ratios (target >= 0.85x); rounds: ${perRound.map((r) => r.toFixed(2)).join(' ')}\n`,
  );
  const floorRounds = full.get('floor')!.runs.map((rps, i) => rps / plain.runs[i]);
  process.stdout.write(
    `floor / plain throughput: ${median(floorRounds).toFixed(2)}x (what computing the DESIGN.md bucket alone leaves); CPU per request ${(full.get('floor')!.cpuPerRequest! / plain.cpuPerRequest!).toFixed(2)}x\n`,
  );
  process.stdout.write(
    `ratio of the medians: ${(routed.rps / plain.rps).toFixed(2)}x; against the minimal plain proxy ${(routed.rps / minimal.rps).toFixed(2)}x\n`,
  );
  process.stdout.write(
    `router / plain CPU per request: ${(routed.cpuPerRequest! / plain.cpuPerRequest!).toFixed(2)}x (${us(routed.cpuPerRequest)} vs ${us(plain.cpuPerRequest)} µs)\n`,
  );
  process.stdout.write(
    instructions
      ? `user-space instructions per request (callgrind): router ${Math.round(instructions.router)}, floor ${Math.round(instructions.floor)}, plain ${Math.round(instructions.plain)} (router ${(instructions.router / instructions.plain).toFixed(2)}x, floor ${(instructions.floor / instructions.plain).toFixed(2)}x the plain proxy; router ${(instructions.router / instructions.floor).toFixed(3)}x the floor, target <= 1.12x)\n`
      : 'user-space instructions per request: skipped, valgrind is not installed (apt-get install -y valgrind)\n',
  );
  process.stdout.write(
    `p99 added at half load: ${(halfLoad.get('router')!.p99 - halfLoad.get('plain')!.p99).toFixed(2)} ms over the plain proxy (target < 1 ms)\n`,
  );
  process.stdout.write(`apply 16384 buckets + 10,000 overrides: ${applyMs.toFixed(0)} ms (target < 1000 ms)\n`);
  process.stdout.write(
    `wrk, 1 thread, ${CONNECTIONS} connections (paced runs: ${paced} connections, each waiting 0-4 ms at random between requests), ${ROUNDS} interleaved rounds of ${DURATION} s, random tenant keys; proxies pinned to CPU 0, wrk and backend to CPU 1; ${os.cpus().length} cores\n`,
  );
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${(error as Error).stack}\n`);
    process.exit(1);
  },
);
