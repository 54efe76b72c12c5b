import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as os from 'os';
import * as path from 'path';
import { writeFileAtomic } from '../../../lib/domain/files';
import { initialMapping } from '../../../lib/domain/mapping';
import { initialZones, withZoneWeight, ZonesDocument } from '../../../lib/domain/zones';
import { LocalRouter, startLocalRouter } from '../../../lib/runtime/router';
import { onFreePorts, until } from '../../support/cells';

const NOW = { now: '2026-12-06T03:00:00.000Z' };
const ZONES = ['lcl1-az1', 'lcl1-az2', 'lcl1-az3'];
/** Zone z's stand-in endpoint subnet: the cell's endpoint has one address in each. */
const zoneNetwork = (z: number) => `127.0.${111 + z}.0/24`;
const address = (z: number) => `127.0.${111 + z}.1`;
/** The router task's own subnet, listed under its zone as the router stack lists the task subnets. */
const TASK_SUBNET = '10.9.2.0/24';

/**
 * router.zoneAffinity own-zone, with real HAProxy: one cell answering from three zones, a router
 * task whose subnet is in lcl1-az2, and the zones document it follows.
 */
describe("own-zone affinity: a cell's requests go to the endpoint address in the router task's zone first", () => {
  let router: LocalRouter;
  let port: number;
  let dir: string;
  let zonesFile: string;
  let current: ZonesDocument;
  const servers: http.Server[] = [];
  const logs: string[] = [];
  let holdMs = 2;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-zone-affinity-'));
    let cellPort = 0;
    for (let z = 0; z < 3; z++) {
      const server = http.createServer((req, res) => {
        if (req.url === '/health') return void res.end('ok');
        res.writeHead(200, { 'x-zone': ZONES[z] });
        setTimeout(() => res.end(ZONES[z]), holdMs);
      });
      await new Promise<void>((resolve) => server.listen(cellPort, address(z), resolve));
      cellPort = (server.address() as AddressInfo).port;
      servers.push(server);
    }
    const mappingFile = path.join(dir, 'mapping.json');
    fs.writeFileSync(
      mappingFile,
      JSON.stringify(initialMapping([{ id: 'cell-1', endpoint: `http://cell-1.zones.test:${cellPort}`, state: 'active' }], 16384, NOW)),
    );
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
        zoneNetworks: Object.fromEntries(ZONES.map((zone, z) => [zone, [zoneNetwork(z), ...(z === 1 ? [TASK_SUBNET] : [])]])),
        localNetworks: [TASK_SUBNET],
        zoneAffinity: 'own-zone',
        zonesFile,
        resolve: async () => [2, 0, 1].map((z) => address(z)),
      });
    });
    await until('every zonal server up', async () => (await zoneCounts(30, 1)).failed === 0, 60_000);
  }, 120_000);
  afterAll(async () => {
    await router?.stop();
    servers.forEach((s) => {
      s.closeAllConnections();
      s.close();
    });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** `n` requests, `concurrency` at a time: how many each zone answered, and the failures. */
  async function zoneCounts(n: number, concurrency: number): Promise<{ byZone: Record<string, number>; failed: number }> {
    const byZone: Record<string, number> = Object.fromEntries(ZONES.map((z) => [z, 0]));
    let failed = 0;
    let next = 0;
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
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
          else byZone[zone] += 1;
        }
      }),
    );
    agent.destroy();
    return { byZone, failed };
  }

  const write = (doc: ZonesDocument) => {
    current = doc;
    writeFileAtomic(zonesFile, JSON.stringify(doc));
  };
  const applied = (version: number) => logs.some((l) => l.includes('"zones-applied"') && l.includes(`"version":${version}`));

  it('sends about 98% of requests to its own zone, with the cell’s limit still split evenly over the zones', async () => {
    const { byZone, failed } = await zoneCounts(510, 1);
    expect(failed).toBe(0);
    // Weights 100 (own) against 1 and 1: 500 of every 510 in the own zone.
    expect(byZone['lcl1-az2']).toBeGreaterThanOrEqual(495);
    const rows = (await router.agent['o'].api.stats()).filter((r) => r.pxname === 'slot0' && /^z\d$/.test(r.svname));
    expect(rows.map((r) => [r.svname, r.weight, r.slim])).toEqual([
      ['z0', '1', '10'],
      ['z1', '100', '10'],
      ['z2', '1', '10'],
    ]);
  });

  it('sends what its own zone’s share cannot hold to the other zones, failing none', async () => {
    holdMs = 300;
    const { byZone, failed } = await zoneCounts(60, 25);
    holdMs = 2;
    expect(failed).toBe(0);
    // 25 at once against 10 a zone: the own zone full, the rest in the others.
    expect(byZone['lcl1-az1'] + byZone['lcl1-az3']).toBeGreaterThan(10);
  });

  it('follows a drain of its own zone (the others share evenly) and of part of a zone (the zones document’s weights alone)', async () => {
    write(withZoneWeight(current, 'lcl1-az2', 0, { zones: ZONES, reason: 'test drain', now: NOW.now }));
    await until('the drain applied', async () => applied(current.version), 30_000);
    const drained = await zoneCounts(300, 5);
    expect(drained.failed).toBe(0);
    expect(drained.byZone['lcl1-az2']).toBe(0);
    expect(drained.byZone['lcl1-az1']).toBeGreaterThan(100);
    expect(drained.byZone['lcl1-az3']).toBeGreaterThan(100);
    // Half of lcl1-az2 back: a partial weight, so the document's weights rule (100/50/100).
    write(withZoneWeight(current, 'lcl1-az2', 50, { zones: ZONES, now: NOW.now }));
    await until('the partial undrain applied', async () => applied(current.version), 30_000);
    const rows = (await router.agent['o'].api.stats()).filter((r) => r.pxname === 'slot0' && /^z\d$/.test(r.svname));
    expect(rows.map((r) => [r.svname, r.weight])).toEqual([
      ['z0', '100'],
      ['z1', '50'],
      ['z2', '100'],
    ]);
    // Whole again: own zone first.
    write(withZoneWeight(current, 'lcl1-az2', 100, { zones: ZONES, now: NOW.now }));
    await until('the undrain applied', async () => applied(current.version), 30_000);
    expect((await zoneCounts(102, 1)).byZone['lcl1-az2']).toBeGreaterThanOrEqual(98);
  });
});
