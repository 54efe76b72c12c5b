import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { initialMapping } from '../../../lib/domain/mapping';
import { LocalRouter, startLocalRouter } from '../../../lib/runtime/router';
import { FakeCell, onFreePorts, startCell, until, untilCellChecked } from '../../support/cells';

/**
 * `router local` forwards HAProxy's stdout (its log) and stderr to one log. Once up, HAProxy also
 * prints each event it logs on stderr (`[WARNING]  (pid) : Server slot0/z0 is DOWN, …`): that copy
 * must not reach the log a second time. Every line is counted after the router stopped, when HAProxy
 * has exited and its pipes are drained, so a late copy cannot escape the count.
 */
describe('router local logs each HAProxy line once', () => {
  let cell: FakeCell;
  let router: LocalRouter;
  let port: number;
  let dir: string;
  const logs: string[] = [];
  const all = () => logs.flatMap((l) => l.split('\n'));

  beforeAll(async () => {
    cell = await startCell('cell-a');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-log-once-'));
    const mappingFile = path.join(dir, 'mapping.json');
    fs.writeFileSync(
      mappingFile,
      JSON.stringify(initialMapping([{ id: 'cell-a', endpoint: cell.endpoint, state: 'active' }], 1024, { now: '2026-11-30T21:00:00.000Z' })),
    );
    router = await onFreePorts(1, async (ports) => {
      port = ports[0];
      return startLocalRouter({
        mappingFile,
        port,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 1024,
        healthCheckPath: '/health',
        log: (l) => logs.push(l),
        pollMs: 200,
      });
    });
    await untilCellChecked(router, 'cell-a', 'UP');
  }, 120_000);
  afterAll(async () => {
    await router?.stop();
    await cell?.close().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a failed request's log line, a server going DOWN and its backend left empty each appear exactly once", async () => {
    cell.behaviour = 'error';
    const marker = `/v1/log-once-${process.pid}-${Date.now()}`;
    const response = await fetch(`http://127.0.0.1:${port}${marker}`, { headers: { 'x-tenant-id': 'acme' } });
    await response.arrayBuffer();
    expect(response.status).toBe(500);
    await until('the request to be logged', async () => all().some((l) => l.includes(marker)), 60_000);

    await cell.close();
    await untilCellChecked(router, 'cell-a', 'DOWN');
    await until('the server going DOWN to be logged', async () => all().some((l) => / is DOWN/.test(l)), 60_000);
    await until('the empty backend to be logged', async () => all().some((l) => /has no server available/.test(l)), 60_000);
    await router.stop();

    const lines = all();
    expect(lines.filter((l) => l.includes(marker))).toHaveLength(1);
    expect(JSON.parse(lines.find((l) => l.includes(marker))!)).toMatchObject({ status: 500, path: marker });
    // One line per server that went DOWN (one per zone of the cell), each once.
    const down = lines.filter((l) => / is DOWN/.test(l)).map((l) => /Server (\S+) is DOWN/.exec(l)?.[1]);
    expect(down.length).toBeGreaterThan(0);
    expect(new Set(down).size).toBe(down.length);
    expect(lines.filter((l) => /has no server available/.test(l))).toHaveLength(1);
    expect(lines.filter((l) => /^\[(NOTICE|WARNING|ALERT)\]/.test(l) && / is DOWN|has no server available/.test(l))).toEqual([]);
  }, 240_000);
});
