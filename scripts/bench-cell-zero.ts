/**
 * npm run bench:cell-zero: what putting the router in front of an existing service (cell zero)
 * costs and risks, on this machine (docs/cell-zero.md, "What the router costs cell zero").
 *
 * 1. Added latency: wrk against the existing service directly and through a local router whose
 *    mapping sends every bucket to it (adoptionMapping), interleaved rounds, medians of p50/p99 and
 *    requests per second, errors counted. The router's HAProxy on CPU 0, wrk and the service on CPU 1.
 * 2. Failures, each under a steady load of keep-alive clients through the router, answers counted:
 *    the mapping source failing (an invalid document, then none), the mapping agent stopping, and
 *    one of two router groups dying (its HAProxy killed) while clients spread over both as the NLB does.
 *
 * The existing service is a small Node HTTP server answering JSON (a stand-in: the added cost is
 * the router's, whatever the service does).
 */
import { ChildProcess, spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { LoadResult, listening, median, pin, sleep, wrk } from './bench-load';
import { adoptionMapping } from '../lib/domain/mapping';
import { PartitionKeySource } from '../lib/domain/fleet';
import { LocalRouter, RuntimeApi, startLocalRouter } from '../lib/runtime/router';

const DURATION = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const CONNECTIONS = 16;
const FAILURE_SECONDS = Number(process.env.BENCH_FAILURE_SECONDS ?? 4);
const KEY: PartitionKeySource = { source: 'header', name: 'x-tenant-id' };
const SERVICE_PORT = 19101;

/** Status of one GET through `agent`, 0 when the connection failed or was cut. */
function get(agent: http.Agent, port: number, key: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/items', headers: { 'x-tenant-id': key }, agent, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
      res.on('error', () => resolve(0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

interface Tally {
  readonly [status: string]: number;
}

/**
 * `workers` clients with keep-alive for `seconds`, each request to `portOf(i)`; `during` runs one
 * second in. Returns the answers by status per port.
 */
async function underLoad(workers: number, seconds: number, portOf: (i: number) => number, during: () => Promise<void>): Promise<Map<number, Tally>> {
  const tallies = new Map<number, Record<string, number>>();
  const agent = new http.Agent({ keepAlive: true, maxSockets: workers * 2 });
  const until = Date.now() + seconds * 1000;
  let sent = 0;
  const loops = Array.from({ length: workers }, async (_, w) => {
    while (Date.now() < until) {
      const port = portOf(sent++);
      const status = await get(agent, port, `tenant-${w}-${sent}`);
      const t = tallies.get(port) ?? {};
      t[status] = (t[status] ?? 0) + 1;
      tallies.set(port, t);
    }
  });
  await sleep(1000);
  await during();
  await Promise.all(loops);
  agent.destroy();
  return tallies;
}

const show = (t: Tally | undefined) =>
  Object.entries(t ?? {})
    .map(([s, n]) => `${s === '0' ? 'failed' : s}: ${n}`)
    .join(', ');

async function startRouter(dir: string, name: string, port: number, mappingFile: string): Promise<LocalRouter> {
  const pinned = path.join(dir, 'haproxy-cpu0');
  if (!fs.existsSync(pinned)) fs.writeFileSync(pinned, `#!/bin/sh\nexec ${pin(0, ['haproxy']).join(' ')} "$@"\n`, { mode: 0o755 });
  fs.mkdirSync(path.join(dir, name), { recursive: true });
  const router = await startLocalRouter({
    mappingFile,
    port,
    partitionKey: KEY,
    bucketCount: 16384,
    healthCheckPath: '/health',
    log: () => undefined,
    haproxyBinary: pinned,
    pollMs: 200,
    zones: 1,
    stateDir: path.join(dir, name),
    retryUnappliableMs: 1000,
  });
  await listening(port, 30_000);
  return router;
}

async function main() {
  if (spawnSync('wrk', ['-v']).error) throw new Error('wrk is not installed: apt-get install -y wrk');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cell-zero-'));
  const processes: ChildProcess[] = [];
  const haproxyPids: number[] = [];
  process.on('exit', () => {
    processes.forEach((p) => p.kill('SIGKILL'));
    haproxyPids.forEach((pid) => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    });
    fs.rmSync(dir, { recursive: true, force: true });
  });
  // The existing service, in its own process on CPU 1.
  const service = `require('http').createServer((q, s) => { if (q.url === '/health') return s.end('ok'); s.writeHead(200, { 'content-type': 'application/json' }); s.end(JSON.stringify({ items: [], tenant: q.headers['x-tenant-id'] })); }).listen(${SERVICE_PORT}, '127.0.0.1')`;
  const argv = pin(1, [process.execPath, '-e', service]);
  processes.push(spawn(argv[0], argv.slice(1), { stdio: 'ignore' }));
  await listening(SERVICE_PORT, 30_000);

  const mappingFile = path.join(dir, 'mapping.json');
  const doc = adoptionMapping({ id: 'zero', endpoint: `http://127.0.0.1:${SERVICE_PORT}`, state: 'active' }, [], 16384, {
    now: new Date().toISOString(),
  });
  fs.writeFileSync(mappingFile, JSON.stringify(doc));
  const a = await startRouter(dir, 'group-a', 19102, mappingFile);
  const pidA = Number((await new RuntimeApi(path.join(a.stateDir, 'admin.sock')).info()).Pid);
  haproxyPids.push(pidA);
  await sleep(1000);

  // 1. Added latency, interleaved rounds.
  const runs: Record<'direct' | 'router', LoadResult[]> = { direct: [], router: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of (round % 2 === 0 ? ['direct', 'router'] : ['router', 'direct']) as ('direct' | 'router')[]) {
      // Paced: each connection waits 0-4 ms at random between requests.
      runs[name].push(
        wrk({ dir, port: name === 'direct' ? SERVICE_PORT : 19102, connections: CONNECTIONS, seconds: DURATION, path: '/items', seed: 7, paceMs: 2 }),
      );
    }
  }
  const summary = (rs: LoadResult[]) => ({
    rps: median(rs.map((r) => r.rps)),
    p50: median(rs.map((r) => r.p50)),
    p99: median(rs.map((r) => r.p99)),
    errors: rs.reduce((n, r) => n + r.errors, 0),
  });
  const direct = summary(runs.direct);
  const routed = summary(runs.router);
  const out = (s: string) => process.stdout.write(`${s}\n`);
  out(
    `wrk, 1 thread, ${CONNECTIONS} connections each waiting 0-4 ms at random between requests, ${ROUNDS} interleaved rounds of ${DURATION} s, random tenant keys; router on CPU 0, wrk and the service on CPU 1; ${os.cpus().length} cores`,
  );
  out('path                    req/s    p50 ms   p99 ms   errors');
  for (const [name, s] of [
    ['direct to the service', direct],
    ['through the router', routed],
  ] as const) {
    out(`${name.padEnd(22)}  ${String(s.rps).padStart(6)}   ${s.p50.toFixed(2).padStart(6)}   ${s.p99.toFixed(2).padStart(6)}   ${s.errors}`);
  }
  out(`added by the router: p50 +${(routed.p50 - direct.p50).toFixed(2)} ms, p99 +${(routed.p99 - direct.p99).toFixed(2)} ms`);

  // 2. Failures, under load through the router.
  out(`\nfailures, ${CONNECTIONS} keep-alive clients through the router for ${FAILURE_SECONDS} s each, the failure injected after 1 s:`);
  const invalid = await underLoad(
    CONNECTIONS,
    FAILURE_SECONDS,
    () => 19102,
    async () => {
      fs.writeFileSync(mappingFile, '{"schemaVersion": 1, "version": 99, "cells": {');
      await sleep(1000);
      fs.rmSync(mappingFile);
    },
  );
  out(`mapping source fails (invalid document, then none): ${show(invalid.get(19102))}`);
  fs.writeFileSync(mappingFile, JSON.stringify(doc));
  const agentStopped = await underLoad(
    CONNECTIONS,
    FAILURE_SECONDS,
    () => 19102,
    async () => {
      a.stopAgent();
    },
  );
  out(`mapping agent stops (HAProxy keeps its maps): ${show(agentStopped.get(19102))}`);
  a.startAgent();

  const b = await startRouter(dir, 'group-b', 19103, mappingFile);
  haproxyPids.push(Number((await new RuntimeApi(path.join(b.stateDir, 'admin.sock')).info()).Pid));
  await sleep(1000);
  const groups = await underLoad(
    CONNECTIONS,
    FAILURE_SECONDS,
    (i) => (i % 2 === 0 ? 19102 : 19103),
    async () => {
      a.stopAgent();
      process.kill(pidA, 'SIGKILL');
    },
  );
  out(`one router group dies (group a's HAProxy killed; clients keep sending to both, as the NLB does until its health check marks it down):`);
  out(`  to group a: ${show(groups.get(19102))}`);
  out(`  to group b: ${show(groups.get(19103))}`);
  // Group a's HAProxy is gone: its stop would wait for it; group b stops as a task does.
  await Promise.race([b.stop(), sleep(10_000)]);
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`bench:cell-zero: ${(error as Error).message}\n`);
    process.exit(1);
  },
);
