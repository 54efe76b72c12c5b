import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { runCli } from '../../../lib/cli';
import { keyHash } from '../../../lib/domain/mapping';
import { laneOrder, LaneOutcome, ROUTER_ERROR_HEADER, shardId, tenantShard, tryNextLane } from '../../../lib/domain/lanes';
import { LocalFleet, readFleetFile, startLocalFleet } from '../../../lib/operations/local-fleet';
import { makeTempDir } from '../../../lib/operations/local-fleet/postgres';

/**
 * Shuffle-sharded lanes in the local fleet: 8 lanes (each a real HAProxy and agent on its own port)
 * over the same cells, 2 lanes per tenant, 28 shards. A client sends to one lane of its tenant's
 * shard and, on a connection failure or the router's own error, once to the other
 * (lib/domain/lanes/retry.ts, docs/lanes.md).
 */
const TENANTS = Array.from({ length: 280 }, (_, i) => `tenant-${i}`);
const REQUESTS_PER_TENANT = 3;

let dir: string;
let fleet: LocalFleet;
const agent = new http.Agent({ keepAlive: false });

beforeAll(async () => {
  dir = makeTempDir('cells-lanes-');
  fleet = await startLocalFleet({ cells: 2, port: 0, stateDir: path.join(dir, 'state'), lanes: { count: 8, perTenant: 2, maxOverlap: 1 } });
});

afterAll(async () => {
  agent.destroy();
  await fleet?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

function once(url: string, tenant: string): Promise<LaneOutcome> {
  return new Promise((resolve) => {
    const req = http.get(`${url}/healthz`, { agent, headers: { 'x-tenant-id': tenant }, timeout: 5_000 }, (res) => {
      res.resume();
      res.on('end', () => {
        const routerError = res.headers[ROUTER_ERROR_HEADER];
        resolve({ kind: 'response', status: res.statusCode ?? 0, ...(typeof routerError === 'string' ? { routerError } : {}) });
      });
      res.on('error', () => resolve({ kind: 'connection-failed' }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ kind: 'connection-failed' }));
  });
}

/** One request as a lane client makes it: the shard's lanes in the tenant's order, the next only when the last failed as a lane. */
async function request(tenant: string): Promise<{ ok: boolean; retries: number }> {
  const urls = new Map(fleet.lanes.map((l) => [l.lane, l.url]));
  const order = laneOrder(tenantShard(tenant, fleet.shards).lanes, keyHash(tenant));
  for (const [i, lane] of order.entries()) {
    const outcome = await once(urls.get(lane)!, tenant);
    if (!tryNextLane(outcome)) return { ok: outcome.kind === 'response' && outcome.status === 200, retries: i };
  }
  return { ok: false, retries: order.length - 1 };
}

/** Every tenant's requests, 20 at a time: per tenant, whether all succeeded and the most retries one needed. */
async function serveAll(): Promise<Map<string, { ok: boolean; retries: number }>> {
  const results = new Map<string, { ok: boolean; retries: number }>();
  const queue = TENANTS.flatMap((t) => Array.from({ length: REQUESTS_PER_TENANT }, () => t));
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      for (let t = queue.shift(); t !== undefined; t = queue.shift()) {
        const r = await request(t);
        const before = results.get(t) ?? { ok: true, retries: 0 };
        results.set(t, { ok: before.ok && r.ok, retries: Math.max(before.retries, r.retries) });
      }
    }),
  );
  return results;
}

