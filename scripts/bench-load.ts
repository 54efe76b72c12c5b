/**
 * What the load benchmarks share (bench:router, bench:cell-zero): wrk with a random tenant key per
 * request, CPU pinning, waiting for a port, medians. Imports nothing of the project.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';

/** `argv` run on CPU `cpu` when taskset is there (the proxies on 0, wrk and backends on 1). */
export const pin = (cpu: number, argv: string[]) =>
  spawnSync('taskset', ['--version']).status === 0 ? ['taskset', '-c', String(cpu), ...argv] : argv;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
}

export interface LoadOptions {
  /** Where wrk's script is written. */
  readonly dir: string;
  readonly port: number;
  readonly connections: number;
  readonly seconds: number;
  /** @default '/' */
  readonly path?: string;
  /** @default 42 */
  readonly seed?: number;
  /**
   * Every connection waits a random 0 to 2·paceMs milliseconds between requests, so
   * `connections / paceMs` sets the offered load; random, so the connections drift apart instead of
   * arriving as bursts of every connection at once. @default - no wait
   */
  readonly paceMs?: number;
}

/** wrk, one thread on CPU 1, a random tenant key (`x-tenant-id`) per request. */
export function wrk(o: LoadOptions): LoadResult {
  const urlPath = o.path ?? '/';
  const script = path.join(o.dir, `wrk-${o.port}-${o.connections}.lua`);
  fs.writeFileSync(
    script,
    [
      `math.randomseed(${o.seed ?? 42})`,
      `request = function() return wrk.format(nil, "${urlPath}", { ["x-tenant-id"] = "tenant-" .. math.random(1, 100000) }) end`,
      o.paceMs ? `delay = function() return math.random(0, ${2 * o.paceMs}) end` : '',
      'done = function(summary, latency, requests)',
      '  io.write(string.format("RESULT %d %d %d %d %d\\n", summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))',
      'end',
    ].join('\n'),
  );
  const argv = pin(1, ['wrk', '-t', '1', '-c', String(o.connections), '-d', `${o.seconds}s`, '-s', script, `http://127.0.0.1:${o.port}${urlPath}`]);
  const run = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8' });
  const line = /RESULT (\d+) (\d+) (\d+) (\d+) (\d+)/.exec(run.stdout);
  if (!line) throw new Error(`wrk failed: ${run.stderr || run.stdout}`);
  const [requests, durationUs, p50Us, p99Us, errors] = line.slice(1).map(Number);
  return { rps: Math.round(requests / (durationUs / 1e6)), p50: p50Us / 1000, p99: p99Us / 1000, requests, errors };
}

/** Resolves once something accepts connections on 127.0.0.1:`port`; fails after `timeoutMs`. */
export async function listening(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on :${port} after ${timeoutMs} ms`);
    await sleep(200);
  }
}
