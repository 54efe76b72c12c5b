import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as os from 'os';
import * as path from 'path';
import { initialMapping } from '../../../lib/domain/mapping';
import { LocalRouter } from '../../../lib/runtime/router';
import { attackedP99, p99, startRouterBehindNlb, until } from '../../support/cells';

const NOW = { now: '2026-11-29T16:00:00.000Z' };
const MAX_CONN = 40;
/** Just above the connections: HAProxy then looks at one or two of the oldest entries for one to drop. */
const KEY_TABLE = MAX_CONN + 1;

/** One request through the NLB stand-in from `from` (the client it names: 127.0.0.7 is 198.51.100.7), and how long it took. */
function get(port: number, key: string, from = '127.0.0.5'): Promise<{ status: number; body: string; ms: number }> {
  const started = process.hrtime.bigint();
  const ms = () => Number(process.hrtime.bigint() - started) / 1e6;
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/', headers: { 'x-tenant-id': key }, agent: false, localAddress: from }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body, ms: ms() }));
    });
    req.on('error', () => resolve({ status: 0, body: '', ms: ms() }));
    req.end();
  });
}

/**
 * The tenants' table full, its oldest entries held by requests in flight: HAProxy finds no entry to
 * drop for a new tenant (it looks at only a few of the oldest), so the new tenant's request tracks
 * nothing. Such a key must still be routed by the mapping, never answered "no mapping loaded".
 * Through the NLB stand-in (PROXY v2): the sprayer is one client address, the new tenants another.
 */
describe("a full tenants' table (a client spraying keys, its oldest held in flight)", () => {
  let router: LocalRouter;
  let nlb: { port: number; close(): Promise<void> };
  let port: number;
  let cell: http.Server;
  const held: http.ServerResponse[] = [];
  let dir: string;

  beforeAll(async () => {
    cell = http.createServer((req, res) => {
      if (req.url === '/health') return void res.end('ok');
      // Requests of `hold-` keys are held until the test lets them go.
      if (String(req.headers['x-tenant-id']).startsWith('hold-')) return void held.push(res);
      res.end('cell-a');
    });
    await new Promise<void>((resolve) => cell.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(cell.address() as AddressInfo).port}`;
    const doc = initialMapping([{ id: 'cell-a', endpoint, state: 'active' as const }], 16384, NOW);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-key-table-'));
    const mappingFile = path.join(dir, 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    ({ router, nlb } = await startRouterBehindNlb({
      mappingFile,
      maxConn: MAX_CONN,
      keyCacheEntries: KEY_TABLE,
    }));
    port = nlb.port;
    await until('the router serving', async () => (await get(port, 'warm-up')).status === 200, 60_000);
  });
  afterAll(async () => {
    for (const res of held) res.end('released');
    await nlb?.close();
    await router?.stop();
    cell.closeAllConnections();
    await new Promise<void>((resolve) => cell.close(() => resolve()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('routes every new tenant by the mapping while the table is full, with p99 within 2x of its baseline, and each held tenant still gets its answer', async () => {
    // The new tenants' client before the spray: 20 tenants, one request each (baselines under 10 ms count as 10 ms).
    const before: { ms: number }[] = [];
    for (let i = 0; i < 20; i++) before.push(await get(port, `before-${i}`, '127.0.0.7'));
    const baseline = p99(before);
    // The oldest entries: two tenants whose requests the cell holds.
    const holding = ['hold-1', 'hold-2'].map((key) => get(port, key));
    await until('the cell holding both requests', async () => held.length === 2, 30_000);
    // Then the table filled by a spray of keys, one request each.
    for (let i = 0; held.length === 2 && i < KEY_TABLE; i++) expect((await get(port, `spray-${i}`)).status).toBe(200);
    // New tenants: no entry can be dropped for them (the oldest are held), yet every one is routed.
    let block = 0;
    const fresh = async () => {
      const answers: { status: number; body: string; ms: number }[] = [];
      for (let i = 0; i < 20; i++) answers.push(await get(port, `victim-${block}-${i}`, '127.0.0.7'));
      block += 1;
      return answers;
    };
    const limit = 2 * Math.max(baseline, 10);
    const attacked = await attackedP99(fresh, limit);
    expect(attacked.answers.map((r) => `${r.status} ${r.body}`)).toEqual(attacked.answers.map(() => '200 cell-a'));
    expect(attacked.p99).toBeLessThanOrEqual(limit);
    // A tenant seen before (it has its entry) is routed as ever.
    expect(await get(port, `spray-${KEY_TABLE - 1}`)).toMatchObject({ status: 200, body: 'cell-a' });
    for (const res of held.splice(0)) res.end('cell-a');
    expect((await Promise.all(holding)).map((r) => r.status)).toEqual([200, 200]);
  });
});
