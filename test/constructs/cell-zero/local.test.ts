import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { compileMapping, MappingDocument } from '../../../lib/domain/mapping';
import { existingTenants, LocalFleet, makeTempDir, startLocalFleet } from '../../../lib/operations/local-fleet';
import { cellctl } from '../../support/cli';
import { until } from '../../support/cells';
import { testClient } from '../../support/postgres';
import { api } from '../../support/workload';

/**
 * Cell zero end to end on this machine (`cellctl fleet local --cell-zero`): an existing service
 * (the reference workload on its own PostgreSQL, its database without the movable-schema contract's
 * row versions and tombstones) holding every tenant, two factory cells and the real router whose
 * first mapping sends every bucket to cell zero. Its database is made movable with
 * `cellctl cell-zero check --sql`, its tenants leave under writes with `cellctl move`, a new tenant
 * is placed in a factory cell, and cell zero is retired from the mapping.
 */
describe('cell zero on the local fleet', () => {
  let fleet: LocalFleet;
  let dir: string;
  let stateDir: string;
  const tenants = existingTenants(12);
  const local = () => ['--local', '--state-dir', stateDir];
  const mapping = () => JSON.parse(fs.readFileSync(fleet.mappingFile, 'utf8')) as MappingDocument;
  const zeroUrl = () => fleet.cellZero!.database.url('cell');

  beforeAll(async () => {
    dir = makeTempDir('e2e-cell-zero-');
    stateDir = path.join(dir, 'state');
    fleet = await startLocalFleet({
      cells: 2,
      port: 0,
      stateDir,
      bucketCount: 1024,
      cellZero: { id: 'zero', tenants: tenants.length, itemsPerTenant: 5 },
      log: () => undefined,
    });
  }, 300_000);
  afterAll(async () => {
    await fleet?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Every item of a tenant through the router, all pages: id → the item without its row version (a cell's own sequence numbers it). */
  async function allItems(tenant: string): Promise<Map<string, string>> {
    const items = new Map<string, string>();
    let after: string | null = null;
    do {
      const page = await api(fleet.routerUrl, 'GET', `/v1/items?limit=100${after ? `&after=${after}` : ''}`, tenant);
      expect([tenant, page.status]).toEqual([tenant, 200]);
      for (const { rowVersion, ...item } of page.body.items as { id: string; rowVersion: number }[]) {
        expect([tenant, item.id, rowVersion]).toEqual([tenant, item.id, expect.any(Number)]);
        items.set(item.id, JSON.stringify(item));
      }
      after = page.body.next;
    } while (after);
    return items;
  }

  /** Rows a tenant has in one cell's database. */
  async function rowsIn(cell: string, tenant: string): Promise<number> {
    const db = await testClient({ connectionString: fleet.cell(cell).database.url('cell') });
    try {
      return (await db.query('select count(*)::int as n from items where tenant_id = $1', [tenant])).rows[0].n;
    } finally {
      await db.end();
    }
  }

  /** A client writing and reading continuously through the router; only the freeze's 503 is allowed. */
  function writer(tenant: string) {
    const acked: string[] = [];
    const bad: string[] = [];
    let frozen = 0;
    let stop = false;
    const done = (async () => {
      for (let i = 0; !stop; i++) {
        const wrote = await api(fleet.routerUrl, 'POST', '/v1/items', tenant, { n: i });
        if (wrote.status === 201) acked.push(wrote.body.id);
        else if (wrote.status === 503 && wrote.body?.error === 'frozen') frozen += 1;
        else bad.push(`POST ${wrote.status} ${JSON.stringify(wrote.body)}`);
      }
    })();
    return {
      acked,
      bad,
      frozen: () => frozen,
      stop: async () => {
        stop = true;
        await done;
      },
    };
  }

  test('every key goes to cell zero, which holds every existing tenant; the factory cells hold nothing', async () => {
    const doc = mapping();
    expect(doc.buckets).toEqual([{ from: 0, to: 1023, cell: 'zero' }]);
    expect(Object.keys(doc.cells).sort()).toEqual(['cell-1', 'cell-2', 'zero']);
    expect(JSON.parse(fs.readFileSync(fleet.fleetFile, 'utf8'))).toMatchObject({ cellZero: 'zero' });
    for (const tenant of [...tenants, 'never-seen']) {
      const r = await api(fleet.routerUrl, 'GET', '/v1/items', tenant);
      expect([tenant, r.status, r.headers.get('x-cell')]).toEqual([tenant, 200, 'zero']);
      expect([tenant, r.body.items.length]).toEqual([tenant, tenant === 'never-seen' ? 0 : 5]);
    }
    for (const cell of ['cell-1', 'cell-2']) expect(await rowsIn(cell, tenants[0])).toBe(0);
  });

  test('cell zero cannot retire while anything routes to it or lives in its database', async () => {
    const refused = await cellctl('cell-zero', 'retire', ...local());
    expect(refused.code).toBe(1);
    expect(refused.err).toBe(
      `error: cell zero zero still serves: 1024 buckets route to it; 12 tenants still in its database (existing-1, existing-10, existing-11, existing-12, existing-2, …); move them out first (\`cellctl move tenant|buckets|plan\`, docs/cell-zero.md)\n`,
    );
    expect(mapping().cells.zero).toBeDefined();
  });

  test('its database is checked against the movable-schema contract; a move out is refused until the fix SQL is applied', async () => {
    const check = await cellctl('cell-zero', 'check', '--url', zeroUrl());
    expect(check.code).toBe(1);
    expect(check.out).toMatch(/^movable-schema contract: 1 tables, 0 meet it, the database lacks its bookkeeping\n/);
    expect(check.out).toMatch(/^\(database\) +missing +cf_row_version, cf_tombstones, cf_set_row_version\(\), cf_record_tombstone\(\)$/m);
    expect(check.out).toMatch(/^items +missing +row-version trigger; tombstone trigger; row versions on existing rows$/m);

    const refused = await cellctl('move', 'tenant', tenants[0], '--to', 'cell-1', ...local());
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^error: tenant existing-1 cannot leave zero: its database does not meet the movable-schema contract/);

    const fix = await cellctl('cell-zero', 'check', '--url', zeroUrl(), '--sql');
    expect(fix.code).toBe(1);
    // As an operator applies it, while cell zero serves: psql, one statement at a time.
    execFileSync('psql', [zeroUrl(), '--no-psqlrc', '--quiet', '-v', 'ON_ERROR_STOP=1'], { input: fix.out, stdio: ['pipe', 'ignore', 'pipe'] });
    const after = await cellctl('cell-zero', 'check', '--url', zeroUrl());
    expect([after.code, after.out]).toEqual([0, expect.stringMatching(/^movable-schema contract: 1 tables, 1 meet it\n/)]);
    // The existing rows have versions now, and cell zero kept serving.
    const page = await api(fleet.routerUrl, 'GET', '/v1/items', tenants[0]);
    expect(page.body.items.map((i: { rowVersion: number }) => i.rowVersion > 0)).toEqual([true, true, true, true, true]);
  });

  test('tenants move out under writes with `cellctl move`: nothing acknowledged is lost, every item arrives unchanged', async () => {
    const moving = tenants.slice(0, 3);
    const before = new Map<string, Map<string, string>>();
    for (const t of moving) before.set(t, await allItems(t));
    const writers = new Map(moving.map((t) => [t, writer(t)]));
    const bystanders = tenants.slice(3, 6).map((t) => [t, writer(t)] as const);
    try {
      await until('writes flowing to cell zero', async () => [...writers.values()].every((w) => w.acked.length > 10), 60_000);
      for (const [i, tenant] of moving.entries()) {
        const to = i % 2 === 0 ? 'cell-1' : 'cell-2';
        const moved = await cellctl('move', 'tenant', tenant, '--to', to, ...local());
        expect([tenant, moved.code, moved.err]).toEqual([tenant, 0, expect.stringMatching(/; frozen for \d+ ms;/)]);
        const acked = writers.get(tenant)!.acked.length;
        await until(`${tenant}'s writes landing on ${to}`, async () => writers.get(tenant)!.acked.length > acked + 10, 60_000);
      }
    } finally {
      for (const w of writers.values()) await w.stop();
      for (const [, w] of bystanders) await w.stop();
    }
    const doc = compileMapping(mapping());
    for (const [i, tenant] of moving.entries()) {
      const w = writers.get(tenant)!;
      expect([tenant, w.bad]).toEqual([tenant, []]);
      const to = i % 2 === 0 ? 'cell-1' : 'cell-2';
      expect(doc.lookup(tenant).cell).toBe(to);
      const served = await api(fleet.routerUrl, 'GET', '/v1/items?limit=1', tenant);
      expect(served.headers.get('x-cell')).toBe(to);
      const items = await allItems(tenant);
      // Every item it had and every acknowledged write, once each, from its new cell.
      expect([...items.keys()].sort()).toEqual([...before.get(tenant)!.keys(), ...w.acked].sort());
      for (const [id, item] of before.get(tenant)!) expect([tenant, id, items.get(id)]).toEqual([tenant, id, item]);
      expect(await rowsIn(to, tenant)).toBe(items.size);
    }
    for (const [tenant, w] of bystanders) {
      expect([tenant, w.bad, w.frozen()]).toEqual([tenant, [], 0]);
      expect((await api(fleet.routerUrl, 'GET', '/v1/items?limit=1', tenant)).headers.get('x-cell')).toBe('zero');
    }
  }, 300_000);

  test('a new tenant is placed in a factory cell, not in cell zero', async () => {
    const placed = await cellctl('place', 'newco', '--expected-rps', '1', '--samples', '1', '--json', ...local());
    expect([placed.code, placed.err]).toEqual([0, '']);
    const answer = JSON.parse(placed.out) as { kind: string; cell: string; currentCell: string };
    expect(answer).toMatchObject({ kind: 'fits', currentCell: 'zero' });
    expect(['cell-1', 'cell-2']).toContain(answer.cell);
    // The pin it prints, with the plan file in this test's directory.
    const plan = path.join(dir, 'place-newco.json');
    expect((await cellctl('mapping', 'pin', 'newco', answer.cell, '--mapping', fleet.mappingFile, '--plan', plan)).code).toBe(0);
    const ran = await cellctl('move', 'plan', plan, ...local());
    expect([ran.code, ran.err]).toEqual([0, expect.stringMatching(/^plan 1\/1: /m)]);
    const wrote = await api(fleet.routerUrl, 'POST', '/v1/items', 'newco', { first: true });
    expect([wrote.status, wrote.headers.get('x-cell')]).toEqual([201, answer.cell]);
    expect(await rowsIn(answer.cell, 'newco')).toBe(1);
    expect(await rowsIn('zero', 'newco')).toBe(0);
  }, 120_000);

  test("the rest leaves by draining cell zero's buckets; then cell zero serves nothing and is retired from the mapping", async () => {
    const rest = tenants.slice(3);
    const before = new Map<string, Map<string, string>>();
    for (const t of rest) before.set(t, await allItems(t));
    const plan = path.join(dir, 'drain-zero.json');
    const drained = await cellctl('mapping', 'drain', 'zero', '--mapping', fleet.mappingFile, '--plan', plan);
    expect([drained.code, drained.out]).toEqual([
      0,
      `mapping.json unchanged (v${mapping().version}); the plan moves the buckets\n`.replace('mapping.json', fleet.mappingFile),
    ]);
    // Cell zero's buckets, split between the two factory cells.
    expect(JSON.parse(fs.readFileSync(plan, 'utf8')).moves).toEqual([
      { buckets: '0-511', from: 'zero', to: 'cell-1', bucketCount: 512 },
      { buckets: '512-1023', from: 'zero', to: 'cell-2', bucketCount: 512 },
    ]);
    const ran = await cellctl('move', 'plan', plan, ...local());
    expect([ran.code, ran.err]).toEqual([0, expect.stringMatching(/^plan \d+\/\d+: /m)]);
    expect(compileMapping(mapping()).lookup('existing-12').cell).not.toBe('zero');
    // Only the drain itself remains: zero still listed, with no bucket.
    const draining = await cellctl('mapping', 'drain', 'zero', '--mapping', fleet.mappingFile);
    expect(draining.code).toBe(0);
    expect(mapping().buckets.some((r) => r.cell === 'zero')).toBe(false);
    for (const tenant of rest) {
      const items = await allItems(tenant);
      expect([tenant, items]).toEqual([tenant, before.get(tenant)]);
      const served = await api(fleet.routerUrl, 'GET', '/v1/items?limit=1', tenant);
      expect([tenant, served.headers.get('x-cell')]).toEqual([tenant, expect.stringMatching(/^cell-[12]$/)]);
    }

    const retired = await cellctl('cell-zero', 'retire', ...local());
    expect([retired.code, retired.err]).toEqual([0, '']);
    expect(retired.out).toMatch(/^cell zero zero serves nothing: no bucket, no pin or prefix routes to it, no tenant is left in its database\n/);
    const doc = mapping();
    expect(Object.keys(doc.cells).sort()).toEqual(['cell-1', 'cell-2']);
    // The routers drop it; every tenant is still served, from a factory cell.
    await until(
      'the router to serve the mapping without cell zero',
      async () => Number((await api(fleet.routerUrl, 'GET', '/v1/items', tenants[0])).headers.get('x-mapping-version')) === doc.version,
      30_000,
    );
    for (const tenant of [...tenants, 'newco', 'someone-new']) {
      const r = await api(fleet.routerUrl, 'GET', '/v1/items?limit=1', tenant);
      expect([tenant, r.status, r.headers.get('x-cell')]).toEqual([tenant, 200, expect.stringMatching(/^cell-[12]$/)]);
    }
    const again = await cellctl('cell-zero', 'retire', ...local());
    expect([again.code, again.err]).toEqual([
      1,
      expect.stringMatching(/^error: cell zero zero is not in \S+ \(cells: cell-1, cell-2\): nothing to retire\n$/),
    ]);
  }, 600_000);
});
