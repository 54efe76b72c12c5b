import type { Pool, PoolClient } from 'pg';
import { MIGRATIONS } from '../../runtime/workload/migrations';
import { bucketSql } from '../../domain/mapping/hash';

/**
 * The movable-schema contract (lib/runtime/workload/migrations.ts, docs/workload.md) checked against a
 * database that was not built from it, such as cell zero's: what the mover needs, per table, and the
 * SQL that adds what is missing. The facts are read in one place (`readSchemaFacts`); what they
 * lack is a pure function of them (`contractGaps`).
 */

/** What a check found about one table, or about the database's bookkeeping (`table: null`). */
export interface ContractGap {
  /** The table, or null for the database's own bookkeeping (sequence, tombstones, moved-away records). */
  readonly table: string | null;
  /** What is missing, in a few words. */
  readonly missing: string;
  /** Why the mover needs it. */
  readonly why: string;
  /** SQL that adds it. */
  readonly fix: string;
  /** `required`: a move out of this database is refused until it is fixed; `advice`: moves work, slower. */
  readonly level: 'required' | 'advice';
}

export interface TableFacts {
  readonly name: string;
  /** Column name → `{ type, nullable }` (information_schema's data_type). */
  readonly columns: Readonly<Record<string, { readonly type: string; readonly nullable: boolean }>>;
  /** The primary key's columns, in order; empty without one. */
  readonly primaryKey: readonly string[];
  /** Functions its row triggers call, as `<timing> <events>: <function>` (e.g. `BEFORE INSERT,UPDATE: cf_set_row_version`). */
  readonly triggers: readonly { readonly timing: string; readonly events: readonly string[]; readonly fn: string }[];
  /** First columns of its indexes. */
  readonly indexedFirst: readonly string[];
  /** Whether some row has no row version yet (row_version <= 0): a first copy would miss it. */
  readonly unversionedRows: boolean;
}

export interface SchemaFacts {
  /** Bookkeeping objects present: `cf_row_version`, `cf_tombstones`, `cf_moved_away`, `cf_set_row_version()`, … */
  readonly bookkeeping: ReadonlySet<string>;
  /** Whether `cf_moved_away` has its `state` column (frozen vs moved). */
  readonly movedAwayState: boolean;
  /** The application's base tables (not `cf_*`) of the current schema. */
  readonly tables: readonly TableFacts[];
}

/** The bookkeeping every movable database holds, and what adds it: the reference workload's migrations 1 and 4. */
const BOOKKEEPING: readonly { readonly name: string; readonly check: string }[] = [
  { name: 'cf_row_version', check: "to_regclass('cf_row_version')" },
  { name: 'cf_tombstones', check: "to_regclass('cf_tombstones')" },
  { name: 'cf_moved_away', check: "to_regclass('cf_moved_away')" },
  { name: 'cf_schema_migrations', check: "to_regclass('cf_schema_migrations')" },
  { name: 'cf_set_row_version()', check: "to_regprocedure('cf_set_row_version()')" },
  { name: 'cf_record_tombstone()', check: "to_regprocedure('cf_record_tombstone()')" },
];

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Reads what the contract looks at, with the session's current schema (`search_path`). */
export async function readSchemaFacts(client: Pool | PoolClient): Promise<SchemaFacts> {
  const present = await client.query<Record<string, string | null>>(`select ${BOOKKEEPING.map((b, i) => `${b.check}::text as b${i}`).join(', ')}`);
  const bookkeeping = new Set(BOOKKEEPING.filter((_, i) => present.rows[0][`b${i}`] !== null).map((b) => b.name));
  const state = await client.query(
    `select 1 from information_schema.columns where table_schema = current_schema() and table_name = 'cf_moved_away' and column_name = 'state'`,
  );
  const { rows: columns } = await client.query<{ table_name: string; column_name: string; data_type: string; is_nullable: string }>(`
    select c.table_name, c.column_name, c.data_type, c.is_nullable
    from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = current_schema() and t.table_type = 'BASE TABLE' and c.table_name not like 'cf\\_%'
    order by c.table_name, c.ordinal_position`);
  const { rows: keys } = await client.query<{ table_name: string; columns: string[] }>(`
    select t.relname as table_name, array_agg(a.attname::text order by k.ord) as columns
    from pg_index i
    join pg_class t on t.oid = i.indrelid
    join pg_namespace n on n.oid = t.relnamespace
    cross join lateral unnest(i.indkey) with ordinality as k(attnum, ord)
    join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum
    where i.indisprimary and n.nspname = current_schema()
    group by t.relname`);
  const { rows: triggers } = await client.query<{ table_name: string; timing: string; events: string[]; fn: string }>(`
    select c.relname as table_name,
      case when tg.tgtype & 2 <> 0 then 'BEFORE' else 'AFTER' end as timing,
      array_remove(array[case when tg.tgtype & 4 <> 0 then 'INSERT' end, case when tg.tgtype & 8 <> 0 then 'DELETE' end, case when tg.tgtype & 16 <> 0 then 'UPDATE' end], null) as events,
      p.proname::text as fn
    from pg_trigger tg
    join pg_class c on c.oid = tg.tgrelid
    join pg_namespace n on n.oid = c.relnamespace
    join pg_proc p on p.oid = tg.tgfoid
    where not tg.tgisinternal and tg.tgenabled <> 'D' and tg.tgtype & 1 <> 0 and n.nspname = current_schema()`);
  const { rows: indexes } = await client.query<{ table_name: string; first: string }>(`
    select t.relname as table_name, a.attname::text as first
    from pg_index i
    join pg_class t on t.oid = i.indrelid
    join pg_namespace n on n.oid = t.relnamespace
    join pg_attribute a on a.attrelid = t.oid and a.attnum = i.indkey[0]
    where n.nspname = current_schema()`);
  const byTable = new Map<string, Record<string, { type: string; nullable: boolean }>>();
  for (const c of columns) {
    const table = byTable.get(c.table_name) ?? {};
    table[c.column_name] = { type: c.data_type, nullable: c.is_nullable === 'YES' };
    byTable.set(c.table_name, table);
  }
  const tables: TableFacts[] = [];
  for (const [name, cols] of byTable) {
    const unversioned = cols.row_version
      ? (await client.query(`select 1 from ${quote(name)} where row_version <= 0 limit 1`)).rows.length > 0
      : false;
    tables.push({
      name,
      columns: cols,
      primaryKey: keys.find((k) => k.table_name === name)?.columns ?? [],
      triggers: triggers.filter((t) => t.table_name === name).map((t) => ({ timing: t.timing, events: t.events, fn: t.fn })),
      indexedFirst: indexes.filter((i) => i.table_name === name).map((i) => i.first),
      unversionedRows: unversioned,
    });
  }
  return { bookkeeping, movedAwayState: state.rows.length > 0, tables };
}

