import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { adoptionMapping } from '../../../lib/domain/mapping';
import { LocalRouter, startLocalRouter } from '../../../lib/runtime/router';
import { FakeCell, onFreePorts, startCell, until } from '../../support/cells';

/**
 * The way back (docs/cell-zero.md, "Taking the router out of the path"): clients are pointed at the
 * existing endpoint again, then the routers stop. Requests already in flight through the router
 * finish (HAProxy's soft stop, as ECS stops a router task after the NLB's deregistration delay)
 * while new ones go direct: the switch loses nothing. Real HAProxy, real HTTP on loopback.
 */
interface Sent {
  readonly via: 'router' | 'direct';
  readonly status: number;
  readonly startedAt: number;
  readonly endedAt: number;
}

function get(port: number, key: string): Promise<{ status: number; endedAt: number }> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/items', headers: { 'x-tenant-id': key }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, endedAt: Date.now() }));
      res.on('error', () => resolve({ status: 0, endedAt: Date.now() }));
    });
    req.on('error', () => resolve({ status: 0, endedAt: Date.now() }));
    req.end();
  });
}

describe("taking the router out of cell zero's path", () => {
  let zero: FakeCell;
  let router: LocalRouter;
  let routerPort: number;
  let dir: string;

  beforeAll(async () => {
    // The existing service: every answer takes 300 ms, so requests are in flight at the switch.
    zero = await startCell('zero');
    zero.behaviour = 'slow';
    zero.delayMs = 300;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cell-zero-way-back-'));
    const doc = adoptionMapping({ id: 'zero', endpoint: zero.endpoint, state: 'active' }, [], 1024, { now: '2026-12-01T00:00:00.000Z' });
    fs.writeFileSync(path.join(dir, 'mapping.json'), JSON.stringify(doc));
    router = await onFreePorts(1, async ([port]) => {
      routerPort = port;
      return startLocalRouter({
        mappingFile: path.join(dir, 'mapping.json'),
        port,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 1024,
        healthCheckPath: '/health',
        log: () => undefined,
        pollMs: 200,
        zones: 1,
        hardStopAfterMs: 20_000,
      });
    });
    await until('the router serving cell zero', async () => (await get(routerPort, 'warm-up')).status === 200, 60_000);
  }, 120_000);

  afterAll(async () => {
    await router?.stop();
    await zero?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('loses no request: those in flight through the router complete, new ones go direct', async () => {
    const sent: Sent[] = [];
    let target: 'router' | 'direct' = 'router';
    let running = true;
    const workers = Array.from({ length: 12 }, async (_, w) => {
      for (let i = 0; running; i++) {
        const via = target;
        const startedAt = Date.now();
        const answer = await get(via === 'router' ? routerPort : zero.port, `tenant-${w}-${i}`);
        sent.push({ via, status: answer.status, startedAt, endedAt: answer.endedAt });
      }
    });
    await until('requests through the router', async () => sent.filter((s) => s.via === 'router').length >= 24, 60_000);
    // The switch: clients are pointed at the existing endpoint again, then the router stops (soft stop).
    target = 'direct';
    const switchedAt = Date.now();
    const stopped = router.stop();
    await until('requests straight to the existing service', async () => sent.filter((s) => s.via === 'direct').length >= 24, 60_000);
    running = false;
    await Promise.all(workers);
    await stopped;

    expect(sent.filter((s) => s.status !== 200)).toEqual([]);
    // Requests that entered the router before the switch and were answered after it: in flight at the switch, not lost.
    const inFlight = sent.filter((s) => s.via === 'router' && s.startedAt < switchedAt && s.endedAt >= switchedAt);
    expect(inFlight.length).toBeGreaterThan(0);
    // After the switch nothing is sent to the router.
    expect(sent.filter((s) => s.via === 'router' && s.startedAt > switchedAt)).toEqual([]);
  }, 120_000);
});
