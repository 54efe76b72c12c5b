import * as http from 'http';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { freezeSubject } from '../../../lib/operations/moves/routing';
import { initialMapping, MappingDocument } from '../../../lib/domain/mapping';
import { MappingStore, publishMapping } from '../../../lib/adapters/mapping-store';
import {
  LocalRouter,
  parseServedReport,
  S3MappingSource,
  S3ServedReporter,
  ServedReport,
  servedKey,
  servedPrefix,
  startLocalRouter,
} from '../../../lib/runtime/router';
import { FakeCell, freePort, routed, startCell } from '../../support/cells';
import { LocalS3, localS3Client, startLocalS3 } from '../../support/s3';

const NOW = { now: '2026-11-30T16:00:00.000Z' };
const GROUP = 'blue';

/**
 * The router task's report of the version it serves (`served/<group>/<task>.json`, what a move
 * waits on), written by the real agent beside a real HAProxy, into the local S3 stand-in. The agent
 * is ticked by the test, and the reporter's clock is the test's, so nothing here races a timer.
 */
describe('the agent reports the mapping version HAProxy serves', () => {
  let s3: LocalS3;
  let client: S3Client;
  let store: MappingStore;
  let cells: FakeCell[];
  let router: LocalRouter;
  let reporter: S3ServedReporter;
  let port: number;
  let clock: number;
  let v1: MappingDocument;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const logs: string[] = [];

  const report = async (taskId = 'task-1'): Promise<ServedReport | null> => {
    const response = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: servedKey(GROUP, taskId) }));
    return parseServedReport(await response.Body!.transformToString());
  };
  /** One agent poll, and the report it started. */
  const tick = async () => {
    await router.agent.tick();
    await router.agent.lastReport;
  };

  beforeAll(async () => {
    s3 = await startLocalS3();
    client = localS3Client(s3, 1);
    store = new MappingStore(client, s3.bucket);
    cells = await Promise.all(['cell-a', 'cell-b'].map((name) => startCell(name)));
    v1 = initialMapping(
      cells.map((c) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const })),
      16384,
      NOW,
    );
    await publishMapping(store, v1, { groups: [GROUP], bakeSeconds: 0 });
    clock = Date.parse(NOW.now);
    reporter = new S3ServedReporter(client, s3.bucket, GROUP, 'task-1', { heartbeatMs: 10_000, now: () => clock, emit: (l) => logs.push(l) });
    port = await freePort();
    router = await startLocalRouter({
      source: new S3MappingSource(client, s3.bucket, GROUP, 2000),
      port,
      debugHeaders: true,
      partitionKey: { source: 'header', name: 'x-tenant-id' },
      bucketCount: 16384,
      healthCheckPath: '/health',
      log: (l) => logs.push(l),
      pollMs: 60_000,
      served: reporter,
    });
    router.stopAgent(); // the test drives the agent tick by tick
    await router.agent.lastReport;
  });
  afterAll(async () => {
    agent.destroy();
    await router?.stop();
    await Promise.all((cells ?? []).map((c) => c.close()));
    client?.destroy();
    await s3?.stop();
  });

  it('writes served/<group>/<task>.json with the version in force once HAProxy has it', async () => {
    expect((await routed(agent, port, 'tenant-1')).version).toBe(1);
    expect(await report()).toEqual({ taskId: 'task-1', group: GROUP, version: 1, appliedAt: NOW.now, reportedAt: NOW.now });
    // Only this task's object, under its group's prefix.
    const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'served/' }));
    expect((listed.Contents ?? []).map((o) => o.Key)).toEqual([`${servedPrefix(GROUP)}task-1.json`]);
  });

  it('reports a new version in the tick that applied it, without waiting for the heartbeat', async () => {
    const v2 = freezeSubject(v1, { kind: 'tenant', tenant: 'tenant-9' }, NOW.now);
    await publishMapping(store, v2, { groups: [GROUP], bakeSeconds: 0 });
    clock += 1000; // well inside the heartbeat
    await tick();
    // HAProxy serves v2 (the frozen tenant gets the freeze's 503), and the report says so.
    expect((await routed(agent, port, 'tenant-9')).status).toBe(503);
    expect((await routed(agent, port, 'tenant-1')).version).toBe(2);
    expect(await report()).toMatchObject({ version: 2, appliedAt: new Date(clock).toISOString(), reportedAt: new Date(clock).toISOString() });
    // A freeze in force: the agent polls faster until the flip (bin/router-agent.ts).
    expect(router.agent.freezing).toBe(true);
  });

  it('rewrites the report as a heartbeat, and not more often', async () => {
    const before = await report();
    clock += 4000;
    await tick();
    expect(await report()).toEqual(before);
    clock += 6000; // 10 s since the last write
    await tick();
    expect(await report()).toMatchObject({ version: 2, appliedAt: before!.appliedAt, reportedAt: new Date(clock).toISOString() });
  });

  it('keeps reporting (and says so once) when a write fails, and catches up when S3 answers again', async () => {
    const v3 = { ...v1, version: 3, createdAt: NOW.now };
    await publishMapping(store, v3, { groups: [GROUP], bakeSeconds: 0 });
    s3.fault({ status: 503, code: 'SlowDown' });
    clock += 10_000; // the heartbeat is due
    // The mapping fetch fails too (same stand-in): the version in force stays 2, and the report write fails.
    await tick();
    await tick();
    s3.fault(undefined);
    expect(logs.filter((l) => l.includes('"event":"served-report-error"'))).toHaveLength(1);
    clock += 1000;
    await tick();
    expect((await routed(agent, port, 'tenant-1')).version).toBe(3);
    expect(await report()).toMatchObject({ version: 3 });
    expect(logs.filter((l) => l.includes('"event":"served-report-recovered"'))).toHaveLength(1);
    expect(router.agent.freezing).toBe(false);
  });

  it('says when its task stops, with the version still in force for in-flight requests', async () => {
    const other = new S3ServedReporter(client, s3.bucket, GROUP, 'task-2', { now: () => clock });
    await other.update(3);
    await other.stop(3);
    expect(await report('task-2')).toMatchObject({ taskId: 'task-2', version: 3, stopped: true });
    // Nothing after the stop overwrites it.
    await other.update(4);
    expect(await report('task-2')).toMatchObject({ version: 3, stopped: true });
  });

  it('refuses a task id that is not a plain key part', () => {
    expect(() => new S3ServedReporter(client, s3.bucket, GROUP, '../other/x')).toThrow(/router task id `..\/other\/x` must be/);
  });
});

