import { Pool } from 'pg';
import { inTransaction } from './transaction';

/**
 * The workload's schema, as versioned migrations. The movable-schema contract (docs/workload.md, "What a
 * workload must offer to be movable") lives here:
 * - every table the workload owns has `tenant_id text not null` and a primary key `id`;
 * - movable tables have `row_version bigint not null`, set from the one sequence `cf_row_version`
 *   by a trigger on insert and update, so a catch-up copy can ask "what changed since version v";
 * - deletes are recorded by a trigger in `cf_tombstones`, so a catch-up copy sees them too;
 * - `cf_moved_away` holds the tenants and buckets moved to another cell; the workload refuses them
 *   with 421 (checked inside every write transaction under a SHARE lock on the table, see items.ts);
 *   its optional `state` column says `frozen` while the move is fenced but not yet flipped, and
 *   the workload answers those with 503 + Retry-After, as the routers answer the freeze;
 * - `cf_bucket(tenant_id, bucket_count)` is DESIGN.md's bucket in SQL (a move selects a bucket's rows with it);
 *   `cf_home_bucket` adds the tenant's home table's offset from `cf_homes` (a mapping with home tables).
 * A migration is never edited once released: add a new one.
 */
export interface Migration {
  readonly version: number;
  readonly description: string;
  readonly sql: string;
}

/** Tables that hold tenant data and are copied by a tenant move (all have tenant_id, id, row_version). */
export const MOVABLE_TABLES: readonly string[] = ['items'];

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'movable-schema support: row versions, tombstones, moved-away records, bucket function',
    sql: `
      create sequence cf_row_version;

      create table cf_tombstones (
        table_name text not null,
        tenant_id text not null,
        id text not null,
        row_version bigint not null,
        primary key (table_name, id)
      );
      create index cf_tombstones_version on cf_tombstones (row_version);
      create index cf_tombstones_tenant on cf_tombstones (tenant_id, row_version);

      create table cf_moved_away (
        kind text not null check (kind in ('tenant', 'bucket')),
        value text not null,
        move_id text not null,
        moved_to text not null,
        at timestamptz not null default now(),
        primary key (kind, value)
      );

      create function cf_set_row_version() returns trigger language plpgsql as $$
      begin
        new.row_version := nextval('cf_row_version');
        return new;
      end $$;

      create function cf_record_tombstone() returns trigger language plpgsql as $$
      begin
        insert into cf_tombstones (table_name, tenant_id, id, row_version)
        values (tg_table_name, old.tenant_id, old.id, nextval('cf_row_version'))
        on conflict (table_name, id) do update
          set tenant_id = excluded.tenant_id, row_version = excluded.row_version;
        return old;
      end $$;

      -- DESIGN.md's bucket: first 4 bytes of SHA-256 of the key (UTF-8), big-endian unsigned, mod bucketCount.
      create function cf_bucket(tenant_id text, bucket_count integer) returns integer
      language sql immutable strict parallel safe as $$
        select ((('x' || encode(substring(sha256(convert_to(tenant_id, 'UTF8')) from 1 for 4), 'hex'))::bit(32)::bigint) % bucket_count)::integer
      $$;
    `,
  },
  {
    version: 2,
    description: 'items: the tenant-scoped resource of the reference API',
    sql: `
      create table items (
        id text primary key,
        tenant_id text not null,
        data jsonb not null,
        status text not null default 'pending' check (status in ('pending', 'processed')),
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        processed_at timestamptz,
        row_version bigint not null default 0
      );
      -- Listing a tenant's items in id order (ids are UUIDv7: creation order).
      create index items_tenant_id on items (tenant_id, id);
      create index items_row_version on items (row_version);
      create trigger items_row_version before insert or update on items
        for each row execute function cf_set_row_version();
      create trigger items_tombstone after delete on items
        for each row execute function cf_record_tombstone();
    `,
  },
  {
    version: 3,
    description: 'the local work queue (QUEUE_KIND=postgres): messages written in the same transaction as the item',
    sql: `
      create table cf_work_queue (
        id bigserial primary key,
        tenant_id text not null,
        body jsonb not null,
        visible_at timestamptz not null default now(),
        receive_count integer not null default 0,
        enqueued_at timestamptz not null default now()
      );
      create index cf_work_queue_visible on cf_work_queue (visible_at, id);
    `,
  },
  {
    version: 4,
    description: 'cf_moved_away.state: a subject fenced under its freeze is answered 503 (frozen), 421 only once flipped',
    sql: `
      -- Records written before this migration were all written at or after a flip.
      alter table cf_moved_away add column state text not null default 'moved' check (state in ('frozen', 'moved'));
    `,
  },
  {
    version: 5,
    description: "cf_pending_work: the message each unfinished item needs, which a move re-sends to the target cell's SQS queue after the flip",
    sql: `
      -- SQS cannot hand over one tenant's messages: the move re-derives them from the data it copied.
      create view cf_pending_work as
        select tenant_id, json_build_object('kind', 'item.created', 'tenantId', tenant_id, 'itemId', id)::text as body
        from items where status = 'pending';
    `,
  },
  {
    version: 6,
    description: "cf_homes: the mapping's home tables as this cell's fence reads them (a tenant's bucket in the mapping's bucket space)",
    sql: `
      -- Written by a move of a mapping with home tables (docs/capacity.md, "Home regions"): a key that
      -- starts with prefix is in the table whose first bucket is table_offset. Empty: one table.
      create table cf_homes (
        prefix text primary key,
        table_offset integer not null check (table_offset > 0)
      );
      -- A tenant's bucket in the mapping's bucket space: its hash bucket plus its home table's offset
      -- (prefixes never start one another, so at most one matches).
      create function cf_home_bucket(tenant_id text, bucket_count integer) returns integer
      language sql stable strict parallel safe as $$
        select cf_bucket(tenant_id, bucket_count)
          + coalesce((select h.table_offset from cf_homes h where starts_with(tenant_id, h.prefix) limit 1), 0)
      $$;
    `,
  },
];

