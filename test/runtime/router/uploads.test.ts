import { createHash } from 'crypto';
import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { DEFAULT_MAX_BODY_BYTES } from '../../../lib/domain/fleet/defaults';
import { initialMapping, lookup, MappingDocument } from '../../../lib/domain/mapping';
import { LocalRouter } from '../../../lib/runtime/router';
import { percentile, startRouterBehindNlb, until } from '../../support/cells';

/**
 * Request bodies through an NLB stand-in (PROXY v2, each client named by the loopback address it
 * connects from): the router takes real APIs' uploads (a large body announced by content-length,
 * a chunked one) whole to the cell, refuses a body announced over `maxBodyBytes` before reading
 * it, and bounds slow bodies by time: one that fits the buffer must arrive within the request
 * timeout and never holds a cell slot (408); a larger one that fills the buffer in time and then
 * trickles streams to the cell, held to the sender's share of the tenant's share of the cell, so
 * the cell's other tenants keep being served.
 */
const NOW = { now: '2026-12-03T12:00:00.000Z' };
const REQUEST_TIMEOUT_MS = 2000;
const CLIENT_TIMEOUT_MS = 3000;
const CELL_MAX_CONN = 40;
const TENANT_MAX_CONN = 20;
const PER_CLIENT = 10;
const ATTACKER = '127.0.0.9';
const NEIGHBOUR = '127.0.0.7';

interface BodyCell {
  readonly name: string;
  readonly endpoint: string;
  /** Each request's body: its length and SHA-256, and the tenant it was for. */
  readonly seen: { tenant: string; length: number; sha256: string; chunked: boolean }[];
  /** Requests in flight now, and the most at once, per tenant. */
  readonly inFlight: Map<string, number>;
  readonly maxInFlight: Map<string, number>;
  close(): Promise<void>;
}

/** A cell that reads every body to its end, then answers with its length and hash. */
async function bodyCell(name: string): Promise<BodyCell> {
  const cell = { name, seen: [], inFlight: new Map(), maxInFlight: new Map() } as unknown as BodyCell;
  const server = http.createServer((req, res) => {
    if (req.url === '/health') {
      res.end('ok');
      return;
    }
    const tenant = String(req.headers['x-tenant-id']);
    const now = (cell.inFlight.get(tenant) ?? 0) + 1;
    cell.inFlight.set(tenant, now);
    cell.maxInFlight.set(tenant, Math.max(now, cell.maxInFlight.get(tenant) ?? 0));
    const hash = createHash('sha256');
    let length = 0;
    let counted = true;
    // Once: at the body's end, or when the router closes a stream cut short.
    const done = () => {
      if (counted) cell.inFlight.set(tenant, (cell.inFlight.get(tenant) ?? 1) - 1);
      counted = false;
    };
    req.on('data', (d: Buffer) => {
      hash.update(d);
      length += d.length;
    });
    req.on('end', () => {
      done();
      const sha256 = hash.digest('hex');
      cell.seen.push({ tenant, length, sha256, chunked: req.headers['transfer-encoding'] === 'chunked' });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ length, sha256 }));
    });
    req.on('error', done);
    req.on('close', done);
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(cell, {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly ms: number;
}

/** One upload from `from` through the stand-in: `body` in `content-length` mode, or as chunks of `chunk` bytes. */
function upload(port: number, from: string, tenant: string, body: Buffer, mode: { chunk?: number } = {}): Promise<Answer> {
  const started = Date.now();
  return new Promise((resolve) => {
    const headers: http.OutgoingHttpHeaders = { 'x-tenant-id': tenant, 'content-type': 'application/octet-stream' };
    if (mode.chunk === undefined) headers['content-length'] = body.length;
    const req = http.request({ host: '127.0.0.1', port, path: '/upload', method: 'POST', headers, agent: false, localAddress: from }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: text, ms: Date.now() - started }));
    });
    req.on('error', () => resolve({ status: 0, body: '', ms: Date.now() - started }));
    if (mode.chunk === undefined) req.end(body);
    else {
      for (let i = 0; i < body.length; i += mode.chunk) req.write(body.subarray(i, i + mode.chunk));
      req.end();
    }
  });
}

