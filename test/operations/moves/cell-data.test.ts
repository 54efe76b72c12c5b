import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { bucketOf } from '../../../lib/domain/mapping';
import { bucketSql } from '../../../lib/domain/mapping/hash';
import { CellDatabase, PostgresCellData } from '../../../lib/operations/moves/cell-data';
import { IncrementalVerify, LocalHandoffStore, MoveSubject, systemClock } from '../../../lib/operations/moves';
import { PostgresServer, sql, startPostgres } from './postgres-fixture';
import { testClient } from '../../support/postgres';
import { until } from '../../support/cells';

let pg: PostgresServer;
let dir: string;
let handoff: LocalHandoffStore;
let n = 0;

beforeAll(async () => {
  pg = await startPostgres();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'moves-handoff-'));
  handoff = new LocalHandoffStore(dir);
});
afterAll(async () => {
  await pg?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function twoCells(
  bucketCount = 1024,
): Promise<{ a: PostgresCellData; b: PostgresCellData; dbA: CellDatabase; dbB: CellDatabase; close: () => Promise<void> }> {
  n += 1;
  const dbA = await pg.createDatabase(`a${n}`);
  const dbB = await pg.createDatabase(`b${n}`);
  const options = { bucketCount, batchRows: 7, clock: systemClock };
  const a = new PostgresCellData('cell-a', dbA, options);
  const b = new PostgresCellData('cell-b', dbB, options);
  return {
    a,
    b,
    dbA,
    dbB,
    close: async () => {
      await a.close();
      await b.close();
    },
  };
}

const itemsOf = async (db: CellDatabase, tenant: string) =>
  (await sql<{ id: string; name: string }>(db, "select id::text, data->>'name' as name from items where tenant_id = $1 order by id", [tenant])).map(
    (r) => `${r.id}:${r.name}`,
  );

describe('bucket in SQL (contract 2)', () => {
  test('equals the DESIGN.md bucket for ASCII keys of every length, at several bucket counts', async () => {
    const keys = Array.from({ length: 300 }, (_, i) => `tenant-${'x'.repeat(i % 70)}${i}`);
    keys.push('a', 'internal-canary', 'A.b:c@d-e_f');
    for (const count of [1024, 16384, 1 << 20]) {
      const rows = await sql<{ k: string; b: string }>(
        pg.database('postgres'),
        `select k, ${bucketSql('k', count)}::text as b from unnest($1::text[]) k`,
        [keys],
      );
      expect(rows.map((r) => Number(r.b))).toEqual(keys.map((k) => bucketOf(k, count)));
    }
  });
});

describe('PostgresCellData', () => {
  test('clone, catch-up with updates and deletes, verify: deletes stay deleted, other tenants untouched', async () => {
    const { a, b, dbA, dbB, close } = await twoCells();
    try {
      const tenant: MoveSubject = { kind: 'tenant', tenant: 'acme' };
      await sql(
        dbA,
        `insert into items (id, tenant_id, data) select gen_random_uuid()::text, 'acme', jsonb_build_object('name', 'item-' || g, 'n', g) from generate_series(1, 50) g`,
      );
      await sql(
        dbA,
        `insert into items (id, tenant_id, data) select gen_random_uuid()::text, 'other', jsonb_build_object('name', 'o-' || g) from generate_series(1, 20) g`,
      );
      await sql(dbA, `insert into notes (id, tenant_id, text) select g, 'acme', 'note ' || g from generate_series(1, 10) g`);
      const clone = await a.exportDelta(tenant, '0', handoff, 't1/clone');
      expect(clone.tables.items.rows).toBe(50);
      expect(clone.tables.items.batches).toBe(8); // 7 rows per batch
      expect(clone.tables.notes.rows).toBe(10);
      await b.importDelta(tenant, handoff, 't1/clone', clone);
      expect(await b.checksums(tenant)).toEqual(await a.checksums(tenant));

      // While the move runs: updates, deletes, inserts.
      await sql(
        dbA,
        `update items set data = jsonb_set(data, '{name}', to_jsonb((data->>'name') || '-v2')) where tenant_id = 'acme' and (data->>'n')::int <= 5`,
      );
      await sql(dbA, `delete from items where tenant_id = 'acme' and (data->>'n')::int between 40 and 50`);
      await sql(dbA, `delete from notes where id = 3`);
      await sql(dbA, `insert into items (id, tenant_id, data) values (gen_random_uuid()::text, 'acme', jsonb_build_object('name', 'late'::text))`);
      const delta = await a.exportDelta(tenant, clone.upTo, handoff, 't1/round-1');
      expect(delta.tables.items).toMatchObject({ rows: 6, tombstones: 11 });
      expect(delta.tables.notes).toMatchObject({ rows: 0, tombstones: 1 });
      await b.importDelta(tenant, handoff, 't1/round-1', delta);
      // Applying the same delta twice (a resumed mover) changes nothing.
      await b.importDelta(tenant, handoff, 't1/round-1', delta);
      expect(await itemsOf(dbB, 'acme')).toEqual(await itemsOf(dbA, 'acme'));
      expect(await itemsOf(dbB, 'acme')).toHaveLength(40);
      const sums = await a.checksums(tenant);
      expect(sums.items.rows).toBe(40);
      expect(await b.checksums(tenant)).toEqual(sums);
      expect(await itemsOf(dbB, 'other')).toEqual([]);

      // A change on one side shows in the checksum.
      await sql(dbB, `update items set data = jsonb_set(data, '{name}', '"tampered"') where data->>'name' = 'late'`);
      expect((await b.checksums(tenant)).items.checksum).not.toBe(sums.items.checksum);
    } finally {
      await close();
    }
  });

  test('a bucket subject selects exactly the tenants hashing into it', async () => {
    const { a, b, dbA, dbB, close } = await twoCells(1024);
    try {
      const tenants = Array.from({ length: 400 }, (_, i) => `t${i}`);
      await sql(
        dbA,
        `insert into items (id, tenant_id, data) select gen_random_uuid()::text, t, jsonb_build_object('name', 'x') from unnest($1::text[]) t`,
        [tenants],
      );
      const bucket = bucketOf('t7', 1024);
      const subject: MoveSubject = { kind: 'buckets', ranges: [{ from: bucket, to: bucket + 9 }] };
      const expected = tenants.filter((t) => bucketOf(t, 1024) >= bucket && bucketOf(t, 1024) <= bucket + 9).sort();
      const manifest = await a.exportDelta(subject, '0', handoff, 't2/clone');
      await b.importDelta(subject, handoff, 't2/clone', manifest);
      const moved = (await sql<{ tenant_id: string }>(dbB, 'select tenant_id from items order by tenant_id')).map((r) => r.tenant_id);
      expect(moved).toEqual(expected);
      expect(moved.length).toBeGreaterThan(1);
    } finally {
      await close();
    }
  });

  test('a writer holding an older row_version when the delta is cut is not skipped', async () => {
    const { a, b, dbA, close } = await twoCells();
    const subject: MoveSubject = { kind: 'tenant', tenant: 'slow' };
    const writer = await testClient(dbA);
    try {
      // The writer takes row_version N and stays open; a later writer commits N+1 first.
      await writer.query('begin');
      await writer.query(
        `insert into items (id, tenant_id, data) values (gen_random_uuid()::text, 'slow', jsonb_build_object('name', 'first'::text))`,
      );
      await sql(dbA, `insert into items (id, tenant_id, data) values (gen_random_uuid()::text, 'slow', jsonb_build_object('name', 'second'::text))`);
      const exporting = a.exportDelta(subject, '0', handoff, 't3/clone');
      await new Promise((r) => setTimeout(r, 200));
      await writer.query('commit');
      const manifest = await exporting;
      await b.importDelta(subject, handoff, 't3/clone', manifest);
      expect(manifest.tables.items.rows).toBe(2);
      expect(await b.checksums(subject)).toEqual(await a.checksums(subject));
    } finally {
      await writer.end();
      await close();
    }
  });

  test('a writer that took its row_version but has no transaction id yet when the delta is cut is not skipped', async () => {
    const { a, dbA, close } = await twoCells();
    // nextval runs in the BEFORE trigger; the transaction gets its id only at the row insert after it
    // (nextval assigns one only every 32 values, when it logs the sequence). This trigger stretches that gap.
    await sql(
      dbA,
      `create table slow (id text primary key, tenant_id text not null, row_version bigint not null default 0);
      create function slow_row_version() returns trigger language plpgsql as $$
      begin new.row_version := nextval('cf_row_version'); perform pg_sleep(0.5); return new; end $$;
      create trigger slow_row_version before insert or update on slow for each row execute function slow_row_version();`,
    );
    const subject: MoveSubject = { kind: 'tenant', tenant: 'gap' };
    try {
      const inserting = sql(dbA, `insert into slow (id, tenant_id) values ('s1', 'gap')`);
      // The delta is cut while the insert sleeps in its trigger, holding its row_version.
      await until(
        'the insert to hold its row_version',
        async () => (await sql(dbA, `select 1 from pg_stat_activity where datname = current_database() and wait_event = 'PgSleep'`)).length === 1,
        60_000,
      );
      const manifest = await a.exportDelta(subject, '0', handoff, 't5/clone');
      await inserting;
      expect(manifest.tables.slow.rows).toBe(1);
    } finally {
      await close();
    }
  });

  test('fence, clearMovedAway and forget: forget deletes only what still went away with its move', async () => {
    const { a, dbA, close } = await twoCells();
    try {
      await sql(
        dbA,
        `insert into items (id, tenant_id, data) values (gen_random_uuid()::text, 'acme', jsonb_build_object('name', 'x'::text)), (gen_random_uuid()::text, 'acme', jsonb_build_object('name', 'y'::text)), (gen_random_uuid()::text, 'other', jsonb_build_object('name', 'z'::text))`,
      );
      const acme: MoveSubject = { kind: 'tenant', tenant: 'acme' };
      await a.fence(acme, 'm-one', 'cell-b', 'frozen');
      expect(await sql(dbA, 'select kind, value, move_id, moved_to, state from cf_moved_away')).toEqual([
        { kind: 'tenant', value: 'acme', move_id: 'm-one', moved_to: 'cell-b', state: 'frozen' },
      ]);
      // The flip: the same record, now answered 421.
      await a.fence(acme, 'm-one', 'cell-b', 'moved');
      expect(await sql(dbA, 'select move_id, state from cf_moved_away')).toEqual([{ move_id: 'm-one', state: 'moved' }]);
      // The tenant came back (a later move cleared the record): the old move's forget deletes nothing.
      expect(await a.clearMovedAway(acme)).toBe(1);
      expect(await a.forget(acme, 'm-one')).toBe(0);
      expect(await itemsOf(dbA, 'acme')).toHaveLength(2);
      await a.fence(acme, 'm-two', 'cell-b');
      expect(await a.forget(acme, 'm-two')).toBe(2);
      expect(await itemsOf(dbA, 'acme')).toEqual([]);
      expect(await itemsOf(dbA, 'other')).toHaveLength(1);
      expect(await sql(dbA, `select * from cf_tombstones where tenant_id = 'acme'`)).toEqual([]);
      // Abort: unfence removes this move's records only.
      const bucket = bucketOf('other', 1024);
      await a.fence({ kind: 'buckets', ranges: [{ from: bucket, to: bucket + 1 }] }, 'm-three', 'cell-c');
      expect(await a.blockingRecords({ kind: 'tenant', tenant: 'other' })).toEqual([
        { kind: 'bucket', value: String(bucket), moveId: 'm-three', movedTo: 'cell-c' },
      ]);
      await a.unfence('m-three');
      expect(await sql(dbA, `select value, move_id from cf_moved_away order by value`)).toEqual([{ value: 'acme', move_id: 'm-two' }]);
    } finally {
      await close();
    }
  });

  test('a workload whose cf_moved_away has no state column is fenced all the same (421 from the freeze on)', async () => {
    n += 1;
    const db = await pg.createDatabase(
      `nostate${n}`,
      `create table cf_moved_away (kind text not null, value text not null, move_id text not null, moved_to text not null, at timestamptz not null default now(), primary key (kind, value));`,
    );
    const cell = new PostgresCellData('cell-x', db, { bucketCount: 1024, batchRows: 10, clock: systemClock });
    try {
      await cell.fence({ kind: 'tenant', tenant: 'acme' }, 'm-old', 'cell-y', 'frozen');
      expect(await sql(db, 'select value, move_id, moved_to from cf_moved_away')).toEqual([{ value: 'acme', move_id: 'm-old', moved_to: 'cell-y' }]);
    } finally {
      await cell.close();
    }
  });

  test('a table with tenant_id but no row_version is refused with the reason', async () => {
    n += 1;
    const db = await pg.createDatabase(
      `bad${n}`,
      `create table cf_schema_migrations (version int primary key); create table orders (id int primary key, tenant_id text);`,
    );
    const cell = new PostgresCellData('cell-x', db, { bucketCount: 1024, batchRows: 10, clock: systemClock });
    try {
      await expect(cell.checksums({ kind: 'tenant', tenant: 'a' })).rejects.toThrow(/table orders has tenant_id but no row_version column/);
    } finally {
      await cell.close();
    }
  });
});

describe('incremental verify (row hashes before the freeze, only the changed rows under it)', () => {
  const tenant: MoveSubject = { kind: 'tenant', tenant: 'acme' };

  /** Two cells with acme's 200 items and 10 notes copied to the target, and an IncrementalVerify started. */
  async function copied() {
    const cells = await twoCells();
    const { a, b, dbA } = cells;
    await sql(
      dbA,
      `insert into items (id, tenant_id, data) select 'i' || lpad(g::text, 4, '0'), 'acme', jsonb_build_object('name', 'item-' || g) from generate_series(1, 200) g`,
    );
    await sql(dbA, `insert into items (id, tenant_id, data) select gen_random_uuid()::text, 'other', '{}' from generate_series(1, 20) g`);
    await sql(dbA, `insert into notes (id, tenant_id, text) select g, 'acme', 'note ' || g from generate_series(1, 10) g`);
    n += 1;
    const clone = await a.exportDelta(tenant, '0', handoff, `v${n}/clone`);
    await b.importDelta(tenant, handoff, `v${n}/clone`, clone);
    const sync = async (since: string, name: string) => {
      const delta = await a.exportDelta(tenant, since, handoff, `v${n}/${name}`);
      await b.importDelta(tenant, handoff, `v${n}/${name}`, delta);
      return delta.upTo;
    };
    return { ...cells, upTo: clone.upTo, sync };
  }

  test('changes copied after the start are re-read, and nothing else: verified, with the checksums of a full read', async () => {
    const { a, b, dbA, upTo, sync, close } = await copied();
    try {
      const verify = (await IncrementalVerify.start(tenant, a, b))!;
      expect(verify.baseRows).toEqual({ source: 210, target: 210 });
      // The tenant keeps working until the freeze; then the final sync.
      await sql(dbA, `update items set data = '{"name":"changed"}' where id in ('i0001', 'i0002')`);
      await sql(dbA, `delete from items where id = 'i0003'`);
      await sql(dbA, `delete from notes where id = 4`);
      await sql(dbA, `insert into items (id, tenant_id, data) values ('i9999', 'acme', '{"name":"new"}')`);
      await sync(upTo, 'final');
      const result = await verify.finish();
      expect(result.differences).toEqual([]);
      expect(result.checksums).toEqual(await a.checksums(tenant));
      expect(result.checksums).toEqual(await b.checksums(tenant));
      expect(result.checksums.items.rows).toBe(200);
      // Proportional to the change: the source re-read 3 rows and 2 deletes, the target what the import wrote.
      expect(result.changed.source).toBe(5);
      expect(result.changed.target).toBeLessThanOrEqual(5);
    } finally {
      await close();
    }
  });

  test('a target row changed, deleted or added after the copy makes the verify fail, naming the ids', async () => {
    const { a, b, dbB, close } = await copied();
    try {
      const verify = (await IncrementalVerify.start(tenant, a, b))!;
      await sql(dbB, `update items set data = '{"name":"tampered"}' where id = 'i0100'`);
      await sql(dbB, `delete from items where id = 'i0101'`);
      await sql(dbB, `insert into items (id, tenant_id, data) values ('x-extra', 'acme', '{}')`);
      await sql(dbB, `update notes set text = 'tampered' where id = 7`);
      const result = await verify.finish();
      expect(result.differences).toEqual([
        'items: 3 rows differ (source 200 rows, target 200): i0100 (differs), i0101 (missing on target), x-extra (only on target)',
        'notes: 1 rows differ (source 10 rows, target 10): 7 (differs)',
      ]);
    } finally {
      await close();
    }
  });

  test('a difference already there when it started fails it while untouched, and passes once the final sync repairs it', async () => {
    const { a, b, dbA, dbB, upTo, sync, close } = await copied();
    try {
      await sql(dbB, `update items set data = '{"name":"tampered"}' where id in ('i0050', 'i0060')`);
      const verify = (await IncrementalVerify.start(tenant, a, b))!;
      // i0060 changes on the source, so the final sync copies it again over the bad copy; i0050 stays bad.
      await sql(dbA, `update items set data = '{"name":"changed"}' where id = 'i0060'`);
      await sync(upTo, 'final');
      const result = await verify.finish();
      expect(result.changed.source).toBe(1);
      expect(result.differences).toEqual(['items: 1 rows differ (source 200 rows, target 200): i0050 (differs)']);
    } finally {
      await close();
    }
  });
});