export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/** Arbitrary but fixed: every task of every cell serializes its migrations on this advisory lock. */
const MIGRATION_LOCK = 0x63656c6c; // 'cell'

/**
 * Applies the migrations this database has not seen yet, each in its own transaction, under a
 * session advisory lock: when several tasks start at once, one migrates and the others wait, then
 * find nothing left to do. Returns the schema version afterwards. Refuses to run against a database
 * that is ahead of this code (a rollback to an older image must not touch a newer schema).
 */
export async function migrate(pool: Pool, log: (line: string) => void = () => undefined): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(
        'create table if not exists cf_schema_migrations (version integer primary key, applied_at timestamptz not null default now())',
      );
      const applied = new Set((await client.query<{ version: number }>('select version from cf_schema_migrations')).rows.map((r) => r.version));
      const newest = Math.max(0, ...applied);
      if (newest > SCHEMA_VERSION) {
        throw new Error(
          `the database is at schema version ${newest}, newer than this workload's ${SCHEMA_VERSION}; deploy the newer image (migrations never run backwards)`,
        );
      }
      for (const migration of MIGRATIONS) {
        if (applied.has(migration.version)) continue;
        await inTransaction(client, '', async () => {
          await client.query(migration.sql);
          await client.query('insert into cf_schema_migrations (version) values ($1)', [migration.version]);
        });
        log(`migrated to schema version ${migration.version}: ${migration.description}`);
      }
      return SCHEMA_VERSION;
    } finally {
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    client.release();
  }
}

/** The schema version recorded in the database (0 before any migration). */
export async function schemaVersion(pool: Pool): Promise<number> {
  const exists = await pool.query<{ t: string | null }>("select to_regclass('cf_schema_migrations')::text as t");
  if (!exists.rows[0].t) return 0;
  const result = await pool.query<{ version: number }>('select coalesce(max(version), 0) as version from cf_schema_migrations');
  return Number(result.rows[0].version);
}
