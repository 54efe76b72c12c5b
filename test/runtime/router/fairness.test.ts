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
  tenantMaxConnOf,
} from '../../../lib/runtime/router';
import { exampleFleet } from '../../support/fleet';
import { FakeCell, p99, startCell, startRouterBehindNlb } from '../../support/cells';

/** One request; resolves with its status, Retry-After and how long it took (status 0 on a socket error). */
function send(agent: http.Agent, port: number, tenant: string): Promise<{ status: number; ms: number; retryAfter?: string }> {
  const started = process.hrtime.bigint();
  const ms = () => Number(process.hrtime.bigint() - started) / 1e6;
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent, headers: { 'x-tenant-id': tenant } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: ms(), retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', () => resolve({ status: 0, ms: ms() }));
  });
}

/**
 * One slow cell (1.5 s a request, or 1.5 s plus up to `jitterMs`) and the routers a test starts in front of it, each behind an NLB
 * stand-in that names every client by the loopback address it connects from (PROXY v2; 127.0.0.5 is
 * client 198.51.100.5): 24 slots for the cell, split over 3 zonal servers; a saturated cell queues
 * for 1 s, then 503. Registers its own beforeAll and afterAll; `start` gives the stand-in's port.
 */
function slowCellRouters(layout: 'one-cell' | 'cell-zero' = 'one-cell', jitterMs = 0): (options: Partial<LocalRouterOptions>) => Promise<number> {
  let cell: FakeCell;
  let factoryCell: FakeCell | undefined;
  const routers: { router: LocalRouter; nlb: { port: number; close(): Promise<void> } }[] = [];
  let dir: string;
  beforeAll(async () => {
    cell = await startCell('cell-a');
    cell.behaviour = 'slow';
    cell.delayMs = 1500;
    cell.jitterMs = jitterMs;
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
    await Promise.all(routers.map((r) => r.nlb.close()));
    await Promise.all(routers.map((r) => r.router.stop()));
    await cell.close();
    await factoryCell?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return async (options) => {
    const started = await startRouterBehindNlb({
      mappingFile: path.join(dir, 'mapping.json'),
      bucketCount: 1024,
      cellMaxConn: 24,
      queueTimeoutMs: 1000,
      ...options,
    });
    routers.push(started);
    return started.nlb.port;
  };
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
    const baseline = p99(await Promise.all(Array.from({ length: 10 }, () => send(agent, port, 'neighbour'))));
    let done = false;
    const heavy: { status: number; retryAfter?: string }[] = [];
    const pressure = (async () => {
      while (!done) heavy.push(...(await Promise.all(Array.from({ length: 80 }, () => send(agent, port, 'heavy')))));
    })();
    await new Promise((r) => setTimeout(r, 200));
    const neighbour: { status: number; ms: number }[] = [];
    for (let wave = 0; wave < 3; wave++) neighbour.push(...(await Promise.all(Array.from({ length: 10 }, () => send(agent, port, 'neighbour')))));
    done = true;
    await pressure;
    agent.destroy();
    return { heavy, neighbour, baseline };
  }

  it("answers the heavy tenant's excess 429 with Retry-After and keeps its neighbour at 100% success", async () => {
    const port = await start({ tenantMaxConn: tenantMaxConnOf(24) });
    const { heavy, neighbour, baseline } = await contention(port);
    expect(neighbour.filter((r) => r.status !== 200)).toEqual([]);
    expect(neighbour).toHaveLength(30);
    expect(p99(neighbour)).toBeLessThanOrEqual(2 * baseline);
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

/** One request from `localAddress` (a client address of its own on loopback), and how long its answer took. */
function sendFrom(localAddress: string, port: number, tenant: string): Promise<{ status: number; ms: number }> {
  const started = process.hrtime.bigint();
  const ms = () => Number(process.hrtime.bigint() - started) / 1e6;
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', localAddress, agent: false, headers: { 'x-tenant-id': tenant } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: ms() }));
    });
    req.on('error', () => resolve({ status: 0, ms: ms() }));
  });
}

/**
 * An unverified key is anyone's to send: one client address sending many slow requests with a
 * victim tenant's key. Counted per key alone, it spends the victim's whole share and the victim gets
 * 429s; counted per address as well, that address holds at most its part, and the victim, from its
 * own address, is served. The same load without the per-address part shows the victim refused.
 */
