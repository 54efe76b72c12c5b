import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import fc from 'fast-check';
import { addCell, bucketOf, initialMapping, lookup, MappingDocument, pinKey, setPrefix } from '../../../lib/domain/mapping';
import { HaproxyStartError, KEY_TABLE, LocalRouter, RuntimeApi, startLocalRouter } from '../../../lib/runtime/router';
import { FakeCell, onFreePorts, routed, startCell, untilCellChecked } from '../../support/cells';

const NOW = { now: '2026-11-29T16:00:00.000Z' };

describe('the router (real HAProxy + agent, cells on loopback)', () => {
  let cells: FakeCell[];
  let router: LocalRouter;
  let port: number;
  let doc: MappingDocument;
  let mappingFile: string;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const logs: string[] = [];

  beforeAll(async () => {
    cells = await Promise.all(['canary', 'cell-a', 'cell-b', 'cell-c'].map((name) => startCell(name)));
    doc = initialMapping(
      cells.slice(0, 3).map((c, i) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const, canary: i === 0 })),
      16384,
      NOW,
    );
    // A cell added later takes buckets from every other cell: fragmented ranges, as in production.
    doc = addCell(doc, { id: cells[3].name, endpoint: cells[3].endpoint }, NOW);
    doc = setPrefix(setPrefix(pinKey(doc, 'tenant-42', 'cell-c', NOW), 'acme-', 'cell-a', NOW), 'acme-eu-', 'cell-b', NOW);
    mappingFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'router-')), 'mapping.json');
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    router = await onFreePorts(1, async (ports) => {
      port = ports[0];
      return startLocalRouter({
        mappingFile,
        port,
        debugHeaders: true,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 16384,
        healthCheckPath: '/health',
        log: (l) => logs.push(l),
        pollMs: 200,
      });
    });
  });
  afterAll(async () => {
    agent.destroy();
    await router.stop();
    await Promise.all(cells.map((c) => c.close()));
  });
  beforeEach(() => {
    for (const c of cells) {
      c.behaviour = 'ok';
      c.requests = 0;
    }
  });

  it('is ready once the mapping is applied', () => {
    expect(doc.buckets.length).toBeGreaterThan(3);
    expect(router.agent.ready).toBe(true);
    expect(router.agent.version).toBe(doc.version);
  });

  it('routes 10,000 random keys exactly as the TypeScript lookup does, overrides included', async () => {
    const keys = [
      ...fc.sample(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,40}$/), { numRuns: 9_990, seed: 42 }),
      'tenant-42',
      'acme-1',
      'acme-eu-1',
      'acme-eu-',
      'internal-smoke',
      'internal-',
      'acme',
      'x',
      'A'.repeat(128),
      'Z9._:@-',
    ];
    const mismatches: string[] = [];
    for (let i = 0; i < keys.length; i += 64) {
      const batch = keys.slice(i, i + 64);
      const answers = await Promise.all(batch.map((key) => routed(agent, port, key)));
      answers.forEach((answer, j) => {
        const expected = lookup(doc, batch[j]).cell;
        if (answer.status !== 200 || answer.cell !== expected || answer.servedBy !== expected)
          mismatches.push(`${batch[j]}: ${answer.status} ${answer.cell} ${answer.servedBy} (expected ${expected})`);
      });
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
    expect(keys.length).toBeGreaterThanOrEqual(10_000);
  });

  it.each([
    ['missing', undefined, 'missing partition key'],
    ['empty', '', 'missing partition key'],
    ['with a space', 'bad key', 'invalid partition key'],
    ['starting with a dash', '-x', 'invalid partition key'],
    ['with a slash', 'a/b', 'invalid partition key'],
    ['non-ASCII', 'tenänt', 'invalid partition key'],
    ['too long', 'x'.repeat(129), 'invalid partition key'],
    // The router routes by its 129-byte capture of the key: a longer key is cut to one still too long.
    ['far too long, valid in its first 128 characters', 'x'.repeat(128) + '.'.repeat(200), 'invalid partition key'],
    ['with a comma', 'tenant-1,tenant-2', 'invalid partition key'],
    ['sent twice', ['tenant-1', 'tenant-2'], 'invalid partition key'],
  ] as [string, string | string[] | undefined, string][])('answers 400 with a JSON body for a %s key', async (_name, key, error) => {
    const answer = await routed(agent, port, key);
    expect(answer.status).toBe(400);
    // The message names the header the router wanted (x-tenant-id here).
    expect(JSON.parse(answer.body)).toEqual({
      error,
      message: expect.stringMatching(new RegExp(`^${error}: send (it|one key) in the x-tenant-id header`)),
    });
    expect(cells.reduce((n, c) => n + c.requests, 0)).toBe(0);
  });

  it('a dead cell: only its tenants get errors', async () => {
    const keys = Array.from({ length: 400 }, (_, i) => `dead-${i}`);
    const dead = cells[2];
    await dead.close();
    await untilCellChecked(router, dead.name, 'DOWN'); // two failed checks at 1 s
    const answers = await Promise.all(keys.map((key) => routed(agent, port, key)));
    answers.forEach((answer, i) => {
      const expected = lookup(doc, keys[i]).cell === dead.name ? 503 : 200;
      expect([keys[i], answer.status]).toEqual([keys[i], expected]);
    });
    const deadTenants = answers.filter((_, i) => lookup(doc, keys[i]).cell === dead.name);
    expect(deadTenants.length).toBeGreaterThan(0);
    expect(deadTenants.every((a) => a.retryAfter === '1' && a.routerError === 'cell-unavailable')).toBe(true);
    // A cell's own answers never carry the router's mark.
    expect(answers.filter((a) => a.status === 200).every((a) => a.routerError === undefined)).toBe(true);
    cells[2] = await startCell('cell-b', dead.port);
    await untilCellChecked(router, dead.name, 'UP'); // one good check brings it back
    expect((await routed(agent, port, deadTenants.length ? keys.find((k) => lookup(doc, k).cell === dead.name) : 'x')).status).toBe(200);
  });

  it.each(['error', 'close'] as const)('a cell that answers %s: the request is never sent to another cell', async (behaviour) => {
    const target = cells[1];
    const key = Array.from({ length: 1000 }, (_, i) => `retry-${i}`).find((k) => lookup(doc, k).cell === target.name)!;
    target.behaviour = behaviour;
    const answers = await Promise.all(Array.from({ length: 20 }, () => routed(new http.Agent({ keepAlive: false }), port, key)));
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([behaviour === 'error' ? 500 : 502]));
    expect(target.requests).toBe(20);
    expect(cells.filter((c) => c !== target).reduce((n, c) => n + c.requests, 0)).toBe(0);
  });

  it('routes a tenant seen before by the bucket kept in its keys-table entry, exactly as computing it', async () => {
    const keys = Array.from({ length: 1000 }, (_, i) => `cached-${i}`);
    for (const round of [1, 2]) {
      const answers = await Promise.all(keys.map((key) => routed(agent, port, key)));
      answers.forEach((answer, i) => expect([round, keys[i], answer.cell]).toEqual([round, keys[i], lookup(doc, keys[i]).cell]));
    }
    // The entry holds the bucket + 1 (0 = not computed yet).
    const api = new RuntimeApi(path.join(router.stateDir, 'admin.sock'));
    for (const key of keys.slice(0, 20)) {
      const entry = await api.send(`show table ${KEY_TABLE} key ${key}`);
      expect(entry).toContain(`gpt0=${bucketOf(key, 16384) + 1}`);
    }
    // An invalid key gets no bucket, and a key longer than any valid one cannot borrow a valid key's entry.
    const long = `${'a'.repeat(128)}`;
    expect((await routed(agent, port, long)).status).toBe(200);
    expect((await routed(agent, port, `${long}!`)).status).toBe(400);
    expect((await routed(agent, port, `${long}b`)).status).toBe(400);
    expect(await api.send(`show table ${KEY_TABLE} key ${long}b`)).not.toMatch(/gpt0=[1-9]/);
  });

  it('refuses a second router on the same port at once (no port sharing)', async () => {
    const second = startLocalRouter({
      mappingFile,
      port,
      partitionKey: { source: 'header', name: 'x-tenant-id' },
      bucketCount: 16384,
      healthCheckPath: '/health',
      log: () => undefined,
    });
    await expect(second).rejects.toThrow(HaproxyStartError);
    await expect(second).rejects.toThrow(new RegExp(`^port ${port} is already in use on 127.0.0.1`));
  });

  it('says what it waited for when HAProxy does not start in time', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slow-haproxy-'));
    // An HAProxy that reports its version but never opens its runtime API (a profiler, a slow machine).
    const slow = path.join(dir, 'haproxy');
    fs.writeFileSync(slow, '#!/bin/sh\nif [ "$1" = "-v" ]; then exec haproxy -v; fi\nexec sleep 30\n', { mode: 0o755 });
    const attempt = startLocalRouter({
      mappingFile,
      port: 1,
      partitionKey: { source: 'header', name: 'x-tenant-id' },
      bucketCount: 16384,
      healthCheckPath: '/health',
      log: () => undefined,
      haproxyBinary: slow,
      startTimeoutMs: 1500,
    });
    await expect(attempt).rejects.toThrow(
      /^HAProxy did not answer on its runtime API \(.*admin\.sock\) within 1\.5 s while loading 0\.0 MiB of maps from .*; on a slow machine or under a profiler, give it longer \(--start-timeout SECONDS\)$/,
    );
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
