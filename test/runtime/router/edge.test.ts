import { createHash } from 'crypto';
import * as fs from 'fs';
import * as http from 'http';
import * as http2 from 'http2';
import { AddressInfo } from 'net';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { initialMapping, lookup, MappingDocument } from '../../../lib/domain/mapping';
import { CLIENT_TABLE, FullReadinessGate, LocalRouter, RuntimeApi, startLocalRouter } from '../../../lib/runtime/router';
import { onFreePorts, routed, until } from '../../support/cells';

/**
 * The router at the edge, against a real HAProxy on loopback: what one hostile client, or one bad
 * document, must not be able to do to a router task.
 */
const NOW = { now: '2026-11-29T16:00:00.000Z' };
/** Above the 1 s queue timeout, so a cell slot held by a slow body would show as 503s to the cell's other tenants. */
const REQUEST_TIMEOUT_MS = 3000;
const CELL_MAX_CONN = 5;
const MAX_CONN = 40;
const BAD_KEYS_PER_10S = 20;

/** A cell that records every request's headers and body, and how many requests it holds at once. */
interface RecordingCell {
  readonly name: string;
  readonly endpoint: string;
  readonly seen: { headers: http.IncomingHttpHeaders; body: string; url: string }[];
  inFlight: number;
  maxInFlight: number;
  holdMs: number;
  close(): Promise<void>;
}

async function recordingCell(name: string): Promise<RecordingCell> {
  const cell = { name, seen: [], inFlight: 0, maxInFlight: 0, holdMs: 0 } as unknown as RecordingCell;
  const server = http.createServer((req, res) => {
    if (req.url === '/health') {
      res.end('ok');
      return;
    }
    cell.inFlight += 1;
    cell.maxInFlight = Math.max(cell.maxInFlight, cell.inFlight);
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      cell.seen.push({ headers: req.headers, body, url: req.url! });
      setTimeout(() => {
        cell.inFlight -= 1;
        res.writeHead(200, { 'content-type': 'text/plain', 'x-served-by': name });
        res.end(name);
      }, cell.holdMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(cell, {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/**
 * Writes `parts` to a raw connection, waiting `gapMs` between them, and resolves with the status line
 * of the first response (or '' when the connection closed without one) and when it came.
 */
function trickle(
  port: number,
  parts: readonly string[],
  gapMs: number,
  localAddress = '127.0.0.1',
): Promise<{ status: string; ms: number; text: string }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = net.createConnection({ host: '127.0.0.1', port, localAddress });
    let text = '';
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      if (timer) clearTimeout(timer);
      socket.destroy();
      resolve({ status: /^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? '', ms: Date.now() - started, text });
    };
    socket.on('data', (d) => {
      text += d;
      if (/\r\n\r\n/.test(text)) setTimeout(done, 20);
    });
    socket.on('close', done);
    socket.on('error', done);
    let i = 0;
    const next = () => {
      if (i >= parts.length || socket.destroyed) return;
      socket.write(parts[i++]);
      timer = setTimeout(next, gapMs);
    };
    socket.on('connect', next);
  });
}

/** GET with arbitrary headers (and optionally from another loopback source address). */
function get(
  port: number,
  headers: http.OutgoingHttpHeaders,
  options: { localAddress?: string; path?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: options.path ?? '/', headers, agent: false, localAddress: options.localAddress },
      (res) => {
        let body = '';
        res.on('data', (d) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

function ready(
  port: number,
): Promise<{ status: number; body: { ready: boolean; version?: number; reason?: string; connections: number; limit: number } }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/ready', agent: false }, (res) => {
        let body = '';
        res.on('data', (d) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(body) }));
      })
      .on('error', reject);
  });
}

