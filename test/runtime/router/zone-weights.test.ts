import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as os from 'os';
import * as path from 'path';
import { writeFileAtomic } from '../../../lib/domain/files';
import { initialMapping, pinKey } from '../../../lib/domain/mapping';
import { initialZones, withZoneWeight, ZonesDocument } from '../../../lib/domain/zones';
import { LocalRouter, startLocalRouter } from '../../../lib/runtime/router';
import { onFreePorts, until } from '../../support/cells';

const NOW = { now: '2026-12-03T16:00:00.000Z' };
const ZONES = ['lcl1-az1', 'lcl1-az2', 'lcl1-az3'];
/** Zone z's stand-in subnet, as the router VPC's subnets are in AWS: each cell's endpoint has one address in each. */
const zoneNetwork = (z: number) => `127.0.${101 + z}.0/24`;
const address = (z: number, cell: number) => `127.0.${101 + z}.${cell}`;

/**
 * Two cells, each answering from three zones on its own addresses (the port the same, as an
 * interface endpoint's are), a router whose zone networks name them, and the zones document it
 * follows. Every answer says its zone.
 */
describe('zone weights from the zones document (real HAProxy)', () => {
  let router: LocalRouter;
  let port: number;
  let dir: string;
  let zonesFile: string;
  let current: ZonesDocument;
  const servers: http.Server[] = [];
  const logs: string[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-zone-weights-'));
    const endpoints: { id: string; endpoint: string; state: 'active' }[] = [];
    for (const cell of [1, 2]) {
      let cellPort = 0;
      for (let z = 0; z < 3; z++) {
        const server = http.createServer((req, res) => {
          if (req.url === '/health') return void res.end('ok');
          res.writeHead(200, { 'x-zone': ZONES[z], 'x-served-cell': `cell-${cell}` });
          setTimeout(() => res.end(ZONES[z]), 2);
        });
        await new Promise<void>((resolve) => server.listen(cellPort, address(z, cell), resolve));
        cellPort = (server.address() as AddressInfo).port;
        servers.push(server);
      }
      endpoints.push({ id: `cell-${cell}`, endpoint: `http://cell-${cell}.zones.test:${cellPort}`, state: 'active' });
    }
    const mappingFile = path.join(dir, 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(initialMapping(endpoints, 16384, NOW)));
    zonesFile = path.join(dir, 'zones.json');
    current = initialZones('local', ZONES, NOW.now);
    writeFileAtomic(zonesFile, JSON.stringify(current));
    router = await onFreePorts(1, async ([p]) => {
      port = p;
      return startLocalRouter({
        mappingFile,
        port,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: (line) => logs.push(line),
        pollMs: 200,
        cellMaxConn: 30,
        zones: 3,
        zoneNetworks: Object.fromEntries(ZONES.map((zone, z) => [zone, [zoneNetwork(z)]])),
        zonesFile,
        resolve: async (host) => {
          const cell = Number(/^cell-(\d)\./.exec(host)![1]);
          return [2, 0, 1].map((z) => address(z, cell));
        },
      });
    });
    await until('every zonal server up', async () => (await zoneCounts(60)).total === 60, 60_000);
  }, 120_000);
  afterAll(async () => {
    await router?.stop();
    servers.forEach((s) => {
      s.closeAllConnections();
      s.close();
    });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** `n` requests from 50 tenants, 10 at a time: how many each zone answered, and the failures. */
  async function zoneCounts(n: number): Promise<{ byZone: Record<string, number>; failed: number; total: number }> {
    const byZone: Record<string, number> = Object.fromEntries(ZONES.map((z) => [z, 0]));
    let failed = 0;
    let total = 0;
    let next = 0;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 10 });
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < n) {
          const i = next++;
          const zone = await new Promise<string | undefined>((resolve) => {
            const req = http.get({ host: '127.0.0.1', port, path: '/', agent, headers: { 'x-tenant-id': `tenant-${i % 50}` } }, (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode === 200 ? String(res.headers['x-zone']) : undefined));
            });
            req.on('error', () => resolve(undefined));
          });
          if (zone === undefined) failed++;
          else {
            byZone[zone] = (byZone[zone] ?? 0) + 1;
            total++;
          }
        }
      }),
    );
    agent.destroy();
    return { byZone, failed, total };
  }

  const write = (doc: ZonesDocument) => {
    current = doc;
    writeFileAtomic(zonesFile, JSON.stringify(doc));
  };
  const applied = (version: number) => logs.some((l) => l.includes('"zones-applied"') && l.includes(`"version":${version}`));

  it("puts each address in its zone's server whatever order DNS answers in, and spreads new requests evenly at full weights", async () => {
    const { byZone, failed } = await zoneCounts(300);
    expect(failed).toBe(0);
    for (const zone of ZONES) expect(byZone[zone]).toBeGreaterThanOrEqual(80);
    const stat = await router.agent['o'].api.stats();
    for (const cell of [0, 1]) {
      const rows = stat.filter((r) => r.pxname === `slot${cell}` && /^z\d$/.test(r.svname));
      const c = Number(rows.length > 0 && /127\.0\.101\.(\d)/.exec(rows[0].addr)?.[1]);
      expect(rows.map((r) => r.addr.replace(/:\d+$/, ''))).toEqual([0, 1, 2].map((z) => address(z, c)));
    }
  });

  it('drains a zone: after the poll that applies it, no new request reaches the zone, and none fails', async () => {
    write(withZoneWeight(current, 'lcl1-az2', 0, { zones: ZONES, reason: 'test drain', now: NOW.now }));
    await until('the drain applied', async () => applied(current.version), 30_000);
    const { byZone, failed, total } = await zoneCounts(300);
    expect(failed).toBe(0);
    expect(byZone['lcl1-az2']).toBe(0);
    expect(total).toBe(300);
    // The cell's whole limit stays with the two zones left (15 each).
    const rows = (await router.agent['o'].api.stats()).filter((r) => r.pxname === 'slot0' && /^z\d$/.test(r.svname));
    expect(rows.map((r) => [r.svname, r.weight, r.slim])).toEqual([
      ['z0', '100', '15'],
      ['z1', '0', '10'],
      ['z2', '100', '15'],
    ]);
  });

  it('refuses a malformed and a stale zones document, keeping the drain in force', async () => {
    fs.writeFileSync(zonesFile, JSON.stringify({ ...current, version: current.version + 1, zones: { 'us-east-1a': { weight: 100 } } }));
    await until('the malformed document rejected', async () => logs.some((l) => l.includes('"zones-rejected"') && l.includes('us-east-1a')), 30_000);
    fs.writeFileSync(zonesFile, JSON.stringify({ ...initialZones('local', ZONES, NOW.now), version: current.version - 1 }));
    await until(
      'the stale document rejected',
      async () => logs.some((l) => l.includes('"zones-rejected"') && l.includes('is not above the version in force')),
      30_000,
    );
    const { byZone, failed } = await zoneCounts(150);
    expect(failed).toBe(0);
    expect(byZone['lcl1-az2']).toBe(0);
    writeFileAtomic(zonesFile, JSON.stringify(current));
  });

  it('keeps the drain across a HAProxy restart (the agent puts the weights on the servers again)', async () => {
    await router.restartHaproxy();
    await until('serving again', async () => (await zoneCounts(20)).failed === 0, 60_000);
    const { byZone, failed } = await zoneCounts(150);
    expect(failed).toBe(0);
    expect(byZone['lcl1-az2']).toBe(0);
  });

  it('undrains in steps: the zone takes a share that grows with its weight, and its full share at 100', async () => {
    const shares: number[] = [];
    for (const weight of [1, 25, 100]) {
      write(withZoneWeight(current, 'lcl1-az2', weight, { zones: ZONES, now: NOW.now }));
      await until(`weight ${weight} applied`, async () => applied(current.version), 30_000);
      const { byZone, failed, total } = await zoneCounts(600);
      expect(failed).toBe(0);
      shares.push(byZone['lcl1-az2'] / total);
    }
    // Weights 1, 25 and 100 against 100 + 100: 1/201, 25/225 and 1/3 of each cell's requests.
    expect(shares[0]).toBeGreaterThan(0);
    expect(shares[0]).toBeLessThan(0.03);
    expect(shares[1]).toBeGreaterThan(0.06);
    expect(shares[1]).toBeLessThan(0.17);
    expect(shares[2]).toBeGreaterThan(0.27);
  });
});