describe("fairness inside a tenant: one client address cannot spend its tenant's share", () => {
  const start = (clientMaxConnPerCell: number) => slowCell({ tenantMaxConn: 12, clientMaxConnPerCell });
  const slowCell = slowCellRouters();

  /** The attacker (127.0.0.5) keeps 40 slow requests with the victim's key in flight; the victim (127.0.0.6) sends 30, 5 at a time. */
  async function forged(port: number) {
    const baseline = p99(await Promise.all(Array.from({ length: 5 }, () => sendFrom('127.0.0.6', port, 'victim'))));
    let done = false;
    const attacker: { status: number }[] = [];
    const pressure = (async () => {
      while (!done) attacker.push(...(await Promise.all(Array.from({ length: 40 }, () => sendFrom('127.0.0.5', port, 'victim')))));
    })();
    await new Promise((r) => setTimeout(r, 200));
    const victim: { status: number; ms: number }[] = [];
    for (let wave = 0; wave < 6; wave++) victim.push(...(await Promise.all(Array.from({ length: 5 }, () => sendFrom('127.0.0.6', port, 'victim')))));
    done = true;
    await pressure;
    return { attacker, victim, baseline };
  }

  it('keeps the victim at 100% success while one address sends its key, holding that address to its part', async () => {
    const { attacker, victim, baseline } = await forged(await start(6));
    expect(victim.filter((r) => r.status !== 200)).toEqual([]);
    expect(victim).toHaveLength(30);
    expect(p99(victim)).toBeLessThanOrEqual(2 * baseline);
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
    const port = await start({ tenantMaxConn: 12, clientMaxConnPerCell: 6 });
    const baseline = p99(
      (
        await Promise.all([
          Promise.all(Array.from({ length: 4 }, () => sendFrom('127.0.0.7', port, 'neighbour'))),
          Promise.all(Array.from({ length: 4 }, () => sendFrom('127.0.0.6', port, 'victim'))),
        ])
      ).flat(),
    );
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
    const neighbour: { status: number; ms: number }[] = [];
    const victim: { status: number; ms: number }[] = [];
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
    expect(p99([...neighbour, ...victim])).toBeLessThanOrEqual(2 * baseline);
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

/**
 * Max-min fairness inside a cell, through the NLB stand-in: a neighbour tenant that stays within its
 * fair share keeps 100% success with p99 within 2× of its baseline (the slow cell alone), while one
 * address rotating keys, or several heavy tenants at once, saturate its cell. Each attack is run
 * again without the rule it tests, and the neighbour then loses requests, so each test can fail.
 */
describe('max-min fairness inside a cell: one address rotating keys, several heavy tenants at once', () => {
  // Answers take 1.5 to 2.5 s, so the saturated cell's slots free one by one (about 12 a second), not all at once.
  const start = slowCellRouters('one-cell', 1000);
  const NEIGHBOUR = '127.0.0.7';

  /** Sends `inFlight` requests from `from` at once, each with the key `key(n)`, and again as the whole wave ends, until `done()`. */
  async function press(port: number, from: string, inFlight: number, key: (n: number) => string, done: () => boolean, out: { status: number }[]) {
    let n = 0;
    while (!done()) out.push(...(await Promise.all(Array.from({ length: inFlight }, () => sendFrom(from, port, key(n++))))));
  }

  /** Keeps `inFlight` requests from `from` in flight with the key `key`: a new one as each ends (a client pipelining its work), until `done()`. */
  async function keep(port: number, from: string, inFlight: number, key: string, done: () => boolean, out: { status: number }[]) {
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (!done()) out.push(await sendFrom(from, port, key));
      }),
    );
  }

  /** The neighbour's requests, `width` at a time for `waves` waves. */
  async function neighbour(port: number, width: number, waves: number): Promise<{ status: number; ms: number }[]> {
    const answers: { status: number; ms: number }[] = [];
    for (let wave = 0; wave < waves; wave++)
      answers.push(...(await Promise.all(Array.from({ length: width }, () => sendFrom(NEIGHBOUR, port, 'neighbour')))));
    return answers;
  }

  /**
   * The neighbour's baseline p99 on the idle cell, then its answers while `attack` runs, from
   * `settleMs` after the attack began: a burst that takes every slot of the cell at once, with
   * requests longer than the queue timeout, frees no slot for the first 1.5 s, and no order of the
   * queue can serve anybody then (the queue bounds that wait: 503 after 1 s).
   */
  async function underAttack(port: number, attack: (done: () => boolean) => Promise<unknown>, settleMs = 300) {
    const baseline = p99(await neighbour(port, 3, 2));
    let done = false;
    const pressure = attack(() => done);
    await new Promise((r) => setTimeout(r, settleMs));
    const attacked = await neighbour(port, 3, 6);
    done = true;
    await pressure;
    return { baseline, attacked };
  }

  function expectUnharmed({ baseline, attacked }: { baseline: number; attacked: { status: number; ms: number }[] }): void {
    expect(attacked).toHaveLength(18);
    expect(attacked.filter((a) => a.status !== 200)).toEqual([]);
    expect(p99(attacked)).toBeLessThanOrEqual(2 * baseline);
  }

  /** One address keeping 80 requests in flight, each with a key never seen before: every one within its tenant's cap. */
  const rotating = (port: number, out: { status: number }[]) => (done: () => boolean) =>
    press(port, '127.0.0.5', 80, (n) => `rotating-${n}`, done, out);

  it('holds one address rotating keys to its part of the cell; the neighbour stays at 100% with p99 within 2x of its baseline', async () => {
    const port = await start({ tenantMaxConn: 12, clientMaxConnPerCell: 6 });
    const attacker: { status: number }[] = [];
    const result = await underAttack(port, rotating(port, attacker));
    expectUnharmed(result);
    // Of each wave of 80 fresh keys, the address's part of the cell (6) is served; the rest get 429 at once.
    expect(attacker.filter((r) => r.status === 200).length).toBe(6 * (attacker.length / 80));
    expect(attacker.filter((r) => r.status === 429).length).toBe(74 * (attacker.length / 80));
  });

  it('keeps the neighbour at 100% while ten addresses rotate keys at once, each within its part, 60 wanted of 24 slots', async () => {
    const port = await start({ tenantMaxConn: 12, clientMaxConnPerCell: 6 });
    const attackers: { status: number }[] = [];
    const result = await underAttack(
      port,
      (done) =>
        Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            Promise.all(
              Array.from({ length: 6 }, async (_, j) => {
                let n = 0;
                while (!done()) attackers.push(await sendFrom(`127.0.0.${30 + i}`, port, `rotating-${i}-${j}-${n++}`));
              }),
            ),
          ),
        ),
      3000,
    );
    expectUnharmed(result);
    // The cell was saturated: the attackers' requests waited in its queue and some timed out.
    expect(attackers.filter((r) => r.status === 503).length).toBeGreaterThan(0);
  });

  it('counted per tenant alone, the rotating address takes the cell (the test can fail)', async () => {
    const port = await start({ tenantMaxConn: 12 });
    const { attacked } = await underAttack(port, rotating(port, []));
    expect(attacked.filter((a) => a.status === 503).length).toBeGreaterThan(0);
  });

  /** Five heavy tenants, each from two addresses keeping 6 requests in flight (12, its cap): 60 wanted of the cell's 24 slots. */
  const heavyTenants = (port: number, out: Map<string, { status: number }[]>) => (done: () => boolean) =>
    Promise.all(
      Array.from({ length: 10 }, (_, i) => {
        const tenant = `heavy-${Math.floor(i / 2)}`;
        if (!out.has(tenant)) out.set(tenant, []);
        return keep(port, `127.0.0.${11 + i}`, 6, tenant, done, out.get(tenant)!);
      }),
    );

  it('serves a tenant within its fair share first while five tenants at their caps saturate the cell, and none of them starves', async () => {
    const port = await start({ tenantMaxConn: 12, clientMaxConnPerCell: 6 });
    const heavy = new Map<string, { status: number }[]>();
    const result = await underAttack(port, heavyTenants(port, heavy), 3000);
    expectUnharmed(result);
    // The cell was saturated: the heavy tenants' requests waited in its queue and some timed out.
    const all = [...heavy.values()].flat();
    expect(all.filter((r) => r.status === 503).length).toBeGreaterThan(0);
    // Among equals the queue is fair: every heavy tenant was served.
    for (const [tenant, answers] of heavy) expect([tenant, answers.filter((r) => r.status === 200).length > 0]).toEqual([tenant, true]);
  });

  it("in arrival order alone, the same tenants take the neighbour's turn (the test can fail)", async () => {
    const port = await start({ tenantMaxConn: 12 });
    const { attacked } = await underAttack(port, heavyTenants(port, new Map()), 3000);
    expect(attacked.filter((a) => a.status === 503).length).toBeGreaterThan(0);
  });
});
