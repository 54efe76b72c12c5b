import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { initialMapping } from '../../../lib/domain/mapping';
import { LocalRouter, startLocalRouter } from '../../../lib/runtime/router';
import { onFreePorts, until } from '../../support/cells';

const NOW = { now: '2026-11-29T16:00:00.000Z' };
const CELL_SLOTS = 4;
const CLIENT_TIMEOUT_MS = 1500;

function get(port: number, key: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/small', headers: { 'x-tenant-id': key }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

/**
 * Clients that ask for large responses and never read them: once HAProxy's buffers toward them
 * are full the cell's response stalls, holding the cell's connection, one of its slots. The router
 * closes such a client within `timeout client` (router.ts: CLIENT_TIMEOUT_MS, 10 s in a task; 1.5 s
 * here), which frees the slot while the client's socket is still open on its side.
 */
describe('slow readers (real HAProxy)', () => {
  let router: LocalRouter;
  let port: number;
  let cell: http.Server;
  /** Large responses the cell is writing: open, and closed (the router let go of them). */
  let open = 0;
  let released = 0;
  let dir: string;

  beforeAll(async () => {
    cell = http.createServer((req, res) => {
      if (req.url === '/health' || req.url === '/small') return void res.end('ok');
      // 64 MiB, written as the connection takes it: more than loopback's buffers hold.
      open += 1;
      const chunk = Buffer.alloc(64 * 1024, 'x');
      let sent = 0;
      const write = () => {
        while (sent < 1024) {
          sent += 1;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        res.end();
      };
      res.on('close', () => {
        open -= 1;
        released += 1;
      });
      write();
    });
    await new Promise<void>((resolve) => cell.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(cell.address() as AddressInfo).port}`;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-slow-readers-'));
    fs.writeFileSync(path.join(dir, 'mapping.json'), JSON.stringify(initialMapping([{ id: 'cell-a', endpoint, state: 'active' }], 16384, NOW)));
    router = await onFreePorts(1, async ([p]) => {
      port = p;
      return startLocalRouter({
        mappingFile: path.join(dir, 'mapping.json'),
        port,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: () => undefined,
        cellMaxConn: CELL_SLOTS,
        zones: 1,
        queueTimeoutMs: 500,
        clientTimeoutMs: CLIENT_TIMEOUT_MS,
      });
    });
    await until('the router serving', async () => (await get(port, 'warm-up')) === 200, 60_000);
  });
  afterAll(async () => {
    await router?.stop();
    cell.closeAllConnections();
    await new Promise<void>((resolve) => cell.close(() => resolve()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("frees the cell's slots held by clients that never read, within the client timeout, while their sockets stay open", async () => {
    // As many non-reading clients as the cell has slots, each another tenant (no per-tenant cap here).
    const readers = Array.from({ length: CELL_SLOTS }, (_, i) => {
      const socket = net.createConnection({ host: '127.0.0.1', port }, () => {
        socket.write(`GET /large HTTP/1.1\r\nHost: x\r\nx-tenant-id: reader-${i}\r\n\r\n`);
        socket.pause();
      });
      socket.on('error', () => undefined);
      return socket;
    });
    try {
      await until('every cell slot held by a reader', async () => open === CELL_SLOTS, 30_000);
      // The cell is full: a neighbour waits its queue time and gets 503.
      expect(await get(port, 'neighbour')).toBe(503);
      // A generous deadline for a loaded machine (ten times the client timeout), still half the 30 s the router used to hold them.
      await until('the readers closed by the router', async () => released === CELL_SLOTS, 15_000);
      expect(await get(port, 'neighbour')).toBe(200);
      // The readers never closed their side.
      expect(readers.every((s) => !s.destroyed)).toBe(true);
    } finally {
      readers.forEach((s) => s.destroy());
    }
  });
});
