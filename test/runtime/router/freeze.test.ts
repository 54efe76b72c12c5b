import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { bucketOf, initialMapping, MappingDocument, pinKey } from '../../../lib/domain/mapping';
import { freezeSubject, unfreezeSubject } from '../../../lib/operations/moves';
import { bucketRoutes, exactRoutes, LocalRouter, mapContents, startLocalRouter } from '../../../lib/runtime/router';
import { FakeCell, onFreePorts, routed, startCell, until } from '../../support/cells';

const NOW = '2026-11-30T12:00:00.000Z';

describe('freeze routes (pure)', () => {
  const doc = pinKey(
    initialMapping(
      [
        { id: 'cell-a', endpoint: 'http://127.0.0.1:1', state: 'active' },
        { id: 'cell-b', endpoint: 'http://127.0.0.1:2', state: 'active' },
      ],
      1024,
      { now: NOW },
    ),
    'pinned',
    'cell-b',
    { now: NOW },
  );

  test('frozen buckets are carved out of the ranges; frozen keys replace their pins', () => {
    const frozen: MappingDocument = {
      ...doc,
      freeze: {
        exact: ['pinned', 'acme'],
        buckets: [
          { from: 510, to: 513 },
          { from: 1023, to: 1023 },
        ],
      },
    };
    expect(bucketRoutes(frozen)).toEqual([
      { from: 0, to: 509, cell: 'cell-a' },
      { from: 510, to: 511, cell: undefined },
      { from: 512, to: 513, cell: undefined },
      { from: 514, to: 1022, cell: 'cell-b' },
      { from: 1023, to: 1023, cell: undefined },
    ]);
    expect(exactRoutes(frozen)).toEqual([
      ['pinned', undefined],
      ['acme', undefined],
    ]);
    expect(bucketRoutes(doc)).toEqual(doc.buckets);
    const contents = mapContents(
      frozen,
      new Map([
        ['cell-a', 0],
        ['cell-b', 1],
      ]),
    );
    expect(contents.exact).toEqual([
      ['pinned', 'frozen'],
      ['acme', 'frozen'],
    ]);
    expect(contents.buckets.filter(([, backend]) => backend === 'frozen').map(([net]) => net)).toEqual([
      '0.0.1.254/31',
      '0.0.2.0/31',
      '0.0.3.255/32',
    ]);
  });
});

/** The freeze through a real HAProxy and mapping agent (cellctl router local). */
describe('frozen keys through the router', () => {
  let cells: FakeCell[];
  let router: LocalRouter;
  let port: number;
  let mappingFile: string;
  let doc: MappingDocument;
  const agent = new http.Agent({ keepAlive: true });

  beforeAll(async () => {
    cells = await Promise.all(['cell-a', 'cell-b'].map((name) => startCell(name)));
    doc = initialMapping(
      cells.map((c) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const })),
      1024,
      { now: NOW },
    );
    mappingFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'freeze-')), 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    router = await onFreePorts(1, async (ports) => {
      port = ports[0];
      return startLocalRouter({
        mappingFile,
        port,
        debugHeaders: true,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 1024,
        healthCheckPath: '/health',
        log: () => undefined,
        pollMs: 100,
      });
    });
  });
  afterAll(async () => {
    agent.destroy();
    await router.stop();
    await Promise.all(cells.map((c) => c.close()));
    fs.rmSync(path.dirname(mappingFile), { recursive: true, force: true });
  });

  const publish = async (next: MappingDocument) => {
    fs.writeFileSync(mappingFile, JSON.stringify(next));
    await until(`router on v${next.version}`, async () => (await routed(agent, port, 'probe')).version === next.version, 60_000);
    doc = next;
  };

  test('a frozen tenant and a frozen bucket get 503 + Retry-After + JSON; everyone else is served; unfreezing serves them again', async () => {
    const bucketTenant = Array.from({ length: 5000 }, (_, i) => `b${i}`).find((k) => bucketOf(k, 1024) === 700 && k !== 'acme')!;
    const pinnedInBucket = Array.from({ length: 5000 }, (_, i) => `p${i}`).find((k) => bucketOf(k, 1024) === 700)!;
    await publish(pinKey(doc, pinnedInBucket, 'cell-a', { now: NOW }));
    const frozen = freezeSubject(
      freezeSubject(doc, { kind: 'tenant', tenant: 'acme' }, NOW),
      { kind: 'buckets', ranges: [{ from: 700, to: 700 }] },
      NOW,
    );
    await publish(frozen);
    for (const key of ['acme', bucketTenant]) {
      const answer = await routed(agent, port, key);
      expect([key, answer.status, answer.retryAfter, answer.servedBy]).toEqual([key, 503, '1', undefined]);
      expect(JSON.parse(answer.body)).toMatchObject({ error: 'frozen', retryAfterSeconds: 1 });
      expect(answer.version).toBe(frozen.version); // routers report the version they serve
    }
    // Not frozen: a tenant pinned by an override inside the frozen bucket, and every other tenant.
    expect((await routed(agent, port, pinnedInBucket)).servedBy).toBe('cell-a');
    const others = await Promise.all(
      Array.from({ length: 200 }, (_, i) => `other-${i}`)
        .filter((k) => bucketOf(k, 1024) !== 700)
        .map((k) => routed(agent, port, k)),
    );
    expect(others.filter((r) => r.status !== 200)).toEqual([]);

    await publish(
      unfreezeSubject(unfreezeSubject(frozen, { kind: 'tenant', tenant: 'acme' }, NOW), { kind: 'buckets', ranges: [{ from: 700, to: 700 }] }, NOW),
    );
    expect(doc.freeze).toBeUndefined();
    for (const key of ['acme', bucketTenant]) expect((await routed(agent, port, key)).status).toBe(200);
  });
});