/**
 * The reference workload's bookkeeping SQL: migration 1 (sequence, tombstones, moved-away, functions)
 * and 4 (state), made to skip what a database already has (one that holds some of it, such as a
 * `cf_moved_away` its service already reads), so the script runs whole on it.
 */
function bookkeepingSql(): string {
  return MIGRATIONS.filter((m) => m.version === 1 || m.version === 4)
    .map((m) => m.sql.trim())
    .join('\n')
    .replace(/\bcreate (sequence|table|index) (?!if not exists)/g, 'create $1 if not exists ')
    .replace(/\bcreate function /g, 'create or replace function ')
    .replace(/\badd column (?!if not exists)/g, 'add column if not exists ');
}

/** What `facts` lack against the contract, database bookkeeping first, then table by table. */
export function contractGaps(facts: SchemaFacts): ContractGap[] {
  const gaps: ContractGap[] = [];
  const absent = BOOKKEEPING.map((b) => b.name).filter((name) => name !== 'cf_schema_migrations' && !facts.bookkeeping.has(name));
  if (absent.length > 0) {
    gaps.push({
      table: null,
      level: 'required',
      missing: absent.join(', '),
      why: 'row versions, deletes and moved-away tenants are recorded in them (a catch-up copy asks "what changed since v"; a moved tenant is refused with 421)',
      fix: bookkeepingSql(),
    });
  } else if (!facts.movedAwayState) {
    gaps.push({
      table: null,
      level: 'required',
      missing: 'cf_moved_away.state',
      why: 'a frozen tenant is answered 503 until its flip, 421 after',
      fix: MIGRATIONS.find((m) => m.version === 4)!.sql.trim(),
    });
  }
  if (!facts.bookkeeping.has('cf_schema_migrations')) {
    gaps.push({
      table: null,
      level: 'required',
      missing: 'cf_schema_migrations',
      why: "a move runs only between databases on the same schema version; record the version the cells' workload is on",
      fix: "create table cf_schema_migrations (version integer primary key, applied_at timestamptz not null default now());\ninsert into cf_schema_migrations (version) values (<the cells' schema version>);",
    });
  }
  for (const table of facts.tables) gaps.push(...tableGaps(table));
  return gaps;
}

