/**
 * The router's fleet-wide read (scatter-gather, lib/runtime/router/fleet-read.ts) against cells
 * standing in on 127.0.0.1: every cell asked, answers merged, a slow or stopped cell named missing
 * and the answer flagged partial by the deadline, at most `concurrency` cells asked at once, and
 * the listener closed to anybody without its token.
 */
import * as http from 'http';
import { AddressInfo } from 'net';
import { fleetRead, FleetReadAnswer, fleetReadPathProblem, fleetReadServer } from '../../../lib/runtime/router/fleet-read';

interface StandIn {
  readonly id: string;
  readonly endpoint: string;
  readonly server: http.Server;
  /** Requests it holds unanswered (a slow cell). */
  readonly held: http.ServerResponse[];
  readonly paths: string[];
}

let inFlight = 0;
let mostInFlight = 0;

async function standIn(id: string, behaviour: 'json' | 'text' | 'error' | 'slow'): Promise<StandIn> {
  const held: http.ServerResponse[] = [];
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? '');
    inFlight++;
    mostInFlight = Math.max(mostInFlight, inFlight);
    res.on('close', () => inFlight--);
    if (behaviour === 'slow') return void held.push(res);
    // A moment's work, so several requests overlap and the concurrency bound is what limits them.
    setTimeout(() => {
      if (behaviour === 'error') {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'cell broken' }));
        return;
      }
      if (behaviour === 'text') {
        res.end(`tenants ${id}`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ cell: id, tenants: id.length }));
    }, 20);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { id, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, held, paths };
}

const TOKEN = 'fleet-read-token-0123456789';
let cells: StandIn[];
let stopped: { id: string; endpoint: string };
let router: http.Server;
let url: string;

beforeAll(async () => {
  cells = [
    ...(await Promise.all(Array.from({ length: 10 }, (_, i) => standIn(`cell-${i}`, 'json')))),
    await standIn('cell-text', 'text'),
    await standIn('cell-broken', 'error'),
    await standIn('cell-slow', 'slow'),
  ];
  // A stopped cell: its port was bound once and closed, so the connection is refused.
  const gone = await standIn('cell-stopped', 'json');
  await new Promise<void>((resolve) => gone.server.close(() => resolve()));
  stopped = { id: gone.id, endpoint: gone.endpoint };
  router = fleetReadServer({ cells: () => [...cells.map((c) => ({ id: c.id, endpoint: c.endpoint })), stopped], token: TOKEN, concurrency: 4 });
  await new Promise<void>((resolve) => router.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(router.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const c of cells) {
    for (const r of c.held) r.destroy();
    c.server.closeAllConnections();
    await new Promise<void>((resolve) => c.server.close(() => resolve()));
  }
  await new Promise<void>((resolve) => router.close(() => resolve()));
});

const get = async (p: string, token = TOKEN) => {
  const response = await fetch(`${url}${p}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return {
    status: response.status,
    partial: response.headers.get('x-fleet-partial'),
    body: (await response.json()) as FleetReadAnswer & { error?: string },
  };
};

describe('a fleet-wide read', () => {
  let answer: Awaited<ReturnType<typeof get>>;
  beforeAll(async () => {
    mostInFlight = 0;
    answer = await get('/fleet/stats?window=5m&deadlineMs=1500');
  });

  it('asks every active cell the path with its query, and merges the answers, parsed when JSON', () => {
    expect(answer.status).toBe(200);
    expect(answer.body.asked).toBe(14);
    for (const c of cells) expect(c.paths).toContain('/stats?window=5m');
    expect(answer.body.cells.find((c) => c.cell === 'cell-3')).toMatchObject({ status: 200, body: { cell: 'cell-3', tenants: 6 } });
    expect(answer.body.cells.find((c) => c.cell === 'cell-text')).toMatchObject({ status: 200, body: 'tenants cell-text' });
    // A cell's error is its answer: the status says so.
    expect(answer.body.cells.find((c) => c.cell === 'cell-broken')).toMatchObject({ status: 500, body: { error: 'cell broken' } });
  });

  it('answers by the deadline while a slow cell still holds its request, naming it and the stopped one: partial, never silently incomplete', () => {
    // The slow cell never answered: the read came back while its request was still held.
    expect(cells.find((c) => c.id === 'cell-slow')!.held).toHaveLength(1);
    expect(answer.partial).toBe('true');
    expect(answer.body.partial).toBe(true);
    expect(answer.body.missing.map((m) => m.cell)).toEqual(['cell-slow', 'cell-stopped']);
    expect(answer.body.missing.find((m) => m.cell === 'cell-slow')!.reason).toBe('no answer within the 1500 ms deadline');
    expect(answer.body.missing.find((m) => m.cell === 'cell-stopped')!.reason).toMatch(/ECONNREFUSED/);
    expect(answer.body.cells).toHaveLength(12);
  });

  it('asks at most `concurrency` cells at once', () => {
    expect(mostInFlight).toBeGreaterThan(1);
    expect(mostInFlight).toBeLessThanOrEqual(4);
  });
});

it("keeps each cell's part of the read's byte budget, and marks what it cut", async () => {
  const result = await fleetRead(
    '/stats',
    cells.filter((c) => c.id !== 'cell-slow').map((c) => ({ id: c.id, endpoint: c.endpoint })),
    {
      deadlineMs: 1500,
      maxTotalBytes: 12 * 10,
    },
  );
  // 12 cells, 120 bytes: 10 each; every JSON answer here is longer.
  const answer = result.cells.find((c) => c.cell === 'cell-3')!;
  expect(answer).toMatchObject({ truncated: true });
  expect(Buffer.byteLength(answer.body as string)).toBeLessThanOrEqual(10);
});

describe('the listener', () => {
  it('is closed to a caller without the token, or with another', async () => {
    expect((await get('/fleet/healthz', '')).status).toBe(401);
    expect((await get('/fleet/healthz', 'not-the-token-at-all')).status).toBe(401);
  });

  it('refuses a path that is not a cell path, and a deadline out of bounds, in one line', async () => {
    expect((await get('/healthz')).status).toBe(404);
    expect((await get('/fleet/../admin')).status).not.toBe(200);
    // Sent as written (fetch would resolve the encoded dot segment before sending it).
    const raw = await new Promise<{ status?: number; body: string }>((resolve, reject) => {
      const port = Number(new URL(url).port);
      const req = http.get({ host: '127.0.0.1', port, path: '/fleet/a/%2e%2e/b', headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      });
      req.on('error', reject);
    });
    expect(raw.status).toBe(400);
    expect(raw.body).toMatch(/dot segments or encoded separators/);
    expect(await get('/fleet/healthz?deadlineMs=0')).toMatchObject({
      status: 400,
      body: { error: 'deadlineMs 0: give whole milliseconds from 1 to 30000' },
    });
    expect(fleetReadPathProblem('healthz')).toBe('healthz: the path must start with /');
    expect(fleetReadPathProblem('/ok/path?x=1')).toBeUndefined();
  });

  it('will not start with a short token', () => {
    expect(() => fleetReadServer({ cells: () => [], token: 'short' })).toThrow(/at least 16 characters/);
  });
});
