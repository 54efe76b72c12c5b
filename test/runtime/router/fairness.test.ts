import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { adoptionMapping, initialMapping } from '../../../lib/domain/mapping';
import {
  LocalRouter,
  LocalRouterOptions,
  renderHaproxyConfig,
  routerRoutingOf,
  routerTaskOptions,
  startLocalRouter,
  tenantMaxConnOf,
} from '../../../lib/runtime/router';
import { exampleFleet } from '../../support/fleet';
import { FakeCell, onFreePorts, startCell } from '../../support/cells';

/** One request; resolves with its status and Retry-After (status 0 on a socket error). */
function send(agent: http.Agent, port: number, tenant: string): Promise<{ status: number; retryAfter?: string }> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent, headers: { 'x-tenant-id': tenant } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', () => resolve({ status: 0 }));
  });
}

/**
 * One slow cell (1.5 s a request) and the routers a test starts in front of it: 24 slots for the
 * cell, split over 3 zonal servers; a saturated cell queues for 1 s, then 503. Registers its own
 * beforeAll and afterAll; `start` gives a router's port.
 */
function slowCellRouters(layout: 'one-cell' | 'cell-zero' = 'one-cell'): (options: Partial<LocalRouterOptions>) => Promise<number> {
  let cell: FakeCell;
  let factoryCell: FakeCell | undefined;
  const routers: LocalRouter[] = [];
  let dir: string;
  beforeAll(async () => {
    cell = await startCell('cell-a');
    cell.behaviour = 'slow';
    cell.delayMs = 1500;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairness-'));
    const now = { now: new Date().toISOString() };
    const slow = { id: 'cell-a', endpoint: cell.endpoint, state: 'active' as const };
    // Cell zero (docs/cell-zero.md): the existing service holds every bucket, the factory's first
    // cell none yet, so every tenant of the fleet shares the one cell.
    if (layout === 'cell-zero') factoryCell = await startCell('cell-1');
    const doc =
      layout === 'cell-zero'
        ? adoptionMapping({ ...slow, id: 'zero' }, [{ id: 'cell-1', endpoint: factoryCell!.endpoint, state: 'active' }], 1024, now)
        : initialMapping([slow], 1024, now);
    fs.writeFileSync(path.join(dir, 'mapping.json'), JSON.stringify(doc));
  });
  afterAll(async () => {
    await Promise.all(routers.map((r) => r.stop()));
    await cell.close();
    await factoryCell?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return (options) =>
    onFreePorts(1, async ([port]) => {
      const router = await startLocalRouter({
        mappingFile: path.join(dir, 'mapping.json'),
        port,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 1024,
        healthCheckPath: '/health',
        log: () => undefined,
        pollMs: 200,
        cellMaxConn: 24,
        queueTimeoutMs: 1000,
        ...options,
      });
      routers.push(router);
      return port;
    });
}

describe('the per-tenant cap in a router task', () => {
  it("is rendered from the fleet's router.tenantMaxConn, half of the cell's slots unless the fleet says otherwise", () => {
    const fleet = exampleFleet();
    expect(fleet.router.tenantMaxConn).toBe(tenantMaxConnOf(fleet.router.cellMaxConn));
    expect(renderHaproxyConfig(routerTaskOptions(routerRoutingOf(fleet)))).toContain(
      `hdr retry-after 1 if { sc0_trackers gt ${fleet.router.cellMaxConn / 2} }`,
    );
    const capped = renderHaproxyConfig(routerTaskOptions({ ...routerRoutingOf(fleet), tenantMaxConn: 100 }));
    expect(capped).toContain(`hdr retry-after 1 if { sc0_trackers gt 100 }`);
  });
});

/**
 * One tenant holding many slow requests on a cell (a share of the cell's router slots each): its
 * neighbour on the same cell keeps every request answered, because the tenant's requests beyond its
 * share are answered 429 + Retry-After at once. The same load through a router without the cap
 * shows the neighbour losing requests, so the test can fail.
 */
describe('fairness inside a cell: a per-tenant cap on concurrent requests', () => {
  const start = slowCellRouters();

  /**
   * The heavy tenant keeps 80 slow requests in flight (a new wave as each ends) while its neighbour
   * sends 30 requests, 10 at a time (within its own share).
   */
  async function contention(port: number) {
    const agent = new http.Agent({ keepAlive: false, maxSockets: 200 });
    let done = false;
    const heavy: { status: number; retryAfter?: string }[] = [];
    const pressure = (async () => {
      while (!done) heavy.push(...(await Promise.all(Array.from({ length: 80 }, () => send(agent, port, 'heavy')))));
    })();
    await new Promise((r) => setTimeout(r, 200));
    const neighbour: { status: number }[] = [];
    for (let wave = 0; wave < 3; wave++) neighbour.push(...(await Promise.all(Array.from({ length: 10 }, () => send(agent, port, 'neighbour')))));
    done = true;
    await pressure;
    agent.destroy();
    return { heavy, neighbour };
  }

  it("answers the heavy tenant's excess 429 with Retry-After and keeps its neighbour at 100% success", async () => {
    const port = await start({ tenantMaxConn: tenantMaxConnOf(24) });
    const { heavy, neighbour } = await contention(port);
    expect(neighbour.filter((r) => r.status !== 200)).toEqual([]);
    expect(neighbour).toHaveLength(30);
    // Half of the cell's 24 slots: of each wave of 80, 12 of the heavy tenant's requests are served
    // and the rest refused at once with Retry-After; none waits in the cell's queue into a 503.
    const refused = heavy.filter((r) => r.status === 429);
    expect(heavy.filter((r) => r.status === 200).length).toBe(12 * (heavy.length / 80));
    expect(refused.length).toBe(68 * (heavy.length / 80));
    expect(refused.every((r) => r.retryAfter === '1')).toBe(true);
  });

  it("without the cap, the same load takes the neighbour's slots (the test can fail)", async () => {
    const port = await start({});
    const { neighbour } = await contention(port);
    expect(neighbour.filter((r) => r.status === 503).length).toBeGreaterThan(0);
  });
});

/** One request from `localAddress` (a client address of its own on loopback). */
function sendFrom(localAddress: string, port: number, tenant: string): Promise<{ status: number }> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', localAddress, agent: false, headers: { 'x-tenant-id': tenant } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
    });
    req.on('error', () => resolve({ status: 0 }));
  });
}

