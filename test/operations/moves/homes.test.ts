import * as fs from 'fs';
import { Pool } from 'pg';
import { bucketOf, convertToHomes, Homes, initialMapping, lookup, MappingDocument } from '../../../lib/domain/mapping';
import { MoverDeps, planMove, runMove } from '../../../lib/operations/moves';
import { ItemStore, MovedAwayError, postgresWorkQueue } from '../../../lib/runtime/workload';
import { testPool } from '../../support/postgres';
import { BUCKETS, createWorld, MoveWorld } from './mover-fixture';
import { PostgresServer, startPostgres } from './postgres-fixture';

const NOW = '2026-12-06T06:00:00.000Z';
const US = 'us-east-1';
const EU = 'eu-west-1';
const HOMES: Homes = {
  tables: [
    { regions: [US], prefixes: [] },
    { regions: [EU], prefixes: ['eu-'] },
  ],
};

describe('a move needs cells that know the home tables', () => {
  const today = initialMapping(
    ['us-1', 'eu-1'].map((id) => ({ id, endpoint: `http://${id}.cells.internal`, state: 'active' as const })),
    1024,
    { now: NOW },
  );
  const homes = convertToHomes(today, HOMES, (id) => (id.startsWith('eu') ? EU : US), { now: NOW });
  const deps = (doc: MappingDocument, adoptHomes?: () => Promise<void>, withoutHomes: readonly string[] = []) =>
    ({
      routing: { read: async () => doc },
      cell: (id: string) => ({
        schemaVersion: async () => 6,
        ...(adoptHomes && !withoutHomes.includes(id) ? { adoptHomes } : {}),
        blockingRecords: async () => {
          throw new Error(`cell ${id} read`);
        },
      }),
    }) as unknown as MoverDeps;

  it('refuses a cell whose data cannot hold them, before reading anything of the move there', async () => {
    await expect(planMove(deps(homes), { subject: { kind: 'buckets', ranges: [{ from: 1030, to: 1040 }] }, target: 'eu-1' })).rejects.toThrow(
      /cannot hold home tables; mapping v2 has 2/,
    );
    const refusing = async () => {
      throw new Error("cell us-1's database has no cf_homes (workload migration 6)");
    };
    await expect(
      planMove(deps(homes, refusing), {
        subject: { kind: 'tenant', tenant: 'eu-acme' },
        target: lookup(homes, 'eu-acme').cell === 'us-1' ? 'eu-1' : 'us-1',
      }),
    ).rejects.toThrow(/no cf_homes/);
    // A tenant's own move asks only its target: a source without cf_homes (a cell zero) can send tenants.
    const onUs = Array.from({ length: 100 }, (_, i) => `eu-t${i}`).find((k) => lookup(homes, k).cell === 'us-1')!;
    await expect(
      planMove(
        deps(homes, async () => undefined, ['us-1']),
        { subject: { kind: 'tenant', tenant: onUs }, target: 'eu-1' },
      ),
    ).rejects.toThrow(/cell eu-1 read/);
    // A one-table mapping never asks.
    await expect(planMove(deps(today), { subject: { kind: 'buckets', ranges: [{ from: 0, to: 3 }] }, target: 'eu-1' })).rejects.toThrow(
      /cell eu-1 read/,
    );
  });
});

/**
 * A bucket of one home table moves with its data through real PostgreSQL cells and the workload's
 * own fence: the tenants of that table's bucket go, the other table's tenants of the same hash
 * bucket stay where they are, readable and writable.
 */
describe('moving a home table’s bucket with its data', () => {
  let pg: PostgresServer;
  let w: MoveWorld;
  const pools: Pool[] = [];
  const store = (cell: string) => {
    const pool = testPool({ ...w.dbs[cell], max: 2 });
    pools.push(pool);
    return new ItemStore({ pool, queue: postgresWorkQueue(pool, { pollMs: 50, visibilityMs: 60_000 }), bucketCount: BUCKETS });
  };
  beforeAll(async () => {
    pg = await startPostgres();
    w = await createWorld(pg);
  });
  afterAll(async () => {
    for (const p of pools) await p.end();
    await w?.close();
    await pg?.stop();
  });

  test('only the table’s tenants move and are fenced; a past one-table fence still holds for every table', async () => {
    const regions: Record<string, string> = { 'cell-a': US, 'cell-b': US, 'cell-c': EU };
    // A one-table move before home tables: bucket g leaves cell-a for cell-b.
    const one = w.mapping();
    const g = one.buckets.find((r) => r.cell === 'cell-a')!.from;
    const deps = w.deps();
    expect(
      (await runMove(deps, (await planMove(deps, { subject: { kind: 'buckets', ranges: [{ from: g, to: g }] }, target: 'cell-b' })).id)).status,
    ).toBe('retained');

    const converted = convertToHomes(w.mapping(), HOMES, (id) => regions[id], { now: new Date().toISOString() });
    fs.writeFileSync(w.mappingFile, JSON.stringify(converted));
    // Two tenants of one hash bucket on cell-a, one of each table.
    const h = converted.buckets.find((r) => r.cell === 'cell-a' && r.to < BUCKETS)!.from + 1;
    const find = (prefix: string, bucket: number) =>
      Array.from({ length: 50_000 }, (_, i) => `${prefix}t${i}`).find((k) => bucketOf(k, BUCKETS) === bucket)!;
    const [eu, us, euOfG] = [find('eu-', h), find('', h), find('eu-', g)];
    expect([lookup(converted, eu).cell, lookup(converted, us).cell]).toEqual(['cell-a', 'cell-a']);
    const a = store('cell-a');
    for (let i = 0; i < 5; i++) {
      await a.create(eu, { i });
      await a.create(us, { i });
    }

    const move = await runMove(
      deps,
      (await planMove(deps, { subject: { kind: 'buckets', ranges: [{ from: BUCKETS + h, to: BUCKETS + h }] }, target: 'cell-c' })).id,
    );
    expect(move.status).toBe('retained');
    const after = w.mapping();
    expect([lookup(after, eu).cell, lookup(after, us).cell]).toEqual(['cell-c', 'cell-a']);
    // The EU tenant's rows are on cell-c, and cell-a refuses it; the US tenant of the same hash bucket is untouched.
    expect((await w.sql<{ n: number }>('cell-c', 'select count(*)::int as n from items where tenant_id = $1', [eu]))[0].n).toBe(5);
    expect((await w.sql<{ n: number }>('cell-c', 'select count(*)::int as n from items where tenant_id = $1', [us]))[0].n).toBe(0);
    await expect(a.create(eu, { late: true })).rejects.toBeInstanceOf(MovedAwayError);
    await a.create(us, { late: true });
    expect((await a.list(us, 100, undefined)).items).toHaveLength(6);
    // Both cells know the tables; the EU tenants of g, which left with the one-table move, are still refused on cell-a.
    expect(await w.sql('cell-c', 'select prefix, table_offset from cf_homes')).toEqual([{ prefix: 'eu-', table_offset: BUCKETS }]);
    await expect(a.create(euOfG, { late: true })).rejects.toBeInstanceOf(MovedAwayError);
  });
});
