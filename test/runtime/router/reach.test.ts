import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as os from 'os';
import * as path from 'path';
import { initialMapping, MappingDocument, pinKey } from '../../../lib/domain/mapping';
import { LocalRouter, startLocalRouter } from '../../../lib/runtime/router';
import { elsewhereOf, MappingApplier } from '../../../lib/runtime/router/apply';
import { RuntimeApi } from '../../../lib/runtime/router/runtime-api';
import { MAX_ELSEWHERE_REGIONS } from '../../../lib/domain/fleet';
import { onFreePorts, routed, until } from '../../support/cells';

const NOW = { now: '2026-12-06T02:00:00.000Z' };

/** A cell that answers with its name and echoes the method and body it received. */
async function echoCell(name: string): Promise<{ server: http.Server; port: number; requests: number }> {
  const cell = { requests: 0 } as { server: http.Server; port: number; requests: number };
  cell.server = http.createServer((req, res) => {
    if (req.url === '/health') {
      res.end('ok');
      return;
    }
    cell.requests++;
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      res.writeHead(200, { 'x-served-by': name });
      res.end(`${name} ${req.method} ${req.url} ${body}`);
    });
  });
  await new Promise<void>((resolve) => cell.server.listen(0, '127.0.0.1', resolve));
  cell.port = (cell.server.address() as AddressInfo).port;
  return cell;
}