describe('S3ServedReporter while S3 refuses the writes', () => {
  it('backs off between failed writes (doubling to half the heartbeat) instead of writing on every agent tick, and reports at once when S3 is back', async () => {
    let clock = Date.parse('2026-11-30T16:00:00.000Z');
    let failing = true;
    const writes: number[] = [];
    const s3 = {
      send: async () => {
        writes.push(clock);
        if (failing) throw Object.assign(new Error('Slow down'), { name: 'SlowDown', $metadata: { httpStatusCode: 503 } });
        return {};
      },
    } as unknown as S3Client;
    const logs: string[] = [];
    const reporter = new S3ServedReporter(s3, 'bucket', GROUP, 'task-9', { heartbeatMs: 10_000, now: () => clock, emit: (l) => logs.push(l) });
    // An agent under a freeze: a tick every 250 ms for 20 s, the version changing half-way.
    for (let t = 0; t < 80; t++) {
      await reporter.update(t < 40 ? 3 : 4);
      clock += 250;
    }
    const start = Date.parse('2026-11-30T16:00:00.000Z');
    // 0, 0.5, 1.5, 3.5, 7.5, then every 5 s (half the heartbeat): 7 writes in 20 s, not 80.
    expect(writes.map((at) => (at - start) / 1000)).toEqual([0, 0.5, 1.5, 3.5, 7.5, 12.5, 17.5]);
    expect(logs.filter((l) => l.includes('served-report-error'))).toHaveLength(1);
    failing = false;
    clock += 5000;
    await reporter.update(4);
    expect(logs.at(-1)).toMatch(/"event":"served-report-recovered".*"version":4/);
    // Back to normal: a new version is written in the tick that applied it.
    clock += 250;
    const before = writes.length;
    await reporter.update(5);
    expect(writes.length).toBe(before + 1);
  });
});