/**
 * Cells the zones do not fully cover: one whose endpoint has an address only in the zone being
 * drained (it keeps it: a drain never leaves a cell without a path), one whose endpoint resolves to
 * an address in no listed zone (served at full weight whatever the document says).
 */
describe('zone weights on cells outside the listed zones (real HAProxy)', () => {
  let router: LocalRouter;
  let port: number;
  let dir: string;
  const servers: http.Server[] = [];
  const logs: string[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-zone-edges-'));
    const listen = async (host: string, name: string) => {
      const server = http.createServer((req, res) => {
        if (req.url === '/health') return void res.end('ok');
        res.end(name);
      });
      await new Promise<void>((resolve) => server.listen(0, host, resolve));
      servers.push(server);
      return (server.address() as AddressInfo).port;
    };
    const onlyDrained = await listen(address(1, 9), 'only-drained');
    const outside = await listen('127.0.0.1', 'outside');
    const mappingFile = path.join(dir, 'mapping.json');
    let doc = initialMapping(
      [
        { id: 'only-drained', endpoint: `http://only-drained.zones.test:${onlyDrained}`, state: 'active' as const },
        { id: 'outside', endpoint: `http://outside.zones.test:${outside}`, state: 'active' as const },
      ],
      16384,
      NOW,
    );
    doc = pinKey(pinKey(doc, 'to-drained', 'only-drained', NOW), 'to-outside', 'outside', NOW);
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    const zonesFile = path.join(dir, 'zones.json');
    const drained = withZoneWeight(initialZones('local', ZONES, NOW.now), 'lcl1-az2', 0, { zones: ZONES, now: NOW.now });
    writeFileAtomic(zonesFile, JSON.stringify(drained));
    router = await onFreePorts(1, async ([p]) => {
      port = p;
      return startLocalRouter({
        mappingFile,
        port,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: (line) => logs.push(line),
        pollMs: 200,
        zones: 3,
        zoneNetworks: Object.fromEntries(ZONES.map((zone, z) => [zone, [zoneNetwork(z)]])),
        zonesFile,
        resolve: async (host) => (host.startsWith('only-drained') ? [address(1, 9)] : ['127.0.0.1']),
      });
    });
    await until('the drain in force', async () => logs.some((l) => l.includes('"zones-applied"')), 30_000);
  }, 120_000);
  afterAll(async () => {
    await router?.stop();
    servers.forEach((s) => s.close());
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const get = (key: string) =>
    new Promise<{ status: number; body: string }>((resolve) => {
      http.get({ host: '127.0.0.1', port, path: '/', headers: { 'x-tenant-id': key }, agent: false }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
    });

  it('keeps serving a cell reachable only through the drained zone, and one whose address is in no listed zone', async () => {
    await until('both cells served', async () => (await get('to-drained')).status === 200 && (await get('to-outside')).status === 200, 30_000);
    for (let i = 0; i < 10; i++) {
      expect(await get('to-drained')).toEqual({ status: 200, body: 'only-drained' });
      expect(await get('to-outside')).toEqual({ status: 200, body: 'outside' });
    }
    const rows = (await router.agent['o'].api.stats()).filter(
      (r) => /^slot\d+$/.test(r.pxname) && /^z\d$/.test(r.svname) && !r.status.startsWith('MAINT'),
    );
    // Each cell's one address at full weight: the drained zone's because it is the cell's only path, the other's because it has no zone.
    expect(rows.map((r) => r.weight)).toEqual(['100', '100']);
  });
});