function tableGaps(table: TableFacts): ContractGap[] {
  const t = quote(table.name);
  const gap = (missing: string, why: string, fix: string, level: ContractGap['level'] = 'required'): ContractGap => ({
    table: table.name,
    missing,
    why,
    fix,
    level,
  });
  const gaps: ContractGap[] = [];
  const { tenant_id: tenant, id, row_version: version } = table.columns;
  if (!tenant) {
    gaps.push(
      gap(
        'tenant_id column',
        "a move selects a tenant's rows by it; a table without it stays behind when its tenants move",
        `alter table ${t} add column tenant_id text;\n-- set each row's tenant, then:\nalter table ${t} alter column tenant_id set not null;`,
      ),
    );
  } else if (tenant.nullable) {
    gaps.push(
      gap(
        'tenant_id not null',
        'a row without a tenant belongs to no move and would stay behind',
        `alter table ${t} alter column tenant_id set not null;`,
      ),
    );
  }
  if (!id) {
    gaps.push(
      gap(
        'id column',
        'the mover upserts and records deletes by a single-column key `id`',
        `alter table ${t} add column id text not null default gen_random_uuid()::text;${table.primaryKey.length === 0 ? `\nalter table ${t} add primary key (id);` : ''}`,
      ),
    );
  }
  if (table.primaryKey.length === 0) {
    if (id) gaps.push(gap('primary key', 'the mover upserts by `id` (on conflict (id))', `alter table ${t} add primary key (id);`));
  } else if (table.primaryKey.length !== 1 || table.primaryKey[0] !== 'id') {
    gaps.push(
      gap(
        `primary key (id), not (${table.primaryKey.join(', ')})`,
        'the mover upserts and records deletes by `id` alone',
        `alter table ${t} drop constraint ${quote(`${table.name}_pkey`)}, add primary key (id);  -- keep (${table.primaryKey.join(', ')}) unique with a unique index if the application relies on it`,
      ),
    );
  }
  if (!version) {
    gaps.push(
      gap(
        'row_version column',
        'a catch-up copy takes the rows whose row_version rose since the last one',
        `alter table ${t} add column row_version bigint not null default 0;`,
      ),
    );
  } else if (version.type !== 'bigint' || version.nullable) {
    gaps.push(
      gap(
        'row_version bigint not null',
        `row versions come from the bigint sequence cf_row_version (found ${version.type}${version.nullable ? ', nullable' : ''})`,
        `alter table ${t} alter column row_version type bigint, alter column row_version set not null;`,
      ),
    );
  }
  const versions = table.triggers.some(
    (tr) => tr.fn === 'cf_set_row_version' && tr.timing === 'BEFORE' && tr.events.includes('INSERT') && tr.events.includes('UPDATE'),
  );
  if (!versions) {
    gaps.push(
      gap(
        'row-version trigger',
        'every insert and update must take a new row_version, or a catch-up copy misses it',
        `create trigger ${quote(`${table.name}_row_version`)} before insert or update on ${t} for each row execute function cf_set_row_version();`,
      ),
    );
  }
  const tombstones = table.triggers.some((tr) => tr.fn === 'cf_record_tombstone' && tr.timing === 'AFTER' && tr.events.includes('DELETE'));
  if (!tombstones) {
    gaps.push(
      gap(
        'tombstone trigger',
        'a delete during a move must reach the copy too',
        `create trigger ${quote(`${table.name}_tombstone`)} after delete on ${t} for each row execute function cf_record_tombstone();`,
      ),
    );
  }
  if (table.unversionedRows || (!version && Object.keys(table.columns).length > 0)) {
    gaps.push(
      gap(
        'row versions on existing rows',
        'the first copy takes rows with row_version above 0; rows written before the trigger have 0',
        `update ${t} set row_version = nextval('cf_row_version') where row_version <= 0;`,
      ),
    );
  }
  if (version && !table.indexedFirst.includes('row_version')) {
    gaps.push(
      gap(
        'index on row_version',
        'each catch-up reads the rows changed since the last one; without it, the whole table',
        `create index concurrently ${quote(`${table.name}_row_version`)} on ${t} (row_version);`,
        'advice',
      ),
    );
  }
  if (tenant && !table.indexedFirst.includes('tenant_id')) {
    gaps.push(
      gap(
        'index on tenant_id',
        'a tenant move selects, checksums and deletes its rows by tenant_id',
        `create index concurrently ${quote(`${table.name}_tenant_id`)} on ${t} (tenant_id);`,
        'advice',
      ),
    );
  }
  return gaps;
}

/** The required gaps, as the lines a refused move prints. */
export function contractRefusals(gaps: readonly ContractGap[]): string[] {
  return gaps.filter((g) => g.level === 'required').map((g) => `${g.table ?? '(database)'}: ${g.missing}`);
}

/**
 * The tenants that still have rows in this database and have not moved away (no `moved` record for
 * the tenant or its bucket in `cf_moved_away`), sorted: what a cell zero still serves from its data.
 */
export async function tenantsLeft(client: Pool | PoolClient, bucketCount: number): Promise<string[]> {
  const facts = await readSchemaFacts(client);
  const tables = facts.tables.filter((t) => t.columns.tenant_id);
  if (tables.length === 0) return [];
  const bucket = bucketSql('t.tenant_id', bucketCount);
  const moved = facts.bookkeeping.has('cf_moved_away')
    ? `and not exists (select 1 from cf_moved_away m where ${facts.movedAwayState ? "m.state = 'moved' and " : ''}((m.kind = 'tenant' and m.value = t.tenant_id) or (m.kind = 'bucket' and m.value = ${bucket}::text)))`
    : '';
  const { rows } = await client.query<{ tenant_id: string }>(
    tables.map((t) => `select distinct t.tenant_id from ${quote(t.name)} t where t.tenant_id is not null ${moved}`).join(' union ') + ' order by 1',
  );
  return rows.map((r) => r.tenant_id);
}
