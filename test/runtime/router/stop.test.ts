import * as fs from 'fs';
import * as http from 'http';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { initialMapping } from '../../../lib/domain/mapping';
import { pidRunning } from '../../../lib/domain/files';
import { LocalRouter, RuntimeApi, startLocalRouter } from '../../../lib/runtime/router';
import { onFreePorts, until } from '../../support/cells';

/**
 * How a router task stops, end to end on a real HAProxy: SIGUSR1 (the image's stop signal, what
 * ECS sends after the deregistration delay) takes readiness down and closes the listener at once,
 * lets the requests in flight finish, and `hard-stop-after` bounds how long that may take.
 */
const NOW = { now: '2026-11-30T17:00:00.000Z' };
/** hard-stop-after of the test that cuts a request; below HAProxy's 30 s `timeout server`, which must not be what cuts it. */
const HARD_STOP_AFTER_MS = 2000;
/** hard-stop-after when the test shows HAProxy exits without waiting for it: far above what the drain may take on a loaded machine. */
const LONG_HARD_STOP_AFTER_MS = 20_000;

/** Whether a TCP connection to the port is accepted (and not closed at once). */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.createConnection({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/** GET through the router; status 0 when the connection failed or was cut before an answer. */
function get(port: number, key: string, p = '/'): Promise<{ status: number; body: string; at: number }> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, headers: { 'x-tenant-id': key }, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode!, body, at: Date.now() }));
      res.on('error', () => resolve({ status: 0, body, at: Date.now() }));
    });
    req.on('error', () => resolve({ status: 0, body: '', at: Date.now() }));
    req.end();
  });
}

/** A cell that holds every request (health checks aside) until the test answers it. */
async function holdingCell(): Promise<{ endpoint: string; held: http.ServerResponse[]; close(): Promise<void> }> {
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    if (req.url === '/health') res.end('ok');
    else held.push(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    held,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** GET on a fresh connection; the status, or 0 when refused. */
function status(port: number, p: string): Promise<number> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      })
      .on('error', () => resolve(0));
  });
}

describe('stopping a router task (real HAProxy, SIGUSR1)', () => {
  let cell: Awaited<ReturnType<typeof holdingCell>>;
  let router: LocalRouter;
  let port: number;
  let readyPort: number;
  let pid: number;
  let dir: string;

  /** Starts the cell and a router with this hard-stop-after (each test its own). */
  const start = async (hardStopAfterMs: number) => {
    cell = await holdingCell();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-stop-'));
    fs.writeFileSync(
      path.join(dir, 'mapping.json'),
      JSON.stringify(initialMapping([{ id: 'cell-a', endpoint: cell.endpoint, state: 'active' }], 1024, NOW)),
    );
    router = await onFreePorts(2, async (ports) => {
      [port, readyPort] = ports;
      return startLocalRouter({
        mappingFile: path.join(dir, 'mapping.json'),
        port,
        readyPort,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 1024,
        healthCheckPath: '/health',
        log: () => undefined,
        pollMs: 200,
        hardStopAfterMs,
        zones: 1,
      });
    });
    await until('ready', async () => (await status(readyPort, '/ready')) === 200, 60_000);
    pid = Number((await new RuntimeApi(path.join(router.stateDir, 'admin.sock')).info()).Pid);
  };
  afterEach(async () => {
    await router?.stop();
    await cell?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('takes readiness down and refuses new connections at once, lets in-flight requests finish, then exits', async () => {
    await start(LONG_HARD_STOP_AFTER_MS);
    const inFlight = [get(port, 'tenant-1', '/a'), get(port, 'tenant-2', '/b'), get(port, 'tenant-3', '/c')];
    await until('the requests at the cell', async () => cell.held.length === 3, 60_000);
    process.kill(pid, 'SIGUSR1');
    // Readiness first: the NLB's health check and new clients are refused while the requests in
    // flight are still held by the cell (they are answered only after this). "At once": well within
    // hard-stop-after, with room for a loaded machine.
    await until('readiness refused', async () => !(await accepts(readyPort)), LONG_HARD_STOP_AFTER_MS / 4);
    expect(await accepts(port)).toBe(false);
    expect(pidRunning(pid)).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    expect(pidRunning(pid)).toBe(true); // still draining the requests in flight
    for (const res of cell.held) res.end('cell-a');
    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => [a.status, a.body])).toEqual(Array(3).fill([200, 'cell-a']));
    // Nothing left in flight: HAProxy exits without waiting for hard-stop-after.
    await until('HAProxy to exit', async () => !pidRunning(pid), LONG_HARD_STOP_AFTER_MS / 2);
  }, 120_000);

  it('cuts a request still in flight at hard-stop-after and exits', async () => {
    await start(HARD_STOP_AFTER_MS);
    const stuck = get(port, 'tenant-1');
    await until('the request at the cell', async () => cell.held.length === 1, 60_000);
    const stoppedAt = Date.now();
    process.kill(pid, 'SIGUSR1');
    const answer = await stuck;
    // HAProxy ends the stream: the client gets a 502 (or, when the answer cannot be sent, a closed connection), never the cell's 200.
    expect([0, 502]).toContain(answer.status);
    // Cut by hard-stop-after, not before it (a load can only make it later). Not by the 30 s
    // `timeout server` (the cell never answers): that would have been a 504.
    expect(answer.at - stoppedAt).toBeGreaterThanOrEqual(HARD_STOP_AFTER_MS - 100);
    await until('HAProxy to exit', async () => !pidRunning(pid), 60_000);
  }, 120_000);
});