/** Raw HTTP: `head` then `parts` one every `gapMs`; the status line's code (or '' if the connection closed without one). */
function trickle(
  port: number,
  from: string,
  head: string,
  parts: readonly Buffer[],
  gapMs: number,
): { done: Promise<{ status: string; ms: number }>; stop(): void } {
  const started = Date.now();
  const socket = net.createConnection({ host: '127.0.0.1', port, localAddress: from });
  let stopped = false;
  const done = new Promise<{ status: string; ms: number }>((resolve) => {
    let text = '';
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('close', () => resolve({ status: /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? '', ms: Date.now() - started }));
    socket.on('error', () => undefined);
    socket.on('connect', async () => {
      socket.write(head);
      for (const part of parts) {
        if (stopped || socket.destroyed) return;
        socket.write(part);
        await new Promise((r) => setTimeout(r, gapMs));
      }
    });
  });
  return {
    done,
    stop: () => {
      stopped = true;
      socket.destroy();
    },
  };
}

describe('request bodies through the router, behind an NLB stand-in', () => {
  let cells: BodyCell[];
  let router: LocalRouter;
  let nlb: { port: number; close(): Promise<void> };
  let doc: MappingDocument;
  let dir: string;
  /** Keys of cell-a: the attacker's and its neighbour's. */
  let attackerKey: string;
  let neighbourKey: string;

  beforeAll(async () => {
    cells = await Promise.all(['cell-a', 'cell-b'].map((name) => bodyCell(name)));
    doc = initialMapping(
      cells.map((c) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const })),
      16384,
      NOW,
    );
    const ofA = Array.from({ length: 500 }, (_, i) => `upload-${i}`).filter((k) => lookup(doc, k).cell === 'cell-a');
    [attackerKey, neighbourKey] = ofA;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'uploads-'));
    const mappingFile = path.join(dir, 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    ({ router, nlb } = await startRouterBehindNlb({
      mappingFile,
      cellMaxConn: CELL_MAX_CONN,
      tenantMaxConn: TENANT_MAX_CONN,
      clientMaxConnPerCell: PER_CLIENT,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      clientTimeoutMs: CLIENT_TIMEOUT_MS,
    }));
    await until('the router serving', async () => (await upload(nlb.port, NEIGHBOUR, neighbourKey, Buffer.from('hi'))).status === 200, 60_000);
  });
  afterAll(async () => {
    await nlb?.close();
    await router?.stop();
    await Promise.all((cells ?? []).map((c) => c.close()));
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    for (const c of cells) c.seen.length = 0;
  });

  it('takes a 5 MiB upload announced by content-length to the cell whole', async () => {
    const body = Buffer.alloc(5 * 1024 * 1024, 7);
    for (let i = 0; i < body.length; i += 4096) body[i] = i % 251;
    const answer = await upload(nlb.port, NEIGHBOUR, neighbourKey, body);
    expect(answer.status).toBe(200);
    const sha256 = createHash('sha256').update(body).digest('hex');
    expect(JSON.parse(answer.body)).toEqual({ length: body.length, sha256 });
    expect(cells[0].seen).toEqual([{ tenant: neighbourKey, length: body.length, sha256, chunked: false }]);
  });

  it('takes a chunked upload (1 MiB in 64 KiB chunks) to the cell whole, still chunked', async () => {
    const body = Buffer.from(Array.from({ length: 1024 * 1024 }, (_, i) => (i * 31) % 256));
    const answer = await upload(nlb.port, NEIGHBOUR, neighbourKey, body, { chunk: 64 * 1024 });
    expect(answer.status).toBe(200);
    const sha256 = createHash('sha256').update(body).digest('hex');
    expect(JSON.parse(answer.body)).toEqual({ length: body.length, sha256 });
    expect(cells[0].seen).toEqual([{ tenant: neighbourKey, length: body.length, sha256, chunked: true }]);
  });

  it('refuses a body announced over the limit with 413 before reading it: the cell sees nothing', async () => {
    const over = DEFAULT_MAX_BODY_BYTES + 1;
    const t = trickle(
      nlb.port,
      NEIGHBOUR,
      `POST /upload HTTP/1.1\r\nhost: x\r\nx-tenant-id: ${neighbourKey}\r\ncontent-length: ${over}\r\n\r\n`,
      [],
      0,
    );
    const answer = await t.done;
    expect(answer.status).toBe('413');
    expect(cells[0].seen).toEqual([]);
  });

  it('a slow body that fits the buffer gets 408 within the request timeout and never reaches the cell', async () => {
    const body = 'x'.repeat(200);
    const t = trickle(
      nlb.port,
      NEIGHBOUR,
      `POST /upload HTTP/1.1\r\nhost: x\r\nx-tenant-id: ${neighbourKey}\r\ncontent-length: ${body.length}\r\n\r\n`,
      body.split('').map((c) => Buffer.from(c)),
      100,
    );
    const answer = await t.done;
    // 200 bytes a tenth of a second apart (never a pause as long as the client timeout): the 408 is
    // the request timeout's, before the body was whole.
    expect(answer.status).toBe('408');
    expect(cells[0].seen).toEqual([]);
    expect(cells[0].inFlight.get(neighbourKey) ?? 0).toBe(0);
  });

  it("one address trickling large uploads holds only its share of the cell: the cell's other tenants stay served", async () => {
    // The neighbour's baseline: small uploads, one at a time, from its own address.
    const sample = async (ms: number) => {
      const answers: Answer[] = [];
      for (const end = Date.now() + ms; Date.now() < end;) {
        answers.push(await upload(nlb.port, NEIGHBOUR, neighbourKey, Buffer.from('{"item":1}')));
        await new Promise((r) => setTimeout(r, 10));
      }
      return answers;
    };
    // Enough samples (about 100 in 6 s) that one slow request on a loaded machine is not the p99 by itself.
    const baseline = percentile(
      (await sample(3000)).map((a) => a.ms),
      99,
    );
    // 30 uploads of 1 MiB from one address: each sends 32 KiB at once (past the buffer, so it
    // streams to the cell), then one byte every 500 ms (inside the client timeout), for 10 s.
    const head = `POST /upload HTTP/1.1\r\nhost: x\r\nx-tenant-id: ${attackerKey}\r\ncontent-length: ${1024 * 1024}\r\n\r\n`;
    const attacks = Array.from({ length: 30 }, () =>
      trickle(nlb.port, ATTACKER, head, [Buffer.alloc(32 * 1024, 1), ...Array.from({ length: 20 }, () => Buffer.from('z'))], 500),
    );
    try {
      await until('the attacker streaming to the cell', async () => (cells[0].inFlight.get(attackerKey) ?? 0) >= PER_CLIENT, 30_000);
      const attacked = await sample(6000);
      const ok = attacked.filter((a) => a.status === 200).length;
      expect(ok / attacked.length).toBeGreaterThanOrEqual(0.99);
      process.stderr.write(
        `uploads: neighbour ${ok}/${attacked.length} ok, p99 ${percentile(
          attacked.map((a) => a.ms),
          99,
        ).toFixed(1)} ms against ${baseline.toFixed(1)} ms\n`,
      );
      expect(
        percentile(
          attacked.map((a) => a.ms),
          99,
        ),
      ).toBeLessThanOrEqual(2 * Math.max(baseline, 10));
      // The attacker's streams at the cell: never more than its address's part of the tenant's share.
      expect(cells[0].maxInFlight.get(attackerKey)).toBeLessThanOrEqual(PER_CLIENT);
    } finally {
      attacks.forEach((a) => a.stop());
    }
    const ended = await Promise.all(attacks.map((a) => a.done));
    // Those beyond the address's part were answered 429 at once; none was served.
    expect(ended.filter((e) => e.status === '429').length).toBeGreaterThanOrEqual(30 - PER_CLIENT);
    await until('the streams released', async () => (cells[0].inFlight.get(attackerKey) ?? 0) === 0, 30_000);
  });
});