/**
 * An unverified key is anyone's to send: one client address sending many slow requests with a
 * victim tenant's key. Counted per key alone, it spends the victim's whole share and the victim gets
 * 429s; counted per address as well, that address holds at most its part, and the victim, from its
 * own address, is served. The same load without the per-address part shows the victim refused.
 */
describe("fairness inside a tenant: one client address cannot spend its tenant's share", () => {
  const start = (tenantMaxConnPerClient: number) => slowCell({ tenantMaxConn: 12, tenantMaxConnPerClient });
  const slowCell = slowCellRouters();

  /** The attacker (127.0.0.5) keeps 40 slow requests with the victim's key in flight; the victim (127.0.0.6) sends 30, 5 at a time. */
  async function forged(port: number) {
    let done = false;
    const attacker: { status: number }[] = [];
    const pressure = (async () => {
      while (!done) attacker.push(...(await Promise.all(Array.from({ length: 40 }, () => sendFrom('127.0.0.5', port, 'victim')))));
    })();
    await new Promise((r) => setTimeout(r, 200));
    const victim: { status: number }[] = [];
    for (let wave = 0; wave < 6; wave++) victim.push(...(await Promise.all(Array.from({ length: 5 }, () => sendFrom('127.0.0.6', port, 'victim')))));
    done = true;
    await pressure;
    return { attacker, victim };
  }

  it('keeps the victim at 100% success while one address sends its key, holding that address to its part', async () => {
    const { attacker, victim } = await forged(await start(6));
    expect(victim.filter((r) => r.status !== 200)).toEqual([]);
    expect(victim).toHaveLength(30);
    // Of each wave of 40, the address's part (6) is served; the rest is refused at once.
    expect(attacker.filter((r) => r.status === 200).length).toBe(6 * (attacker.length / 40));
  });

  it("counted per key alone, the same load spends the victim's share (the test can fail)", async () => {
    const { victim } = await forged(await start(12));
    expect(victim.filter((r) => r.status === 429).length).toBeGreaterThan(0);
  });
});

/**
 * Cell zero concentrates every tenant of the fleet on one cell while it is adopted: the same caps
 * hold there. Both attacks at once on the slow cell zero: a heavy tenant keeping 80 requests in
 * flight, and one address sending a victim's key 40 at a time. The neighbour and the victim, each
 * from its own address, stay at 100%.
 */
describe('fairness on cell zero, holding every tenant of the fleet', () => {
  const start = slowCellRouters('cell-zero');

  it('keeps a neighbour and a victim at 100% while a heavy tenant and a forging address press on cell zero', async () => {
    const port = await start({ tenantMaxConn: 12, tenantMaxConnPerClient: 6 });
    let done = false;
    const heavy: { status: number }[] = [];
    const forged: { status: number }[] = [];
    const pressure = Promise.all([
      (async () => {
        while (!done) heavy.push(...(await Promise.all(Array.from({ length: 80 }, () => sendFrom('127.0.0.4', port, 'heavy')))));
      })(),
      (async () => {
        while (!done) forged.push(...(await Promise.all(Array.from({ length: 40 }, () => sendFrom('127.0.0.5', port, 'victim')))));
      })(),
    ]);
    await new Promise((r) => setTimeout(r, 200));
    const neighbour: { status: number }[] = [];
    const victim: { status: number }[] = [];
    for (let wave = 0; wave < 4; wave++) {
      const [n, v] = await Promise.all([
        Promise.all(Array.from({ length: 4 }, () => sendFrom('127.0.0.7', port, 'neighbour'))),
        Promise.all(Array.from({ length: 4 }, () => sendFrom('127.0.0.6', port, 'victim'))),
      ]);
      neighbour.push(...n);
      victim.push(...v);
    }
    done = true;
    await pressure;
    expect(neighbour.filter((r) => r.status !== 200)).toEqual([]);
    expect(victim.filter((r) => r.status !== 200)).toEqual([]);
    expect(neighbour.length + victim.length).toBe(32);
    // The pressure was real: each attacker was held to its share and refused the rest at once.
    expect(heavy.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    expect(forged.filter((r) => r.status === 429).length).toBeGreaterThan(0);
  });

  it('without the caps, the heavy tenant takes cell zero from its neighbour (the test can fail)', async () => {
    const port = await start({});
    let done = false;
    const pressure = (async () => {
      while (!done) await Promise.all(Array.from({ length: 80 }, () => sendFrom('127.0.0.4', port, 'heavy')));
    })();
    await new Promise((r) => setTimeout(r, 200));
    const neighbour: { status: number }[] = [];
    for (let wave = 0; wave < 3; wave++)
      neighbour.push(...(await Promise.all(Array.from({ length: 4 }, () => sendFrom('127.0.0.7', port, 'neighbour')))));
    done = true;
    await pressure;
    expect(neighbour.filter((r) => r.status === 503).length).toBeGreaterThan(0);
  });
});
