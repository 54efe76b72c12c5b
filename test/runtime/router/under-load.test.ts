import { spawn } from 'child_process';
import * as http from 'http';
import { S3Client } from '@aws-sdk/client-s3';
import { initialMapping, lookup, MappingDocument, pinKey, unpinKey } from '../../../lib/domain/mapping';
import { MappingStore, publishMapping } from '../../../lib/adapters/mapping-store';
import { LocalRouter, S3MappingSource, startLocalRouter } from '../../../lib/runtime/router';
import { FakeCell, load, onFreePorts, percentile, routed, startCell, until } from '../../support/cells';
import { LocalS3, localS3Client, startLocalS3 } from '../../support/s3';

const NOW = { now: '2026-11-29T16:00:00.000Z' };

/** A flood client for a child process: argv port, keys (JSON), duration ms; prints status counts. */
const FLOOD = `
const http = require('http');
const [port, keys, ms] = [Number(process.argv[1]), JSON.parse(process.argv[2]), Number(process.argv[3])];
const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
const until = Date.now() + ms;
const counts = { retryAfter: 0 };
const one = (i) => new Promise((resolve) => {
  const req = http.request({ host: '127.0.0.1', port, agent, headers: { 'x-tenant-id': keys[i % keys.length] } }, (res) => {
    res.resume();
    res.on('end', () => { counts[res.statusCode] = (counts[res.statusCode] || 0) + 1; if (res.headers['retry-after']) counts.retryAfter++; resolve(); });
  });
  req.on('error', () => { counts.error = (counts.error || 0) + 1; resolve(); });
  req.end();
});
Promise.all(Array.from({ length: 200 }, async (_, i) => { while (Date.now() < until) await one(i); }))
  .then(() => { process.stdout.write(JSON.stringify(counts)); agent.destroy(); });
`;

