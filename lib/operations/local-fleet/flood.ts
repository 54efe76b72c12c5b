import { spawn } from 'child_process';
import * as http from 'http';
import * as os from 'os';

// Kept free of the rest of the project (no pg, no mapping): this file is also the flood process's
// entry point, which should start fast.

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One request through the router; never throws (status 0 on a socket error or a timeout). */
export function request(
  base: string,
  header: string,
  tenant: string,
  method: string,
  path: string,
  body?: string,
  extra: Record<string, string> = {},
  timeoutMs = 5000,
): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const url = new URL(path, base);
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        agent,
        headers: { [header]: tenant, ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}), ...extra },
        timeout: timeoutMs,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
        res.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    if (body) req.write(body);
    req.end();
  });
}

export interface FloodOptions {
  readonly routerUrl: string;
  readonly header: string;
  /** The one tenant every request is for. */
  readonly tenant: string;
  /** Concurrent clients, each sending its next request as soon as the last one is answered. @default 128 */
  readonly clients?: number;
  /** A request not answered within this long counts as failed (status 0). @default 5000 */
  readonly timeoutMs?: number;
}

/** What a flood sent: requests answered, by HTTP status (0: a socket error or a timeout). */
export interface FloodSummary {
  readonly clients: number;
  readonly requests: number;
  readonly statuses: Readonly<Record<string, number>>;
}

/** A flood in this process: `clients` closed loops of `GET /v1/items` for one tenant, until `stop()`. */
export function flood(o: FloodOptions): { stop(): Promise<FloodSummary> } {
  const clients = o.clients ?? 128;
  const statuses: Record<string, number> = {};
  let requests = 0;
  let running = true;
  const loops = Array.from({ length: clients }, async () => {
    while (running) {
      const r = await request(o.routerUrl, o.header, o.tenant, 'GET', '/v1/items?limit=5', undefined, {}, o.timeoutMs ?? 5000);
      requests += 1;
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return { clients, requests, statuses };
    },
  };
}

/**
 * The flood in a process of its own, standing in for a client on its own machine: the load
 * generator that measures the other tenants does not share an event loop with it, and with `nice`
 * (19: the lowest CPU priority) it takes only CPU the rest of the fleet leaves idle. Resolves once
 * the flood runs; `stop()` ends it and returns what it sent. The process also stops when this one
 * dies (it watches its stdin, a pipe only this process holds).
 */
export async function startFloodProcess(
  o: FloodOptions & { readonly nice?: number },
): Promise<{ readonly pid: number; stop(): Promise<FloodSummary> }> {
  const child = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), __filename], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: {
      ...process.env,
      CELL_FLOOD: JSON.stringify({ routerUrl: o.routerUrl, header: o.header, tenant: o.tenant, clients: o.clients, timeoutMs: o.timeoutMs }),
    },
  });
  if (child.pid === undefined) throw new Error(`could not start the flood process (${process.execPath})`);
  if (o.nice !== undefined) os.setPriority(child.pid, o.nice);
  let output = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines = () => output.split('\n').filter((l) => l.startsWith('{'));
  // tsx compiles this file first: give it time on a loaded machine.
  const deadline = Date.now() + 60_000;
  while (!lines().some((l) => l.includes('"started"'))) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the flood process exited before it started (${child.signalCode ?? `code ${child.exitCode}`})`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('the flood process did not start within 60 s');
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    pid: child.pid,
    stop: async () => {
      child.stdin!.end();
      const code = await exited;
      const summary = lines()
        .map((l) => JSON.parse(l) as Partial<FloodSummary>)
        .find((l) => l.requests !== undefined);
      if (code !== 0 || !summary) throw new Error(`the flood process ended with code ${code} and no summary: ${output.slice(0, 500)}`);
      return summary as FloodSummary;
    },
  };
}

if (require.main === module && process.env.CELL_FLOOD) {
  const running = flood(JSON.parse(process.env.CELL_FLOOD) as FloodOptions);
  process.stdout.write('{"started":true}\n');
  // Stop when the parent closes stdin, or dies.
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void running.stop().then((summary) => {
      process.stdout.write(`${JSON.stringify(summary)}\n`, () => process.exit(0));
    });
  };
  process.stdin.resume();
  process.stdin.once('end', stop);
  process.stdin.once('close', stop);
  process.stdin.once('error', stop);
}
