import { execFileSync } from 'child_process';
import { cellctl } from '../../support/cli';
import { compileMapping } from '../../../lib/domain/mapping';
import { contractGaps, MoveError, planMove, readSchemaFacts } from '../../../lib/operations/moves';
import { CellDatabase } from '../../../lib/operations/moves/cell-data';
import { testPool } from '../../support/postgres';
import { createWorld, MoveWorld } from './mover-fixture';
import { PostgresServer, sql, startPostgres } from './postgres-fixture';

/** An existing service's schema, written without the contract: what cell zero's database often looks like. */
const LEGACY = `
create table customers (id text primary key, tenant_id text not null, name text, row_version bigint not null default 0);
create table orders (order_no serial primary key, tenant text, total numeric);
create table items (id text primary key, tenant_id text, data jsonb);
create index items_tenant on items (tenant_id);
insert into items (id, tenant_id, data) values ('i1', 'acme', '{}'), ('i2', 'globex', '{}');
insert into customers (id, tenant_id, name) values ('c1', 'acme', 'Acme');
`;

const url = (db: CellDatabase) => `postgres://${db.user}:${encodeURIComponent(db.password)}@${db.host}:${db.port}/${db.database}`;

async function gapsOf(db: CellDatabase) {
  const pool = testPool({ ...db, max: 1 });
  try {
    return contractGaps(await readSchemaFacts(pool));
  } finally {
    await pool.end();
  }
}

describe('the movable-schema contract against a real PostgreSQL', () => {
  let pg: PostgresServer;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => pg.stop());

  it("finds nothing required in the reference workload's own schema", async () => {
    const db = await pg.createDatabase('contract_ref');
    const gaps = await gapsOf(db);
    expect(gaps.filter((g) => g.level === 'required')).toEqual([]);
    // The test's second table has no index on row_version or tenant_id: advised, not required.
    expect(gaps.map((g) => `${g.table}: ${g.missing}`)).toEqual(['notes: index on row_version', 'notes: index on tenant_id']);
    const result = await cellctl('cell-zero', 'check', '--url', url(db));
    expect(result).toMatchObject({ code: 0, out: expect.stringMatching(/^movable-schema contract: 2 tables, 2 meet it\n/) });
    expect(result.out).toMatch(/^items +ok +-$/m);
  });

  it('names, per table, what an existing database lacks', async () => {
    const db = await pg.createDatabase('contract_legacy', LEGACY);
    const gaps = await gapsOf(db);
    expect(gaps.filter((g) => g.level === 'required').map((g) => `${g.table ?? '(database)'}: ${g.missing}`)).toEqual([
      '(database): cf_row_version, cf_tombstones, cf_moved_away, cf_set_row_version(), cf_record_tombstone()',
      '(database): cf_schema_migrations',
      'customers: row-version trigger',
      'customers: tombstone trigger',
      'customers: row versions on existing rows',
      'items: tenant_id not null',
      'items: row_version column',
      'items: row-version trigger',
      'items: tombstone trigger',
      'items: row versions on existing rows',
      'orders: tenant_id column',
      'orders: id column',
      'orders: primary key (id), not (order_no)',
      'orders: row_version column',
      'orders: row-version trigger',
      'orders: tombstone trigger',
      'orders: row versions on existing rows',
    ]);
    const result = await cellctl('cell-zero', 'check', '--url', url(db));
    expect(result.code).toBe(1);
    expect(result.err).toBe('');
    expect(result.out).toMatch(/^movable-schema contract: 3 tables, 0 meet it, the database lacks its bookkeeping\n/);
    expect(result.out).toMatch(
      /^items +missing +tenant_id not null; row_version column; row-version trigger; tombstone trigger; row versions on existing rows$/m,
    );
  });

  it('--sql prints the SQL that makes the tables movable: applied, the check passes and every row has a version', async () => {
    // The tables that have their tenant column: what is left is the contract's own columns, triggers and keys.
    const db = await pg.createDatabase('contract_fix', LEGACY.replace(/create table orders[^;]+;\n/, ''));
    const printed = await cellctl('cell-zero', 'check', '--url', url(db), '--sql');
    expect(printed.code).toBe(1);
    expect(printed.out).toContain('create trigger "items_tombstone" after delete on "items" for each row execute function cf_record_tombstone();');
    // As an operator applies it: psql, one statement at a time (create index concurrently runs outside a transaction).
    execFileSync('psql', [url(db), '--no-psqlrc', '--quiet', '-v', 'ON_ERROR_STOP=1'], {
      input: printed.out.replace("<the cells' schema version>", '5'),
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    expect((await gapsOf(db)).filter((g) => g.level === 'required')).toEqual([]);
    expect(await sql(db, 'select count(*)::int as n from items where row_version <= 0')).toEqual([{ n: 0 }]);
    expect((await cellctl('cell-zero', 'check', '--url', url(db))).code).toBe(0);
  });

  it('says in one line when it cannot connect', async () => {
    const result = await cellctl('cell-zero', 'check', '--url', 'postgres://nobody:x@127.0.0.1:1/none');
    expect(result.code).toBe(1);
    expect(result.err).toMatch(
      /^error: cannot read the database's schema: .*; give --url postgres:\/\/USER:PASSWORD@HOST:PORT\/DATABASE or set PGHOST/,
    );
    expect(result.err.trim().split('\n')).toHaveLength(1);
  });

  describe('cellctl move', () => {
    let w: MoveWorld;
    beforeAll(async () => {
      w = await createWorld(pg);
    });
    afterAll(async () => w.close());

    it('refuses to move a tenant out of a cell whose tables do not meet the contract, and moves it once they do', async () => {
      const tenant = 'tenant-7';
      const source = compileMapping(w.mapping()).lookup(tenant).cell;
      const target = ['cell-a', 'cell-b', 'cell-c'].find((c) => c !== source)!;
      await w.sql(source, 'drop trigger notes_tombstone on notes');
      const refused = planMove(w.deps(), { subject: { kind: 'tenant', tenant }, target });
      await expect(refused).rejects.toThrow(MoveError);
      await expect(refused).rejects.toThrow(
        new RegExp(
          `^tenant ${tenant} cannot leave ${source}: its database does not meet the movable-schema contract \\(run \`cellctl cell-zero check\`[^\\n]*\\n  - notes: tombstone trigger$`,
        ),
      );
      await w.sql(source, 'create trigger notes_tombstone after delete on notes for each row execute function cf_record_tombstone()');
      await expect(planMove(w.deps(), { subject: { kind: 'tenant', tenant }, target })).resolves.toMatchObject({
        source,
        target,
        completed: 'planned',
      });
    });
  });
});
