import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { initialMapping, lookup, MappingDocument } from '../../../lib/domain/mapping';
import { LOG_SAMPLE_ONE_IN, LocalRouter, RuntimeApi, startLocalRouter } from '../../../lib/runtime/router';
import { FakeCell, onFreePorts, routed, startCell, until } from '../../support/cells';

/**
 * Log sampling against a real HAProxy: while a cell has no server up, or more requests wait in its
 * queue than it serves at once, its failures are logged one in LOG_SAMPLE_ONE_IN; otherwise every
 * failure is logged. HAProxy's `rand` cannot be seeded, so the sampled counts are checked with enough
 * requests that a bound far from the expectation is practically never crossed by chance.
 */
const NOW = { now: '2026-11-30T17:00:00.000Z' };
const CELL_MAX_CONN = 2;

describe('log sampling (real HAProxy on loopback)', () => {
  let cells: Record<'down' | 'failing' | 'slow', FakeCell>;
  let router: LocalRouter;
  let doc: MappingDocument;
  let mappingFile: string;
  let port: number;
  const logs: string[] = [];
  const keysOf = (cell: string, n: number) =>
    Array.from({ length: 20_000 }, (_, i) => `sampled-${i}`)
      .filter((k) => lookup(doc, k).cell === cell)
      .slice(0, n);
  /** JSON log lines of requests written since `from` (an index into `logs`). */
  const lines = (from: number) =>
    logs
      .slice(from)
      .flatMap((l) => l.split('\n'))
      .filter((l) => l.startsWith('{"time"'))
      .map((l) => {
        try {
          return JSON.parse(l) as { status: number; backend: string };
        } catch {
          throw new Error(`a log line that is not JSON: ${l}`);
        }
      });
  const slotOf = async (cell: string) => {
    const cellsMap = await new RuntimeApi(path.join(router.stateDir, 'admin.sock')).send(`show map ${path.join(router.stateDir, 'cells.map')}`);
    const slot = cellsMap
      .split('\n')
      .map((l) => l.trim().split(' '))
      .find((f) => f[2] === cell)?.[1];
    if (!slot) throw new Error(`no slot for ${cell} in ${cellsMap}`);
    return slot;
  };
  /** Waits until `count()` has not changed for a second (HAProxy has written what it will write). */
  const settled = async (count: () => number) => {
    let last = -1;
    while (count() !== last) {
      last = count();
      await new Promise((r) => setTimeout(r, 1000));
    }
  };
  /** `keys.length` requests, `concurrency` at a time on keep-alive connections; the statuses. */
  const send = async (keys: readonly string[], concurrency: number) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < keys.length) statuses.push((await routed(agent, port, keys[next++])).status);
      }),
    );
    agent.destroy();
    return statuses;
  };

  beforeAll(async () => {
    cells = { down: await startCell('down'), failing: await startCell('failing'), slow: await startCell('slow') };
    doc = initialMapping(
      Object.values(cells).map((c) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const })),
      1024,
      NOW,
    );
    mappingFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-sampling-')), 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
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
        cellMaxConn: CELL_MAX_CONN,
        queueTimeoutMs: 1000,
        zones: 1,
      });
    });
  });
  afterAll(async () => {
    await router.stop();
    await Promise.all(Object.values(cells).map((c) => c.close()));
    fs.rmSync(path.dirname(mappingFile), { recursive: true, force: true });
  });

  it('logs every failure of a cell that is up and not flooded', async () => {
    cells.failing.behaviour = 'error';
    const from = logs.length;
    const backend = await slotOf('failing');
    // HAProxy never blocks on its log output: a line is dropped (and counted in `show info`'s
    // DroppedLogs) when stdout is full or another of its threads is writing at that moment, which
    // happens here now and then with two threads. So every failure is either logged or counted as
    // dropped, never silenced by sampling. In bursts of 4 (twice what the cell serves at once, so a
    // short queue forms), each burst's lines awaited before the next, so the pipe never fills.
    const api = new RuntimeApi(path.join(router.stateDir, 'admin.sock'));
    const dropped = async () => Number((await api.info()).DroppedLogs);
    const droppedBefore = await dropped();
    const keys = keysOf('failing', 200);
    const logged = () => lines(from).filter((l) => l.backend === backend && l.status === 500).length;
    for (let i = 0; i < keys.length; i += 4) {
      expect(await send(keys.slice(i, i + 4), 4)).toEqual(Array(4).fill(500));
      await until(`${i + 4} 500s logged or counted as dropped`, async () => logged() + (await dropped()) - droppedBefore >= i + 4, 60_000);
    }
    await settled(logged);
    expect(logged() + (await dropped()) - droppedBefore).toBe(200);
    // Drops are the exception, not the sampling: most lines arrive.
    expect(logged()).toBeGreaterThan(150);
  });

  it(`logs about one in ${LOG_SAMPLE_ONE_IN} of a down cell's 503s`, async () => {
    const backend = await slotOf('down');
    await cells.down.close();
    const api = new RuntimeApi(path.join(router.stateDir, 'admin.sock'));
    await until(
      'the cell marked down',
      async () => (await api.stats()).some((r) => r.pxname === backend && r.svname === 'BACKEND' && r.status === 'DOWN'),
      60_000,
    );
    const requests = 3000;
    const keys = keysOf('down', 100);
    const from = logs.length;
    const statuses = await send(
      Array.from({ length: requests }, (_, i) => keys[i % keys.length]),
      16,
    );
    expect(statuses).toEqual(Array(requests).fill(503));
    // Expected 30 (binomial, sd 5.4): below 10 or above 60 is a chance of about 1 in 10^5.
    // Logging is asynchronous (HAProxy's log lines reach us through a pipe, later on a loaded
    // machine): wait for the lower bound rather than a fixed time, then let the rest arrive.
    const logged = () => lines(from).filter((l) => l.backend === backend && l.status === 503).length;
    await until('at least 10 sampled 503s logged', async () => logged() >= 10, 60_000);
    await settled(logged);
    expect(logged()).toBeLessThanOrEqual(60);
  });

  it("samples a flooded cell's 503s once more requests wait in its queue than it serves at once", async () => {
    cells.slow.behaviour = 'slow';
    // Long enough that all the requests below are in the queue while the first CELL_MAX_CONN are
    // served, even when opening 400 connections takes seconds on a loaded machine.
    cells.slow.delayMs = 10_000;
    const backend = await slotOf('slow');
    const requests = 400;
    const from = logs.length;
    // All at once, each on its own connection: CELL_MAX_CONN are served, the rest wait in the
    // queue and get 503 after its 1 s timeout. Those that found CELL_MAX_CONN or fewer waiting are
    // logged every time, the others one in LOG_SAMPLE_ONE_IN.
    const [key] = keysOf('slow', 1);
    const statuses = await send(Array(requests).fill(key), requests);
    expect(statuses.filter((s) => s === 200)).toHaveLength(CELL_MAX_CONN);
    expect(statuses.filter((s) => s === 503)).toHaveLength(requests - CELL_MAX_CONN);
    // About CELL_MAX_CONN + 1 unsampled plus ~4 sampled; logging every one would be 398.
    const logged = () => lines(from).filter((l) => l.backend === backend && l.status === 503).length;
    await until('the unsampled 503s logged', async () => logged() >= 1, 60_000);
    await settled(logged);
    expect(logged()).toBeLessThanOrEqual(30);
  }, 120_000);
});
