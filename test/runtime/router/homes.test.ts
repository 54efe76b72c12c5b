import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { convertToHomes, Homes, initialMapping, lookupMany, MappingDocument, rehomeTable } from '../../../lib/domain/mapping';
import { LocalRouter, startLocalRouter } from '../../../lib/runtime/router';
import { FakeCell, onFreePorts, routed, startCell, until } from '../../support/cells';

const NOW = '2026-12-06T06:00:00.000Z';
const EU = 'eu-west-1';
const US = 'us-east-1';
const HOMES: Homes = {
  tables: [
    { regions: [US], prefixes: [] },
    { regions: [EU], prefixes: ['eu-'] },
  ],
};
const REGION: Record<string, string> = { 'eu-1': EU, 'eu-2': EU, 'us-1': US, 'us-2': US };
const KEYS = [...Array.from({ length: 60 }, (_, i) => `eu-t${i}`), ...Array.from({ length: 60 }, (_, i) => `t${i}`)];

/**
 * Home tables through a real HAProxy and mapping agent: a router with the fleet's homes routes a
 * one-table document and its converted form the same for every key, then each key by its home
 * table; a router without them keeps its last-known-good rather than misroute a multi-table one.
 */
describe('home tables through the router', () => {
  let cells: FakeCell[];
  let withHomes: LocalRouter;
  let without: LocalRouter;
  const ports: number[] = [];
  let mappingFile: string;
  const withoutLog: string[] = [];
  const agent = new http.Agent({ keepAlive: true });
  let today: MappingDocument;

  beforeAll(async () => {
    cells = await Promise.all(Object.keys(REGION).map((name) => startCell(name)));
    today = initialMapping(
      cells.map((c) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const })),
      1024,
      { now: NOW },
    );
    mappingFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'homes-')), 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(today));
    [withHomes, without] = await onFreePorts(2, async (free) => {
      ports.push(...free);
      const start = (port: number, homeTables: boolean, log: (line: string) => void) =>
        startLocalRouter({
          mappingFile,
          port,
          debugHeaders: true,
          partitionKey: { source: 'header', name: 'x-tenant-id' },
          bucketCount: 1024,
          homeTables,
          healthCheckPath: '/health',
          log,
          pollMs: 100,
        });
      return Promise.all([start(free[0], true, () => undefined), start(free[1], false, (line) => withoutLog.push(line))]);
    });
  });
  afterAll(async () => {
    agent.destroy();
    await Promise.all([withHomes?.stop(), without?.stop()]);
    await Promise.all(cells.map((c) => c.close()));
    fs.rmSync(path.dirname(mappingFile), { recursive: true, force: true });
  });

  const servedBy = async (port: number) => Promise.all(KEYS.map(async (k) => (await routed(agent, port, k)).servedBy));
  const publish = async (next: MappingDocument) => {
    fs.writeFileSync(mappingFile, JSON.stringify(next));
    await until(`router on v${next.version}`, async () => (await routed(agent, ports[0], 'probe')).version === next.version, 60_000);
  };

  test('both forms route every key the same during the rollout; then each key by its home table', async () => {
    await until(
      'both routers on v1',
      async () => (await Promise.all(ports.map((p) => routed(agent, p, 'probe')))).every((r) => r.version === 1),
      60_000,
    );
    const expected = lookupMany(today, KEYS).map((r) => r.cell);
    expect(await servedBy(ports[0])).toEqual(expected);
    expect(await servedBy(ports[1])).toEqual(expected);

    const converted = convertToHomes(today, HOMES, (id) => REGION[id], { now: NOW });
    await publish(converted);
    // The converted document, on the router that routes home tables: not one key moved.
    expect(await servedBy(ports[0])).toEqual(expected);
    // The router without them refuses it and keeps routing the document it had: still the same cells.
    await until('the router without homes refuses', async () => withoutLog.some((l) => l.includes('home tables')), 30_000);
    expect((await routed(agent, ports[1], 'probe')).version).toBe(1);
    expect(await servedBy(ports[1])).toEqual(expected);

    const rehomed = rehomeTable(rehomeTable(converted, EU, { now: NOW }), US, { now: NOW });
    await publish(rehomed);
    const now = await servedBy(ports[0]);
    expect(now).toEqual(lookupMany(rehomed, KEYS).map((r) => r.cell));
    expect(KEYS.map((k, i) => [k, REGION[now[i]!]]).filter(([k, region]) => region !== (k.startsWith('eu-') ? EU : US))).toEqual([]);
  });
});