describe('the router under load', () => {
  let s3: LocalS3;
  let client: S3Client;
  let cells: FakeCell[];
  let router: LocalRouter;
  let port: number;
  let doc: MappingDocument;

  beforeAll(async () => {
    s3 = await startLocalS3();
    client = localS3Client(s3);
    cells = await Promise.all(['canary', 'cell-a', 'cell-b', 'cell-c'].map((name) => startCell(name)));
    doc = initialMapping(
      cells.map((c, i) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const, canary: i === 0 })),
      16384,
      NOW,
    );
    await publishMapping(new MappingStore(client, s3.bucket), doc, { groups: ['main'], bakeSeconds: 0 });
    router = await onFreePorts(1, async (ports) => {
      port = ports[0];
      return startLocalRouter({
        source: new S3MappingSource(client, s3.bucket, 'main'),
        port,
        debugHeaders: true,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: () => undefined,
        pollMs: 200,
        cellMaxConn: 20,
        queueTimeoutMs: 1000,
      });
    });
  });
  afterAll(async () => {
    await router?.stop();
    await Promise.all((cells ?? []).map((c) => c.close()));
    client?.destroy();
    await s3?.stop();
  });

  it('serves every request while a new mapping is published every 0.5 s for 15 s; versions never go backwards', async () => {
    const store = new MappingStore(client, s3.bucket);
    let published = doc;
    let stop = false;
    // Each version is published 0.5 s after the router applied the one before (on a loaded machine
    // the agent, which shares this busy process, would otherwise fall behind and skip versions), for
    // at least 15 s and at least 20 versions.
    const started = Date.now();
    const publisher = (async () => {
      for (let i = 0; i < 20 || Date.now() - started < 15_000; i++) {
        const next = i % 2 === 0 ? pinKey(published, `hot-${i}`, 'cell-c', NOW) : unpinKey(published, `hot-${i - 1}`, NOW);
        await publishMapping(store, next, { groups: ['main'], bakeSeconds: 0 });
        published = next;
        await until(`the router on v${next.version}`, async () => router.agent.version === next.version, 60_000);
        await new Promise((r) => setTimeout(r, 500));
      }
    })().finally(() => {
      stop = true;
    });
    // Each client loop is one keep-alive connection: its versions must never decrease.
    const loops = 16;
    const seen: number[][] = Array.from({ length: loops }, () => []);
    const agents = Array.from({ length: loops }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
    const results: Awaited<ReturnType<typeof routed>>[] = [];
    await Promise.all(
      Array.from({ length: loops }, async (_, loop) => {
        for (let i = loop; !stop; i += loops) {
          const answer = await routed(agents[loop], port, `load-${i % 997}`);
          if (answer.version !== undefined) seen[loop].push(answer.version);
          results.push(answer);
        }
      }),
    );
    await publisher;
    agents.forEach((a) => a.destroy());
    expect(results.length).toBeGreaterThan(1000);
    expect(results.filter((r) => r.status !== 200).map((r) => r.status)).toEqual([]);
    for (const versions of seen) {
      for (let i = 1; i < versions.length; i++) expect(versions[i]).toBeGreaterThanOrEqual(versions[i - 1]);
    }
    expect(published.version).toBeGreaterThanOrEqual(doc.version + 20);
    // The mapping really changed under the load: the clients were served by many of the versions.
    expect(new Set(seen.flat()).size).toBeGreaterThanOrEqual(10);
    expect(router.agent.version).toBe(published.version);
    doc = published;
  }, 300_000);

  it("keeps the other cells' throughput, and their p99 far from the queue timeout, while one slow cell is flooded", async () => {
    const slow = cells[1];
    const keysFor = (cell: string) => Array.from({ length: 5000 }, (_, i) => `iso-${i}`).filter((k) => lookup(doc, k).cell === cell);
    const healthyKeys = ['cell-b', 'cell-c'].flatMap(keysFor);
    const slowKeys = keysFor(slow.name);
    // Healthy tenants offer a steady 1,000 requests/s (open loop): the router must keep serving
    // them at that rate and latency whatever the flooded cell does. A closed loop would measure
    // this test process's own CPU, which the flood shares.
    const measure = async (warmUp = false) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
      const loops = 8;
      const intervalMs = (loops * 1000) / 1000;
      // Three windows; the median p99 of the three, so one scheduler hiccup on a shared 2-core
      // machine does not decide the result.
      const windows = [];
      for (let w = 0; w < 3; w++) {
        windows.push(
          await load(loops, 1500, async (i) => {
            const started = Date.now();
            const answer = await routed(agent, port, healthyKeys[i % healthyKeys.length]);
            await new Promise((r) => setTimeout(r, Math.max(0, intervalMs - (Date.now() - started))));
            return answer;
          }),
        );
      }
      agent.destroy();
      const results = windows.flat();
      if (warmUp) return { rps: 0, p99: 0 };
      expect([...new Set(results.filter((r) => r.status !== 200).map((r) => `${r.status}: ${r.body}`))]).toEqual([]);
      const p99s = windows
        .map((w) =>
          percentile(
            w.map((r) => r.ms),
            99,
          ),
        )
        .sort((a, b) => a - b);
      return { rps: results.length / 4.5, p99: p99s[1] };
    };
    // Warm-up, not judged: at the start of a full test run this process can stall long enough for
    // a queued request to time out (seen in some full runs, before any flooding).
    await measure(true);
    const baseline = await measure();
    slow.behaviour = 'slow';
    slow.delayMs = 3000;
    // The flood comes from another process (200 connections hammering the slow cell's tenants),
    // so the measuring loop does not share an event loop with it.
    const reached = slow.requests;
    const flood = spawn(process.execPath, ['-e', FLOOD, String(port), JSON.stringify(slowKeys.slice(0, 200)), '10000'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let floodOut = '';
    flood.stdout.on('data', (d: Buffer) => {
      floodOut += d.toString();
    });
    const floodDone = new Promise((resolve) => flood.on('exit', resolve));
    // Measured once the flood fills the slow cell's slots (the flood runs 10 s; measuring takes 4.5 s).
    await until('the flood to fill the slow cell', async () => slow.requests - reached >= 20, 60_000);
    const during = await measure();
    await floodDone;
    slow.behaviour = 'ok';
    const statuses = JSON.parse(floodOut) as Record<string, number>;
    // The flooded cell sheds load with 503 + Retry-After once its queue times out.
    expect(statuses['503']).toBeGreaterThan(0);
    expect(statuses.retryAfter).toBe(statuses['503']);
    // What isolation failing looks like is the healthy tenants waiting behind the flooded cell:
    // errors (checked above: 503 after the 1 s queue timeout), p99 at the queue timeout or the slow
    // cell's 3 s, and a rate of a few requests per second per loop (8 loops each waiting ~1 s:
    // under 1% of the offered 1,000/s). The flood's 200 connections share this machine's two cores
    // with HAProxy and this process, which alone moves the rate and p99 by a few times on a loaded
    // machine; so the bounds sit between the two: half the queue timeout, a tenth of the rate. The
    // 20% latency target is measured by npm run blast-radius, not asserted here.
    expect(during.rps).toBeGreaterThanOrEqual(baseline.rps * 0.1);
    expect(during.p99).toBeLessThan(500);
  }, 120_000);
});