describe('router.reach: a cell this region does not link is answered 307 to its own region', () => {
  let dir: string;
  let here: LocalRouter;
  let home: LocalRouter;
  let herePort: number;
  let homePort: number;
  let homeUrl: string;
  let a: Awaited<ReturnType<typeof echoCell>>;
  let b: Awaited<ReturnType<typeof echoCell>>;
  /** Names that exist in the second region's VPC: cell-b's link is not there. */
  const linkedHere = new Set(['cell-a.test']);
  const agent = new http.Agent({ keepAlive: false });

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-reach-'));
    for (const d of ['home', 'here']) fs.mkdirSync(path.join(dir, d));
    a = await echoCell('cell-a');
    b = await echoCell('cell-b');
    let doc: MappingDocument = initialMapping(
      [
        { id: 'cell-a', endpoint: `http://cell-a.test:${a.port}`, state: 'active' as const },
        { id: 'cell-b', endpoint: `http://cell-b.test:${b.port}`, state: 'active' as const },
      ],
      16384,
      NOW,
    );
    doc = pinKey(pinKey(doc, 'tenant-a', 'cell-a', NOW), 'tenant-b', 'cell-b', NOW);
    const mappingFile = path.join(dir, 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    const common = {
      mappingFile,
      partitionKey: { source: 'header', name: 'x-tenant-id' } as const,
      bucketCount: 16384,
      healthCheckPath: '/health',
      log: () => undefined,
      pollMs: 200,
    };
    // cell-b's region: links both cells.
    home = await onFreePorts(1, async (ports) => {
      homePort = ports[0];
      return startLocalRouter({ ...common, port: homePort, stateDir: path.join(dir, 'home'), resolve: async () => ['127.0.0.1'] });
    });
    homeUrl = `http://127.0.0.1:${homePort}`;
    // Another region: links cell-a only. cell-b's name does not exist here (no endpoint, no record:
    // NXDOMAIN), and cell-b is another region's cell, so its tenants are sent there.
    here = await onFreePorts(1, async (ports) => {
      herePort = ports[0];
      return startLocalRouter({
        ...common,
        port: herePort,
        stateDir: path.join(dir, 'here'),
        elsewhere: { [homeUrl]: ['cell-b'] },
        refreshAddressesMs: 300,
        resolve: async (host) => {
          if (!linkedHere.has(host)) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
          return ['127.0.0.1'];
        },
      });
    });
  }, 120_000);

  afterAll(async () => {
    agent.destroy();
    await Promise.all([here?.stop(), home?.stop()]);
    a.server.close();
    b.server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves the cells it links', async () => {
    const answer = await routed(agent, herePort, 'tenant-a', '/orders?id=1');
    expect([answer.status, answer.servedBy]).toEqual([200, 'cell-a']);
  });

  it("answers another region's tenant 307 to that region's URL with the path and query, not cached, without reaching a cell", async () => {
    const before = b.requests + a.requests;
    const res = await fetch(`http://127.0.0.1:${herePort}/orders/7?expand=lines&x=%2F`, {
      headers: { 'x-tenant-id': 'tenant-b' },
      redirect: 'manual',
    });
    expect(res.status).toBe(307);
    expect(res.headers.get('location')).toBe(`${homeUrl}/orders/7?expand=lines&x=%2F`);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(a.requests + b.requests).toBe(before);
  });

  it('a client that follows the redirect reaches the cell in its region, method and body unchanged', async () => {
    const res = await fetch(`http://127.0.0.1:${herePort}/orders`, {
      method: 'POST',
      headers: { 'x-tenant-id': 'tenant-b', 'content-type': 'application/json' },
      body: '{"sku":"s-1","qty":2}',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-served-by')).toBe('cell-b');
    expect(await res.text()).toBe('cell-b POST /orders {"sku":"s-1","qty":2}');
    expect(res.redirected).toBe(true);
  });

  it('keys the router checks first are still refused here, not redirected (a bad key gets its 400)', async () => {
    const answer = await routed(agent, herePort, 'bad key with spaces');
    expect(answer.status).toBe(400);
  });

  it("the cell's own region serves it directly", async () => {
    const answer = await routed(agent, homePort, 'tenant-b');
    expect([answer.status, answer.servedBy]).toEqual([200, 'cell-b']);
  });

  it('serves another region’s cell once its link appears here, and sends it back to its region when the link goes (a deploy changing reach), failing no request', async () => {
    const answers: number[] = [];
    let stop = false;
    const traffic = (async () => {
      while (!stop) answers.push((await routed(agent, herePort, 'tenant-b')).status);
    })();
    linkedHere.add('cell-b.test');
    await until('cell-b served here', async () => (await routed(agent, herePort, 'tenant-b')).servedBy === 'cell-b', 20_000);
    linkedHere.delete('cell-b.test');
    await until('cell-b sent to its region again', async () => (await routed(agent, herePort, 'tenant-b')).status === 307, 20_000);
    stop = true;
    await traffic;
    expect(answers.length).toBeGreaterThan(10);
    expect(answers.filter((s) => s !== 200 && s !== 307)).toEqual([]);
    expect(answers).toContain(200);
  });

  it('still refuses a document whose own-region cell does not resolve (only other regions’ cells are sent away)', async () => {
    // plan() reads only the slots in force before it changes anything: an empty HAProxy.
    const api = { showMap: async () => new Map<string, string>() } as unknown as RuntimeApi;
    const applier = new MappingApplier(api, {
      stateDir: dir,
      slots: 16,
      allowLoopback: true,
      elsewhere: { [homeUrl]: ['cell-b'] },
      resolve: async (host) => {
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      },
    });
    const doc = JSON.parse(fs.readFileSync(path.join(dir, 'mapping.json'), 'utf8')) as MappingDocument;
    await expect(applier.plan(doc)).rejects.toThrow(/cell cell-a: endpoint host cell-a\.test does not resolve/);
  });
});

describe('elsewhereOf (the agent’s ELSEWHERE)', () => {
  it('gives one redirect backend per region URL, in URL order', () => {
    const e = elsewhereOf({ 'https://us.example.com': ['c3'], 'https://eu.example.com': ['c1', 'c2'] });
    expect([...e.backends]).toEqual([
      ['c1', 'away0'],
      ['c2', 'away0'],
      ['c3', 'away1'],
    ]);
    expect(e.urls).toEqual([
      ['away0', 'https://eu.example.com'],
      ['away1', 'https://us.example.com'],
    ]);
  });

  it('refuses a cell under two URLs, and more regions than the router has redirect backends', () => {
    expect(() => elsewhereOf({ 'https://a.example.com': ['c1'], 'https://b.example.com': ['c1'] })).toThrow(/cell c1 is sent to two regions/);
    const many = Object.fromEntries(Array.from({ length: MAX_ELSEWHERE_REGIONS + 1 }, (_, i) => [`https://r${i}.example.com`, [`c${i}`]]));
    expect(() => elsewhereOf(many)).toThrow(/redirect backends/);
  });
});
