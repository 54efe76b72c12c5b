import * as http from 'http';
import { S3Client } from '@aws-sdk/client-s3';
import { addCell, DOCUMENT_LIMITS, drainCell, initialMapping, lookup, MappingDocument, pinKey } from '../../../lib/domain/mapping';
import { groupKey, MappingStore, publishMapping } from '../../../lib/adapters/mapping-store';
import { LocalRouter, S3MappingSource, startLocalRouter } from '../../../lib/runtime/router';
import { FakeCell, load, onFreePorts, routed, startCell } from '../../support/cells';
import { LocalS3, localS3Client, startLocalS3 } from '../../support/s3';

const NOW = { now: '2026-11-29T16:00:00.000Z' };
const GROUP = 'canary';

describe('the mapping agent with a router group in S3', () => {
  let s3: LocalS3;
  let client: S3Client;
  let store: MappingStore;
  let cells: FakeCell[];
  let router: LocalRouter;
  let port: number;
  let v1: MappingDocument;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const logs: string[] = [];
  const tick = () => router.agent.tick();

  beforeAll(async () => {
    s3 = await startLocalS3();
    client = localS3Client(s3, 1);
    store = new MappingStore(client, s3.bucket);
    cells = await Promise.all(['canary', 'cell-a', 'cell-b', 'cell-c', 'cell-d'].map((name) => startCell(name)));
    v1 = initialMapping(
      cells.slice(0, 4).map((c, i) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const, canary: i === 0 })),
      16384,
      NOW,
    );
    await publishMapping(store, v1, { groups: [GROUP], bakeSeconds: 0 });
    router = await onFreePorts(1, async (ports) => {
      port = ports[0];
      return startLocalRouter({
        source: new S3MappingSource(client, s3.bucket, GROUP, 1000),
        port,
        debugHeaders: true,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: (l) => logs.push(l),
        pollMs: 60_000,
      });
    });
    router.stopAgent(); // the tests drive the agent tick by tick
  });
  afterAll(async () => {
    agent.destroy();
    await router.stop();
    await Promise.all(cells.map((c) => c.close()));
    client.destroy();
    await s3.stop();
  });

  const current = async () => (await routed(agent, port, 'tenant-1')).version;
  /** Writes a raw document to the group pointer, bypassing publish's checks (a broken writer). */
  const putRaw = async (text: string) => {
    const stored = await store.readGroup(GROUP).catch(() => undefined);
    await store.put(
      groupKey(GROUP),
      text,
      stored?.etag ??
        (await client.send(new (await import('@aws-sdk/client-s3')).HeadObjectCommand({ Bucket: s3.bucket, Key: groupKey(GROUP) }))).ETag,
    );
  };

  it('applies the group document and becomes ready', async () => {
    expect(router.agent.ready).toBe(true);
    expect(await current()).toBe(1);
  });

  it('applies a newer valid document through the runtime API, a new cell included', async () => {
    const v2 = addCell(v1, { id: 'cell-d', endpoint: cells[4].endpoint }, NOW);
    await publishMapping(store, v2, { groups: [GROUP], bakeSeconds: 0 });
    await tick();
    expect(await current()).toBe(2);
    const key = Array.from({ length: 2000 }, (_, i) => `k-${i}`).find((k) => lookup(v2, k).cell === 'cell-d')!;
    expect(await routed(agent, port, key)).toMatchObject({ status: 200, cell: 'cell-d', servedBy: 'cell-d' });
    v1 = v2;
  });

  const broken: [string, (doc: MappingDocument) => string][] = [
    ['a gap', (d) => JSON.stringify({ ...d, version: d.version + 1, buckets: d.buckets.slice(1) })],
    [
      'an overlap',
      (d) => JSON.stringify({ ...d, version: d.version + 1, buckets: [{ ...d.buckets[0], to: d.buckets[0].to + 5 }, ...d.buckets.slice(1)] }),
    ],
    [
      'an unknown cell',
      (d) => JSON.stringify({ ...d, version: d.version + 1, buckets: [{ ...d.buckets[0], cell: 'ghost' }, ...d.buckets.slice(1)] }),
    ],
    ['an older version', (d) => JSON.stringify({ ...pinKey(d, 'tenant-1', 'cell-c', NOW), version: d.version - 1 })],
    ['truncated JSON', (d) => JSON.stringify(pinKey(d, 'tenant-1', 'cell-c', NOW)).slice(0, 500)],
    // Valid JSON, wrong for this router: most keys would reach another cell than the document names.
    [
      'another bucket count than HAProxy hashes into',
      (d) =>
        JSON.stringify({
          ...d,
          version: d.version + 1,
          bucketCount: 65536,
          buckets: d.buckets.map((r, i, all) => ({ ...r, from: r.from * 4, to: i === all.length - 1 ? 65535 : r.to * 4 + 3 })),
        }),
    ],
    ['a version no later version can follow', (d) => JSON.stringify({ ...d, version: 1e308 })],
    [
      'two cells on one endpoint',
      (d) =>
        JSON.stringify({
          ...d,
          version: d.version + 1,
          cells: { ...d.cells, 'cell-b': { ...d.cells['cell-b'], endpoint: d.cells['cell-a'].endpoint } },
        }),
    ],
    [
      'more overrides than a router task holds',
      (d) =>
        JSON.stringify({
          ...d,
          version: d.version + 1,
          overrides: {
            ...d.overrides,
            exact: Object.fromEntries(Array.from({ length: DOCUMENT_LIMITS.maxEntries }, (_, i) => [`pin-${i}`, 'cell-a'])),
          },
        }),
    ],
  ];

  it.each(broken)('never applies a document with %s, and counts it', async (_name, make) => {
    const before = router.agent.rejectedDocuments;
    const served = await routed(agent, port, 'tenant-1');
    await putRaw(make(v1));
    await tick();
    expect(router.agent.rejectedDocuments).toBe(before + 1);
    expect(await routed(agent, port, 'tenant-1')).toMatchObject({ status: 200, cell: served.cell, version: served.version });
    expect(logs[logs.length - 1]).toMatch(/"event":"rejected"/);
    // One problem named (the log line's first), not a dump of the document.
    expect(logs[logs.length - 1].length).toBeLessThan(2000);
    await putRaw(JSON.stringify(v1)); // put the good document back for the next case
    await tick();
  });

  it.each([
    ['503', { status: 503, code: 'SlowDown' }],
    ['access denied', { status: 403, code: 'AccessDenied' }],
    ['timeout', 'hang' as const],
  ])('keeps serving the last-known-good through an S3 %s', async (_name, fault) => {
    const next = pinKey(v1, 'tenant-1', 'cell-c', NOW);
    await publishMapping(store, next, { groups: [GROUP], bakeSeconds: 0 });
    s3.fault(fault);
    try {
      await tick();
      expect(logs[logs.length - 1]).toMatch(/"event":"fetch-error"/);
      expect(await routed(agent, port, 'tenant-1')).toMatchObject({ status: 200, version: v1.version });
    } finally {
      s3.fault(undefined);
    }
    await tick();
    expect(await routed(agent, port, 'tenant-1')).toMatchObject({ status: 200, version: next.version, cell: 'cell-c' });
    v1 = next;
  });

  // S3 answers a GET of a missing key with 403 to a caller without s3:ListBucket; the task role may list
  // its own pointer's key, so the agent tells "nothing published" from "denied" (lib/runtime/router/sources.ts).
  it('takes a missing group pointer as nothing published yet: said once, no fetch error, the last-known-good kept', async () => {
    const { DeleteObjectCommand, PutObjectCommand } = await import('@aws-sdk/client-s3');
    const stored = await client.send(new (await import('@aws-sdk/client-s3')).GetObjectCommand({ Bucket: s3.bucket, Key: groupKey(GROUP) }));
    const text = await stored.Body!.transformToString();
    s3.listPermission((prefix) => prefix === groupKey(GROUP));
    try {
      await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: groupKey(GROUP) }));
      const from = logs.length;
      for (let i = 0; i < 3; i++) await tick();
      const events = logs.slice(from).map((l) => JSON.parse(l).event);
      expect(events).toEqual(['no-document']); // and no fetch-error: FetchErrors does not count it
      expect(JSON.parse(logs[from])).toMatchObject({ level: 'info', keptVersion: v1.version, source: `s3://${s3.bucket}/${groupKey(GROUP)}` });
      expect(s3.requests.slice(-2).map((r) => `${r.method} ${r.status}`)).toEqual(['GET 403', 'GET 200']); // the GET, then the listing
      expect(await routed(agent, port, 'tenant-1')).toMatchObject({ status: 200, version: v1.version });
    } finally {
      await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: groupKey(GROUP), Body: text }));
      s3.listPermission(undefined);
    }
    await tick();
    expect(await routed(agent, port, 'tenant-1')).toMatchObject({ status: 200, version: v1.version });
  });

  it('serves the last-known-good after HAProxy restarts while S3 is down', async () => {
    s3.fault({ status: 503, code: 'ServiceUnavailable' });
    try {
      await router.restartHaproxy();
      // Before the agent does anything: HAProxy boots from the persisted maps and server state.
      const fresh = new http.Agent({ keepAlive: true });
      expect(await routed(fresh, port, 'tenant-1')).toMatchObject({ status: 200, version: v1.version, cell: 'cell-c' });
      await tick();
      expect(logs.some((l) => l.includes('"event":"haproxy-restarted"'))).toBe(true);
      expect(await routed(fresh, port, 'tenant-1')).toMatchObject({ status: 200, version: v1.version, cell: 'cell-c' });
      fresh.destroy();
    } finally {
      s3.fault(undefined);
    }
  });

  it('HAProxy keeps serving when the agent is gone', async () => {
    // The agent is stopped between ticks in this suite; HAProxy answers on its own.
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => routed(agent, port, `alone-${i}`)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
  });

  it('emits EMF metrics: version, refresh age, rejections, and per-cell traffic', async () => {
    await Promise.all(Array.from({ length: 30 }, (_, i) => routed(agent, port, `metric-${i}`)));
    // Bad keys are answered by the bad_key backend; the frontend still counts their 400s.
    await Promise.all(Array.from({ length: 5 }, () => routed(agent, port, 'bad key')));
    const lines = (await router.agent.metrics()).map((l) => JSON.parse(l));
    expect(lines[0].Responses4xx).toBeGreaterThanOrEqual(5);
    expect(lines[0]).toMatchObject({ RouterGroup: 'local', MappingVersion: v1.version, RejectedDocuments: broken.length, FetchErrors: 4 });
    expect(lines[0].Requests).toBeGreaterThanOrEqual(30);
    expect(lines[0]._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name)).toEqual([
      'MappingVersion',
      'SecondsSinceRefresh',
      'RejectedDocuments',
      'FetchErrors',
      'Requests',
      'Responses4xx',
      'Responses5xx',
      'Connections',
      'ConnectionLimit',
      'ConnectionUsePercent',
      'DroppedLogs',
    ]);
    expect(lines[0].DroppedLogs).toBeGreaterThanOrEqual(0);
    // Counts are per interval: nothing happened since.
    expect(JSON.parse((await router.agent.metrics())[0])).toMatchObject({ RejectedDocuments: 0, Requests: 0 });
    const perCell = lines.slice(1);
    expect(perCell.map((l) => l.Cell).sort()).toEqual(Object.keys(v1.cells).sort());
    expect(perCell.reduce((n, l) => n + l.Requests, 0)).toBeGreaterThanOrEqual(30);
  });

  it('drains a cell without a failed request while the mapping changes under load', async () => {
    const next = drainCell(v1, 'cell-a', NOW);
    const running = load(8, 3000, (i) => routed(agent, port, `drain-${i % 500}`));
    await new Promise((r) => setTimeout(r, 500));
    await publishMapping(store, next, { groups: [GROUP], bakeSeconds: 0 });
    await tick();
    const results = await running;
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(await current()).toBe(next.version);
    v1 = next;
  });
});