describe('the router at the edge (real HAProxy on loopback)', () => {
  let cells: RecordingCell[];
  let router: LocalRouter;
  let port: number;
  let readyPort: number;
  let doc: MappingDocument;
  let mappingFile: string;
  const logs: string[] = [];
  /** A key served by each cell. */
  const keyOf = (cell: string, not: string[] = []) =>
    Array.from({ length: 2000 }, (_, i) => `edge-${i}`).find((k) => lookup(doc, k).cell === cell && !not.includes(k))!;

  beforeAll(async () => {
    cells = await Promise.all(['cell-a', 'cell-b'].map((n) => recordingCell(n)));
    doc = initialMapping(
      cells.map((c) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const })),
      16384,
      NOW,
    );
    mappingFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-edge-')), 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    router = await onFreePorts(2, async (ports) => {
      [port, readyPort] = ports;
      return startLocalRouter({
        mappingFile,
        port,
        readyPort,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: (l) => logs.push(l),
        pollMs: 200,
        cellMaxConn: CELL_MAX_CONN,
        maxConn: MAX_CONN,
        requestTimeoutMs: REQUEST_TIMEOUT_MS,
        maxBodyBytes: 1000,
        badKeysPer10s: BAD_KEYS_PER_10S,
        retryUnappliableMs: 1000,
        hardStopAfterMs: 3000,
      });
    });
  });
  afterAll(async () => {
    await router.stop();
    await Promise.all(cells.map((c) => c.close()));
    fs.rmSync(path.dirname(mappingFile), { recursive: true, force: true });
  });
  beforeEach(() => {
    for (const c of cells) {
      c.seen.length = 0;
      c.holdMs = 0;
      c.maxInFlight = 0;
    }
  });

  it('answers 408 to a client trickling its headers, within the request timeout', async () => {
    const key = keyOf('cell-a');
    // The headers would take 18 s to arrive whole: a 408 can only be the request timeout's.
    const parts = [
      'GET / HTTP/1.1\r\n',
      'host: x\r\n',
      `x-tenant-id: ${key}\r\n`,
      ...Array.from({ length: 60 }, (_, i) => `x-pad-${i}: y\r\n`),
      '\r\n',
    ];
    const answer = await trickle(port, parts, 300);
    expect(answer.status).toBe('408');
    // Not before the timeout (a load can only make it later); the 408 itself says it was the
    // request timeout, before the headers were complete.
    expect(answer.ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
    expect(cells[0].seen).toHaveLength(0);
  });

  it("slow request bodies never hold a cell slot: the cell's other tenants are served meanwhile, the slow ones get 408", async () => {
    const key = keyOf('cell-a');
    const body = 'x'.repeat(100);
    // Twice the cell's maxconn of clients sending their body a byte at a time.
    const slowStarted = Date.now();
    const slow = Array.from({ length: CELL_MAX_CONN * 2 }, () =>
      trickle(
        port,
        [
          `POST /orders HTTP/1.1\r\nhost: x\r\nx-tenant-id: ${key}\r\ncontent-type: text/plain\r\ncontent-length: ${body.length}\r\n\r\n`,
          ...body.split(''),
        ],
        100,
      ),
    );
    await new Promise((r) => setTimeout(r, 300));
    const other = keyOf('cell-a', [key]);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const fast = await Promise.all(Array.from({ length: 20 }, () => routed(agent, port, other)));
    const fastDone = Date.now();
    agent.destroy();
    // Had the slow bodies held the cell's slots, these would have waited in its queue and got 503
    // after the 1 s queue timeout (shorter than the request timeout that frees the slots).
    expect(fast.map((a) => a.status)).toEqual(Array(20).fill(200));
    const slowAnswers = await Promise.all(slow);
    // ... and they were served while the slow clients were still sending (not after their 408s).
    expect(Math.min(...slowAnswers.map((a) => slowStarted + a.ms))).toBeGreaterThan(fastDone);
    expect(slowAnswers.map((a) => a.status)).toEqual(Array(CELL_MAX_CONN * 2).fill('408'));
    expect(cells[0].seen.filter((s) => s.url === '/orders')).toHaveLength(0);
  });

  it('forwards a body within the limit whole, refuses one announced over it (413), and forwards a chunked body', async () => {
    const key = keyOf('cell-b');
    const post = (payload: string, headers: Record<string, string>) =>
      trickle(
        port,
        [
          `POST /in HTTP/1.1\r\nhost: x\r\nx-tenant-id: ${key}\r\n${Object.entries(headers)
            .map(([k, v]) => `${k}: ${v}\r\n`)
            .join('')}\r\n${payload}`,
        ],
        0,
      );
    expect((await post('y'.repeat(900), { 'content-length': '900' })).status).toBe('200');
    expect(cells[1].seen.map((s) => s.body)).toEqual(['y'.repeat(900)]);
    const large = await post('y'.repeat(1200), { 'content-length': '1200' });
    expect(large.status).toBe('413');
    expect(large.text).toContain('request body over 1000 bytes');
    expect((await post('5\r\nhello\r\n0\r\n\r\n', { 'transfer-encoding': 'chunked' })).status).toBe('200');
    expect(cells[1].seen.map((s) => s.body)).toEqual(['y'.repeat(900), 'hello']);
    // A chunked body announces no length: the router does not count it (the cell's own limit applies).
    const chunk = 'z'.repeat(1200);
    expect((await post(`${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`, { 'transfer-encoding': 'chunked' })).status).toBe('200');
    expect(cells[1].seen.map((s) => s.body.length)).toEqual([900, 5, 1200]);
  });

  it('refuses cleartext HTTP/2 (prior knowledge): HTTP/1.1 only', async () => {
    const result = await new Promise<string>((resolve) => {
      const session = http2.connect(`http://127.0.0.1:${port}`);
      session.on('error', (e) => resolve(`error: ${e.message}`));
      session.on('close', () => resolve('error: closed'));
      const req = session.request({ ':path': '/', 'x-tenant-id': keyOf('cell-a') });
      req.on('response', (h) => {
        resolve(`status ${h[':status']}`);
        session.close();
      });
      req.on('error', (e) => resolve(`error: ${e.message}`));
      req.end();
    });
    expect(result).toMatch(/^error/);
    expect(cells[0].seen).toHaveLength(0);
  });

  it('removes client-sent x-cell, x-mapping-version, forwarded and x-forwarded-* and sets its own', async () => {
    const key = keyOf('cell-b');
    const answer = await get(
      port,
      {
        'x-tenant-id': key,
        'x-cell': 'cell-a',
        'x-mapping-version': '999',
        'x-forwarded-for': '203.0.113.9',
        'x-forwarded-proto': 'https',
        forwarded: 'for=203.0.113.9',
      },
      { localAddress: '127.0.0.7' },
    );
    expect(answer.status).toBe(200);
    const { headers } = cells[1].seen[0];
    expect(headers['x-cell']).toBeUndefined();
    expect(headers['x-mapping-version']).toBeUndefined();
    expect(headers.forwarded).toBeUndefined();
    expect(headers['x-forwarded-for']).toBe('127.0.0.7');
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers['x-tenant-id']).toBe(key);
  });

  it('throttles a client flooding invalid keys (429, then refused at connect) while other clients are served', async () => {
    const flood = [];
    for (let i = 0; i < 30; i++) flood.push((await get(port, { 'x-tenant-id': 'bad key' }, { localAddress: '127.0.0.9' })).status);
    expect(flood.slice(0, 20)).toEqual(Array(20).fill(400));
    expect(flood.slice(20)).toContain(429);
    for (let i = 0; i < 20; i++) await get(port, { 'x-tenant-id': 'bad key' }, { localAddress: '127.0.0.9' });
    // Over twice the budget: even a good request from that client is refused at connect.
    expect((await get(port, { 'x-tenant-id': keyOf('cell-a') }, { localAddress: '127.0.0.9' })).status).toBe(0);
    expect((await get(port, { 'x-tenant-id': keyOf('cell-a') })).status).toBe(200);
  });

  it('refuses a flooding client at connect exactly once its bad-key rate is over twice the budget, and serves it again once the rate falls', async () => {
    const client = '127.0.0.10';
    const api = new RuntimeApi(path.join(router.stateDir, 'admin.sock'));
    // The client's bad-key rate as the connect rule reads it (the same counter, read the same way).
    const rate = async () => Number(/gpc0_rate\(\d+\)=(\d+)/.exec(await api.send(`show table ${CLIENT_TABLE} key ::ffff:${client}`))?.[1] ?? 0);
    const good = () => get(port, { 'x-tenant-id': keyOf('cell-a') }, { localAddress: client });
    // The rate is read before each bad request, after it, and after the good one. Between two reads
    // it only falls (a sliding window), except that the bad request adds one; so what each rule saw
    // when it decided lies between two reads, and a decision is checked whenever both reads agree
    // (a loaded machine can let the rate fall across a threshold between a read and a request).
    const seen: { before: number; bad: number; rate: number; good: number; after: number }[] = [];
    let before = await rate();
    for (let i = 0; i < 3 * BAD_KEYS_PER_10S && !seen.some((s) => s.good === 0); i++) {
      const bad = (await get(port, { 'x-tenant-id': 'bad key' }, { localAddress: client })).status;
      const now = await rate();
      const goodStatus = (await good()).status;
      const after = await rate();
      seen.push({ before, bad, rate: now, good: goodStatus, after });
      before = after;
    }
    // Every answer follows the rate at that moment: 400 up to the budget, 429 above it; a new
    // connection accepted up to twice the budget, refused (no HTTP answer at all) above it.
    for (const s of seen) {
      if (s.bad !== 0) {
        if (s.rate > BAD_KEYS_PER_10S) expect(s).toMatchObject({ bad: 429 });
        else if (s.before + 1 <= BAD_KEYS_PER_10S) expect(s).toMatchObject({ bad: 400 });
        else expect([400, 429]).toContain(s.bad);
      }
      if (s.after > 2 * BAD_KEYS_PER_10S) expect(s).toMatchObject({ good: 0 });
      else if (s.rate <= 2 * BAD_KEYS_PER_10S) expect(s).toMatchObject({ good: 200 });
      else expect([0, 200]).toContain(s.good);
    }
    expect(seen.filter((s) => s.good === 200).length).toBeGreaterThanOrEqual(2 * BAD_KEYS_PER_10S - 2);
    expect(seen.at(-1)).toMatchObject({ good: 0 });
    expect(seen.at(-1)!.rate).toBeLessThanOrEqual(2 * BAD_KEYS_PER_10S + 1);
    // A refused client's bad requests are refused too, so they no longer count against it.
    expect((await get(port, { 'x-tenant-id': 'bad key' }, { localAddress: client })).status).toBe(0);
    expect(await rate()).toBeLessThanOrEqual(2 * BAD_KEYS_PER_10S + 1);
    // Another client is served throughout.
    expect((await get(port, { 'x-tenant-id': keyOf('cell-a') })).status).toBe(200);
    // The rate is over a sliding 10 s: within about 10 s it falls to the threshold and the client
    // is served again; until then it stays refused.
    // Read before and after each try (the rate only falls meanwhile): refused while it was over twice
    // the budget at both reads, served once it is below that at the first.
    const refusedSince = Date.now();
    for (;;) {
      const now = await rate();
      const status = (await good()).status;
      const after = await rate();
      if (now <= 2 * BAD_KEYS_PER_10S - 1) {
        expect(status).toBe(200);
        break;
      }
      if (after > 2 * BAD_KEYS_PER_10S) expect(status).toBe(0);
      // A deadline for the wait, as every wait here has (60 s), not a speed check: the rate falls
      // within two 10 s periods.
      if (Date.now() - refusedSince > 60_000)
        throw new Error(`the client is still refused after 60 s (rate ${now}): its rate should have fallen within two 10 s periods`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }, 120_000);

  it('is ready (served by HAProxy) while a mapping is in force; full, it reports 503 only while its agent says half of its group stays in', async () => {
    const before = await ready(readyPort);
    expect(before).toMatchObject({ status: 200, body: { ready: true, version: doc.version, limit: MAX_CONN } });
    const api = new RuntimeApi(path.join(router.stateDir, 'admin.sock'));
    /** The gate's answer for this task (10.0.0.1, first in address order) when the group's other task is `other`; `agoMs` back in time. */
    const gate = (other: string, agoMs = 0) =>
      new FullReadinessGate({
        api,
        stateDir: router.stateDir,
        connectionLimit: MAX_CONN,
        targets: async () => [
          { id: '10.0.0.1', state: 'healthy' },
          { id: '10.0.0.2', state: other },
        ],
        self: async () => '10.0.0.1',
        holdMs: 60_000,
        emit: () => undefined,
        now: () => Date.now() - agoMs,
      }).tick();
    // Not full: the gate asks nobody, and readiness is 200.
    expect(await gate('healthy')).toBe(false);
    expect((await ready(readyPort)).status).toBe(200);
    const sockets: net.Socket[] = [];
    try {
      // 40 connections (the limit) from 20 addresses, two each: a full task, past its 90% mark, that
      // no single address filled (each within the shedding threshold, so none is refused).
      for (let i = 0; i < MAX_CONN; i++) {
        sockets.push(
          await new Promise<net.Socket>((resolve) => {
            const s = net.createConnection({ host: '127.0.0.1', port, localAddress: `127.0.0.${60 + Math.floor(i / 2)}` }, () => resolve(s));
          }),
        );
      }
      await until('the task full', async () => (await ready(readyPort)).body.connections > MAX_CONN * 0.9, 60_000);
      // Full, and the group's other task healthy: 503, so the NLB sends new flows to the other task.
      expect(await gate('healthy')).toBe(true);
      const leaving = await ready(readyPort);
      expect(leaving).toMatchObject({ status: 503, body: { ready: false, reason: 'task full', limit: MAX_CONN } });
      // Full, and the other task out already: this one stays in (a flood fills every task alike, and
      // failing on all of them together would take the whole group out).
      expect(await gate('unhealthy')).toBe(false);
      expect(await ready(readyPort)).toMatchObject({ status: 200, body: { ready: true, version: doc.version } });
      // A permission the agent stopped renewing (written two minutes ago, held one) has expired.
      expect(await gate('healthy', 120_000)).toBe(true);
      expect((await ready(readyPort)).status).toBe(200);
      expect(await gate('healthy')).toBe(true);
      expect((await ready(readyPort)).status).toBe(503);
      const [line] = await router.agent.metrics();
      expect(JSON.parse(line)).toMatchObject({ ConnectionLimit: MAX_CONN });
      expect(JSON.parse(line).Connections).toBeGreaterThan(MAX_CONN * 0.9);
    } finally {
      sockets.forEach((s) => s.destroy());
    }
    // No longer full: ready again, whatever the gate says.
    await until('the connections closed', async () => (await ready(readyPort)).body.connections < MAX_CONN * 0.9, 60_000);
    expect((await ready(readyPort)).status).toBe(200);
    await gate('unhealthy');
  });

  it('rejects a document that cannot be applied (an endpoint that does not resolve) and stays ready on its last-known-good', async () => {
    const rejectedBefore = router.agent.rejectedDocuments;
    const bad = {
      ...doc,
      version: doc.version + 1,
      cells: { ...doc.cells, 'cell-b': { ...doc.cells['cell-b'], endpoint: 'http://cell-b.does-not-resolve.invalid:8080' } },
    };
    fs.writeFileSync(mappingFile, JSON.stringify(bad));
    // Readiness sampled until the document was rejected (however long resolving takes here), then
    // for 3 s more, long enough for the agent to try it again (retryUnappliableMs 1 s) at least once.
    const samples: number[] = [];
    let sampleUntil = Infinity;
    const deadline = Date.now() + 60_000;
    while (Date.now() < sampleUntil) {
      samples.push((await ready(readyPort)).status);
      if (sampleUntil === Infinity && router.agent.rejectedDocuments > rejectedBefore) sampleUntil = Date.now() + 3000;
      if (Date.now() > deadline) throw new Error('the unappliable document was not rejected within 60 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(samples.filter((s) => s !== 200)).toEqual([]);
    expect(router.agent.ready).toBe(true);
    expect(router.agent.version).toBe(doc.version);
    // Rejected once, although it was tried again after retryUnappliableMs.
    expect(router.agent.rejectedDocuments).toBe(rejectedBefore + 1);
    expect(logs.filter((l) => l.includes('"event":"rejected"') && l.includes('does not resolve'))).toHaveLength(1);
    expect((await get(port, { 'x-tenant-id': keyOf('cell-b') })).status).toBe(200);
    // A fixed document is applied.
    const fixed = { ...doc, version: doc.version + 2 };
    fs.writeFileSync(mappingFile, JSON.stringify(fixed));
    await until('the fixed version', async () => router.agent.version === fixed.version, 60_000);
    expect((await ready(readyPort)).body.version).toBe(fixed.version);
  });

  it('logs failures as JSON with no query string and the key only hashed', async () => {
    const key = 'secret-tenant-1';
    const cell = cells.find((c) => c.name === lookup(doc, key).cell)!;
    cell.holdMs = 8000; // far longer than the 1 s queue timeout: requests past the cell's maxconn get 503
    const count = logs.length;
    const answers = await Promise.all(
      Array.from({ length: CELL_MAX_CONN + 3 }, () => get(port, { 'x-tenant-id': key }, { path: '/v1/x?email=someone@example.com' })),
    );
    expect(answers.filter((a) => a.status === 503)).toHaveLength(3);
    await until('the 503s logged', async () => logs.slice(count).join('\n').split('"status":503').length - 1 >= 3, 60_000);
    const lines = logs
      .slice(count)
      .flatMap((l) => l.split('\n'))
      .filter((l) => l.startsWith('{"time"'));
    for (const line of lines) {
      expect(line).not.toContain('email');
      expect(line).not.toContain(key);
      expect(JSON.parse(line)).toMatchObject({
        status: 503,
        path: '/v1/x',
        key_sha256: createHash('sha256').update(key).digest('hex').slice(0, 16).toUpperCase(),
      });
    }
  });
});
