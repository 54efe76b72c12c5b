import * as fc from 'fast-check';
import { Pool } from 'pg';
import { bucketOf } from '../../../lib/domain/mapping';
import { migrate, MIGRATIONS, SCHEMA_VERSION, schemaVersion } from '../../../lib/runtime/workload';
import { startTestPostgres, TestPostgres, testPool } from '../../support/postgres';

let pg: TestPostgres;
const pools: Pool[] = [];

function poolFor(database: string): Pool {
  const pool = testPool({ host: pg.server.host, port: pg.server.port, user: pg.server.user, password: pg.server.password, database, max: 2 });
  pools.push(pool);
  return pool;
}

beforeAll(async () => {
  pg = await startTestPostgres();
});

afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await pg?.destroy();
});

test('migrations run once: a second run applies nothing and keeps the data', async () => {
  const pool = poolFor(await pg.database('twice'));
  expect(await schemaVersion(pool)).toBe(0);
  const lines: string[] = [];
  expect(await migrate(pool, (l) => lines.push(l))).toBe(SCHEMA_VERSION);
  expect(lines).toHaveLength(MIGRATIONS.length);
  await pool.query("insert into items (id, tenant_id, data) values ('i1', 't', '{}')");
  const again: string[] = [];
  expect(await migrate(pool, (l) => again.push(l))).toBe(SCHEMA_VERSION);
  expect(again).toEqual([]);
  const applied = await pool.query('select version from cf_schema_migrations order by version');
  expect(applied.rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
  expect((await pool.query('select count(*)::int as n from items')).rows[0].n).toBe(1);
  expect(await schemaVersion(pool)).toBe(SCHEMA_VERSION);
});

test('tasks starting at once: concurrent migrations all succeed and apply each version once', async () => {
  const database = await pg.database('concurrent');
  const results = await Promise.all(Array.from({ length: 6 }, () => migrate(poolFor(database))));
  expect(results).toEqual(Array(6).fill(SCHEMA_VERSION));
  const applied = await poolFor(database).query('select version, count(*)::int as n from cf_schema_migrations group by version order by version');
  expect(applied.rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, n: 1 })));
});

test('a database ahead of the code is refused, not touched', async () => {
  const pool = poolFor(await pg.database('ahead'));
  await migrate(pool);
  await pool.query('insert into cf_schema_migrations (version) values ($1)', [SCHEMA_VERSION + 1]);
  await expect(migrate(pool)).rejects.toThrow(/newer than this workload/);
});

test('row_version comes from one sequence on insert and update', async () => {
  const pool = poolFor(await pg.database('versions'));
  await migrate(pool);
  const a = (await pool.query("insert into items (id, tenant_id, data) values ('a', 't', '{}') returning row_version")).rows[0].row_version;
  const b = (await pool.query("insert into items (id, tenant_id, data) values ('b', 't', '{}') returning row_version")).rows[0].row_version;
  const a2 = (await pool.query("update items set data = '{\"x\":1}' where id = 'a' returning row_version")).rows[0].row_version;
  expect(Number(b)).toBeGreaterThan(Number(a));
  expect(Number(a2)).toBeGreaterThan(Number(b));
  // Even an explicit value is replaced: copies cannot smuggle versions in.
  const c = (await pool.query("insert into items (id, tenant_id, data, row_version) values ('c', 't', '{}', 1) returning row_version")).rows[0]
    .row_version;
  expect(Number(c)).toBeGreaterThan(Number(a2));
});

test('cf_bucket in SQL equals the mapping bucket (DESIGN.md) for random keys and bucket counts', async () => {
  const pool = poolFor(await pg.database('bucket'));
  await migrate(pool);
  const keys = fc.sample(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,60}$/), 300);
  for (const count of [1, 16, 16384, 65536]) {
    const result = await pool.query<{ k: string; b: number }>('select k, cf_bucket(k, $2) as b from unnest($1::text[]) as k', [keys, count]);
    for (const row of result.rows) expect([row.k, row.b]).toEqual([row.k, bucketOf(row.k, count)]);
  }
  // The contract's expression, literally, gives the same as the function.
  const literal = await pool.query(
    "select (('x' || encode(substring(sha256(convert_to('acme','UTF8')) from 1 for 4),'hex'))::bit(32)::bigint) % 16384 as b",
  );
  expect(Number(literal.rows[0].b)).toBe(bucketOf('acme', 16384));
});