test('fleet.json and `lanes where --local` name each lane and a tenant shard', async () => {
  const file = readFleetFile(fleet.stateDir)!;
  expect(file.lanes).toMatchObject({ count: 8, perTenant: 2, maxOverlap: 1 });
  expect(file.lanes!.shards).toHaveLength(28);
  expect(file.lanes!.routers.map((r) => r.lane)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  expect(new Set(file.lanes!.routers.map((r) => r.port)).size).toBe(8);
  expect(file.routerUrl).toBe(file.lanes!.routers[0].url);
  let out = '';
  const code = await runCli(['lanes', 'where', 'acme', '--local', '--state-dir', fleet.stateDir, '--json'], {
    out: (s) => (out += s),
    err: () => undefined,
  });
  expect(code).toBe(0);
  const where = JSON.parse(out) as { shard: string; lanes: { lane: number; url: string }[]; source: string };
  expect(where.shard).toBe(shardId(tenantShard('acme', fleet.shards).lanes));
  expect(where.source).toBe('default');
  expect(where.lanes.map((l) => l.url)).toEqual(tenantShard('acme', fleet.shards).lanes.map((lane) => fleet.lanes[lane - 1].url));
});

test('every lane serves every tenant with no retry while all run', async () => {
  const results = await serveAll();
  expect([...results.values()].every((r) => r.ok && r.retries === 0)).toBe(true);
  // Each lane's agent also counts every cell's traffic by Cell alone: what the per-cell alarms over 8 lanes read.
  const perCell = (await fleet.lanes[0].router!.agent.metrics()).slice(1).map((l) => JSON.parse(l));
  expect(perCell.length).toBe(2);
  for (const line of perCell)
    expect(line._aws.CloudWatchMetrics[1]).toEqual({
      Namespace: 'CellRouter',
      Dimensions: [['Cell']],
      Metrics: [
        { Name: 'Requests', Unit: 'Count' },
        { Name: 'Responses5xx', Unit: 'Count' },
        { Name: 'QueueTime', Unit: 'Milliseconds' },
      ],
    });
});

test('any one lane down: 100% of tenants served, none with more than one retry', async () => {
  for (const lane of fleet.lanes) {
    await lane.stop();
    try {
      const results = await serveAll();
      const failed = TENANTS.filter((t) => !results.get(t)!.ok);
      expect([lane.lane, failed]).toEqual([lane.lane, []]);
      expect(Math.max(...[...results.values()].map((r) => r.retries))).toBeLessThanOrEqual(1);
      // The tenants whose shard holds the lane retried; the others never noticed.
      const retried = TENANTS.filter((t) => results.get(t)!.retries > 0);
      expect(retried.length).toBeGreaterThan(0);
      for (const t of retried) expect(tenantShard(t, fleet.shards).lanes).toContain(lane.lane);
    } finally {
      await lane.start();
    }
  }
});

test("both lanes of one tenant's shard down (a poison tenant's requests): only that exact shard's tenants fail, about 1/28", async () => {
  const poisoned = tenantShard('poison-tenant', fleet.shards).lanes;
  const down = fleet.lanes.filter((l) => poisoned.includes(l.lane));
  await Promise.all(down.map((l) => l.stop()));
  try {
    const results = await serveAll();
    const inShard = (t: string) => shardId(tenantShard(t, fleet.shards).lanes) === shardId(poisoned);
    const outside = TENANTS.filter((t) => !inShard(t));
    // Every tenant outside that exact shard: all requests served, at most one retry (those sharing one lane with it).
    expect(outside.filter((t) => !results.get(t)!.ok)).toEqual([]);
    expect(Math.max(...outside.map((t) => results.get(t)!.retries))).toBeLessThanOrEqual(1);
    const affected = TENANTS.filter((t) => !results.get(t)!.ok);
    expect(affected.every(inShard)).toBe(true);
    expect(affected).toEqual(TENANTS.filter(inShard));
    // 1/28 of 280 is 10; three binomial standard deviations above it is 0.0357 + 3 × 0.0111.
    const share = affected.length / TENANTS.length;
    expect(share).toBeLessThanOrEqual(1 / 28 + 3 * Math.sqrt(((1 / 28) * (27 / 28)) / TENANTS.length));
    process.stderr.write(
      `lanes: shard ${shardId(poisoned)} down: ${affected.length}/${TENANTS.length} tenants (${(share * 100).toFixed(2)}%) fully affected\n`,
    );
  } finally {
    await Promise.all(down.map((l) => l.start()));
  }
});
