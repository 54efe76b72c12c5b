import { Pool, PoolClient } from 'pg';
import { bucketSql } from '../../domain/mapping/hash';
import type { Homes } from '../../domain/mapping/types';
import { inTransaction } from '../../runtime/workload/transaction';
import { HandoffStore } from './handoff';
import { RateLimiter } from './limits';
import { ContractGap, contractGaps, readSchemaFacts } from './schema-contract';
import { subjectBuckets } from '../../domain/moves/subject';
import { Clock, MoveError, MoveSubject, TableChecksums, TableCounts } from '../../domain/moves/types';

/** How the mover reaches one cell's database (locally from fleet.json; in AWS inside the cell's mover task). */
export interface CellDatabase {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
  readonly password: string;
  /** TLS to the database (the AWS mover: RDS's CA bundle is trusted through NODE_EXTRA_CA_CERTS). */
  readonly ssl?: boolean;
}

/** One delta in the hand-off store: what the exporter wrote, for the importer. */
export interface DeltaManifest {
  /** Rows with source row_version in (since, upTo] are in this delta. */
  readonly since: string;
  readonly upTo: string;
  readonly tables: Readonly<
    Record<string, { readonly rows: number; readonly batches: number; readonly tombstones: number; readonly tombstoneBatches: number }>
  >;
}

/**
 * Per-row hashes of a subject's rows on one cell, for the incremental verify (lib/operations/moves/verify.ts).
 * A row's hash is the one `checksums` sums, so the two always agree.
 */
export interface RowHashes {
  /**
   * This cell's own row_version bound (its sequence, after the transactions holding a smaller value
   * have ended, as for a delta): a later call with `since = upTo` returns every row changed after this one.
   */
  readonly upTo: string;
  /**
   * Per movable table: `[id, hash]` for each row of the subject with row_version above `since`, and
   * `[id, null]` for each id deleted since (a tombstone above `since`) that has no row now.
   * With `since = '0'`: every row of the subject.
   */
  readonly tables: Readonly<Record<string, ReadonlyArray<readonly [string, string | null]>>>;
}

export interface MovedAwayRecord {
  readonly kind: 'tenant' | 'bucket';
  readonly value: string;
  readonly moveId: string;
  readonly movedTo: string;
}

/**
 * What a move does inside one cell. In AWS each call runs in the cell's mover task; locally the
 * mover connects to each cell's PostgreSQL itself. Either way data crosses only through the hand-off.
 */
export interface CellData {
  readonly cell: string;
  schemaVersion(): Promise<number>;
  /**
   * What this cell's database lacks against the movable-schema contract (lib/operations/moves/schema-contract.ts).
   * Optional: a cell without it is trusted to be on the contract (the factory's cells run its migrations).
   */
  contractGaps?(): Promise<ContractGap[]>;
  /** Writes the subject's rows and tombstones with row_version in (since, …] to `prefix`; returns the manifest. */
  exportDelta(subject: MoveSubject, since: string, handoff: HandoffStore, prefix: string, limiter?: RateLimiter): Promise<DeltaManifest>;
  /** Applies a delta in one transaction: tombstones first, then upserts. Idempotent. */
  importDelta(subject: MoveSubject, handoff: HandoffStore, prefix: string, manifest: DeltaManifest): Promise<TableCounts>;
  /** Deletes every row of the subject (a target's stale or partial copy). */
  clear(subject: MoveSubject): Promise<number>;
  checksums(subject: MoveSubject): Promise<TableChecksums>;
  /**
   * The subject's row hashes changed since `since` (this cell's own row_version). Optional: a cell
   * without it is verified by full checksums under the freeze.
   */
  rowHashes?(subject: MoveSubject, since: string): Promise<RowHashes>;
  /**
   * Writes the subject's messages in the workload's local work queue (`cf_work_queue`) to `prefix`;
   * returns how many. Optional: a cell without it has no queue the move can carry.
   */
  exportQueue?(subject: MoveSubject, handoff: HandoffStore, prefix: string): Promise<number>;
  /** Adds the messages at `prefix` that this cell's queue does not hold yet (idempotent); returns how many were added. */
  importQueue?(subject: MoveSubject, handoff: HandoffStore, prefix: string): Promise<number>;
  /**
   * The message bodies the subject's unfinished work needs, from the workload's `cf_pending_work`
   * view (tenant_id, body); none when the workload has no such view. SQS cannot receive one tenant's
   * messages, so a move re-derives them on the target instead of carrying them.
   */
  pendingWork?(subject: MoveSubject): Promise<string[]>;
  /**
   * Sends the subject's pending work (`pendingWork`) to this cell's own SQS queue, after the flip;
   * returns how many messages. Repeating it sends them again: handlers must be idempotent. Only a
   * cell whose work queue is SQS has it (the AWS mover task).
   */
  requeue?(subject: MoveSubject): Promise<number>;
  /**
   * Records in cf_moved_away that the subject goes to `movedTo`, and waits for the writes that
   * started before. `'frozen'` (at the freeze): the workload answers the subject 503 + Retry-After;
   * `'moved'` (at the flip): 421. A cell whose cf_moved_away has no `state` column gets 421 from the freeze on.
   */
  fence(subject: MoveSubject, moveId: string, movedTo: string, state?: FenceState): Promise<void>;
  /** Removes this move's cf_moved_away records (an abort). */
  unfence(moveId: string): Promise<void>;
  /** Removes every cf_moved_away record covering the subject (the subject is coming back here). */
  clearMovedAway(subject: MoveSubject): Promise<number>;
  /**
   * Writes the mapping's home tables where the cell's fence reads them (cf_homes), before a move of
   * a mapping with home tables touches the cell; refused (MoveError) by a database without cf_homes.
   */
  adoptHomes?(homes: Homes): Promise<void>;
  /** Records that would make this cell refuse the subject after it arrives (a bucket moved away, for a tenant). */
  blockingRecords(subject: MoveSubject): Promise<MovedAwayRecord[]>;
  /** Deletes the source copy, only where cf_moved_away still says it went away with `moveId`. */
  forget(subject: MoveSubject, moveId: string): Promise<number>;
  close(): Promise<void>;
}

/** What a fenced subject gets from its source cell: 503 while frozen, 421 once flipped. */
export type FenceState = 'frozen' | 'moved';

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

interface TableInfo {
  readonly name: string;
  readonly columns: readonly string[];
}

/**
 * A 64-bit hash of one row's text without row_version (each cell numbers its own versions).
 * hashtextextended is what PostgreSQL's hash partitioning relies on, so it is stable across servers
 * and versions; about 4x faster than md5 over JSON.
 */
function rowHash(table: TableInfo): string {
  const columns = table.columns
    .filter((c) => c !== 'row_version')
    .map((c) => `t.${quote(c)}`)
    .join(', ');
  return `hashtextextended(row(${columns})::text, 0)`;
}

/** A cell's PostgreSQL, with the schema of contract 2 (tenant_id, row_version, cf_tombstones, cf_moved_away). */
export class PostgresCellData implements CellData {
  private readonly pool: Pool;

  constructor(
    public readonly cell: string,
    db: CellDatabase,
    private readonly options: { readonly bucketCount: number; readonly batchRows: number; readonly clock: Clock },
  ) {
    // The same text output settings in both cells: checksums hash each row's text.
    this.pool = new Pool({
      ...db,
      max: 2,
      options: '-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres -c extra_float_digits=1',
      connectionTimeoutMillis: 10_000,
    });
    this.pool.on('error', () => undefined);
  }

  /**
   * A row's bucket in the mapping's bucket space, in SQL: DESIGN.md's hash bucket, plus, with home
   * tables, the offset of the table the key's prefix names (what `cf_home_bucket` computes from the
   * `cf_homes` that `adoptHomes` wrote; inline here, so a selection costs no lookup per row).
   */
  private bucketExpression(column: string, homes: Homes | undefined): string {
    const hash = bucketSql(column, this.options.bucketCount);
    const offsets = (homes?.tables ?? []).flatMap((table, t) =>
      t === 0 ? [] : table.prefixes.map((p) => [p, t * this.options.bucketCount] as const),
    );
    if (offsets.length === 0) return hash;
    const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;
    return `(${hash} + case ${offsets.map(([p, offset]) => `when starts_with(${column}, ${literal(p)}) then ${offset}`).join(' ')} else 0 end)`;
  }

  /**
   * Writes the mapping's home tables into `cf_homes` (workload migration 6), which the workload's
   * fence reads a tenant's bucket with: a cell must know them before any record of a home-table
   * bucket is written or read there. The first time, each bucket record of the one-table past
   * (`value` below bucketCount: every tenant of that hash bucket left) is repeated in every table,
   * since those tenants left whatever their table. Idempotent.
   */
  public async adoptHomes(homes: Homes): Promise<void> {
    const B = this.options.bucketCount;
    const rows = homes.tables.flatMap((table, t) => (t === 0 ? [] : table.prefixes.map((p) => ({ prefix: p, offset: t * B }))));
    await this.withClient(async (client) => {
      const { rows: found } = await client.query<{ exists: boolean }>(`select to_regclass('cf_homes') is not null as exists`);
      if (!found[0].exists)
        throw new MoveError(
          `cell ${this.cell}'s database has no cf_homes (workload migration 6): deploy the workload version with it to every cell before moving buckets of a mapping with home tables`,
        );
      await inTransaction(client, '', async () => {
        await client.query('lock table cf_homes in exclusive mode');
        const { rows: before } = await client.query<{ n: number }>('select count(*)::int as n from cf_homes');
        await client.query('delete from cf_homes');
        await client.query('insert into cf_homes (prefix, table_offset) select * from unnest($1::text[], $2::int[])', [
          rows.map((r) => r.prefix),
          rows.map((r) => r.offset),
        ]);
        if (before[0].n === 0 && rows.length > 0) {
          const offsets = [...new Set(rows.map((r) => r.offset))];
          await client.query(
            `insert into cf_moved_away (kind, value, move_id, moved_to, at, state)
             select m.kind, (m.value::bigint + o)::text, m.move_id, m.moved_to, m.at, m.state
             from cf_moved_away m, unnest($1::int[]) o
             where m.kind = 'bucket' and m.value::bigint < $2
             on conflict (kind, value) do nothing`,
            [offsets, B],
          );
        }
      });
    });
  }

  private predicate(subject: MoveSubject, column = 'tenant_id', params: unknown[]): string {
    if (subject.kind === 'tenant') {
      params.push(subject.tenant);
      return `${column} = $${params.length}`;
    }
    const bucket = this.bucketExpression(column, subject.homes);
    const inRanges = `(${subject.ranges.map((r) => `${bucket} between ${Number(r.from)} and ${Number(r.to)}`).join(' or ')})`;
    const except = subject.except;
    if (!except || (except.exact.length === 0 && except.prefixes.length === 0)) return inRanges;
    params.push(except.exact, except.prefixes);
    return `(${inRanges} and not (${column} = any($${params.length - 1}::text[])) and not exists (select 1 from unnest($${params.length}::text[]) p where starts_with(${column}, p)))`;
  }

  private async withClient<T>(body: (client: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new MoveError(`cell ${this.cell}: cannot connect to its database: ${(error as Error).message}`);
    }
    try {
      return await body(client);
    } finally {
      client.release();
    }
  }

  /** Movable tables: every base table of the schema with tenant_id, except the cf_ bookkeeping. */
  private async tables(client: PoolClient): Promise<TableInfo[]> {
    const { rows } = await client.query<{ table_name: string; columns: string[] }>(`
      select c.table_name, array_agg(c.column_name::text order by c.ordinal_position) as columns
      from information_schema.columns c
      join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
      where c.table_schema = current_schema() and t.table_type = 'BASE TABLE' and c.table_name not like 'cf\\_%'
      group by c.table_name
      having bool_or(c.column_name = 'tenant_id')
      order by c.table_name`);
    for (const t of rows) {
      for (const column of ['id', 'row_version']) {
        if (!t.columns.includes(column)) {
          throw new MoveError(
            `cell ${this.cell}: table ${t.table_name} has tenant_id but no ${column} column, so it cannot be moved (contract 2: every table with tenant_id has id and row_version)`,
          );
        }
      }
    }
    return rows.map((t) => ({ name: t.table_name, columns: t.columns }));
  }

  public async contractGaps(): Promise<ContractGap[]> {
    return this.withClient(async (client) => contractGaps(await readSchemaFacts(client)));
  }

  public async schemaVersion(): Promise<number> {
    return this.withClient(async (client) => {
      const { rows } = await client.query<{ v: number | null }>('select max(version) as v from cf_schema_migrations').catch((error: Error) => {
        throw new MoveError(`cell ${this.cell}: cannot read cf_schema_migrations (${error.message}); is the workload's schema migrated?`);
      });
      return Number(rows[0].v ?? 0);
    });
  }

  /**
   * The bound of a delta: the sequence's value, after every transaction that may hold a smaller
   * value has finished. Sequence values are handed out before commit, so a writer can commit
   * row_version 100 after another committed 101; copying up to 101 at once would skip 100 forever.
   * A writer holding a value may have no transaction id yet (nextval runs in the BEFORE trigger and
   * assigns one only when it logs the sequence, every 32 values), so the snapshot's in-progress list
   * misses it; but it started before the sequence was read, so waiting for every transaction that
   * started before then (pg_stat_activity) closes the gap.
   */
  private async stableUpTo(client: PoolClient): Promise<string> {
    const {
      rows: [seq],
    } = await client.query<{ last_value: string }>('select last_value::text from cf_row_version');
    await this.waitForTransactionsBefore(client, "that may hold a row_version below the delta's bound", 'a delta cannot be bounded while they run');
    return seq.last_value;
  }

  /**
   * Waits until every client transaction of this database that started before now has ended (the
   * caller's own session excepted; autovacuum and other background workers hold no row_version). A transaction that has not written yet has no transaction id, so only
   * pg_stat_activity shows it.
   */
  private async waitForTransactionsBefore(client: PoolClient, what: string, consequence: string): Promise<void> {
    const {
      rows: [{ at }],
    } = await client.query<{ at: string }>('select clock_timestamp()::text as at');
    const deadline = this.options.clock.now().getTime() + 60_000;
    for (;;) {
      const {
        rows: [{ n }],
      } = await client.query<{ n: number }>(
        `
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend' and xact_start < $1::timestamptz`,
        [at],
      );
      if (n === 0) return;
      if (this.options.clock.now().getTime() > deadline)
        throw new MoveError(`cell ${this.cell}: ${n} transactions ${what} stayed open for 60 s; ${consequence}`);
      await this.options.clock.sleep(5);
    }
  }

  public async exportDelta(
    subject: MoveSubject,
    since: string,
    handoff: HandoffStore,
    prefix: string,
    limiter?: RateLimiter,
  ): Promise<DeltaManifest> {
    return this.withClient(async (client) => {
      const upTo = await this.stableUpTo(client);
      return inTransaction(client, 'isolation level repeatable read read only', async () => {
        const tables: Record<string, { rows: number; batches: number; tombstones: number; tombstoneBatches: number }> = {};
        for (const table of await this.tables(client)) {
          const params: unknown[] = [since, upTo];
          const where = this.predicate(subject, 'tenant_id', params);
          const counts = { rows: 0, batches: 0, tombstones: 0, tombstoneBatches: 0 };
          await client.query(
            `declare rows_cursor no scroll cursor for
            select row_to_json(t)::text as j from ${quote(table.name)} t
            where t.row_version > $1::bigint and t.row_version <= $2::bigint and ${where} order by t.row_version`,
            params,
          );
          for (;;) {
            const { rows } = await client.query<{ j: string }>(`fetch ${this.options.batchRows} from rows_cursor`);
            if (rows.length === 0) break;
            await limiter?.take(rows.length);
            await handoff.put(`${prefix}/${table.name}/rows-${counts.batches}.json`, `[${rows.map((r) => r.j).join(',\n')}]`);
            counts.rows += rows.length;
            counts.batches++;
          }
          await client.query('close rows_cursor');
          const tparams: unknown[] = [since, upTo, table.name];
          const twhere = this.predicate(subject, 'tenant_id', tparams);
          const { rows: tombstones } = await client.query<{ id: string }>(
            `
            select id from cf_tombstones
            where row_version > $1::bigint and row_version <= $2::bigint and table_name = $3 and ${twhere} order by row_version`,
            tparams,
          );
          for (let i = 0; i < tombstones.length; i += this.options.batchRows) {
            const batch = tombstones.slice(i, i + this.options.batchRows).map((t) => ({ id: t.id }));
            await handoff.put(`${prefix}/${table.name}/tombstones-${counts.tombstoneBatches}.json`, JSON.stringify(batch));
            counts.tombstones += batch.length;
            counts.tombstoneBatches++;
          }
          tables[table.name] = counts;
        }
        const manifest: DeltaManifest = { since, upTo, tables };
        // Written last: a delta without a manifest is incomplete and is exported again.
        await handoff.put(`${prefix}/manifest.json`, JSON.stringify(manifest));
        return manifest;
      });
    });
  }

  public async importDelta(subject: MoveSubject, handoff: HandoffStore, prefix: string, manifest: DeltaManifest): Promise<TableCounts> {
    return this.withClient(async (client) =>
      inTransaction(client, '', async () => {
        const here = new Map((await this.tables(client)).map((t) => [t.name, t]));
        const counts: Record<string, { rows: number; tombstones: number }> = {};
        for (const [name, delta] of Object.entries(manifest.tables)) {
          const table = here.get(name);
          if (!table)
            throw new MoveError(`cell ${this.cell} has no movable table ${name}; the source has one (are both cells on the same schema version?)`);
          const params: unknown[] = [];
          const where = this.predicate(subject, 't.tenant_id', params);
          for (let b = 0; b < delta.tombstoneBatches; b++) {
            const text = await handoff.get(`${prefix}/${name}/tombstones-${b}.json`);
            await client.query(
              `delete from ${quote(name)} t using json_populate_recordset(null::${quote(name)}, $${params.length + 1}::json) x where t.id = x.id and ${where}`,
              [...params, text],
            );
          }
          const columns = table.columns.map(quote);
          const updates = table.columns
            .filter((c) => c !== 'id')
            .map((c) => `${quote(c)} = excluded.${quote(c)}`)
            .join(', ');
          for (let b = 0; b < delta.batches; b++) {
            const text = await handoff.get(`${prefix}/${name}/rows-${b}.json`);
            await client.query(
              `insert into ${quote(name)} (${columns.join(', ')})
            select ${columns.join(', ')} from json_populate_recordset(null::${quote(name)}, $1::json)
            on conflict (id) do update set ${updates}`,
              [text],
            );
          }
          counts[name] = { rows: delta.rows, tombstones: delta.tombstones };
        }
        return counts;
      }),
    );
  }

  public async clear(subject: MoveSubject): Promise<number> {
    return this.withClient(async (client) =>
      inTransaction(client, '', async () => {
        let deleted = 0;
        for (const table of await this.tables(client)) {
          const params: unknown[] = [];
          const result = await client.query(`delete from ${quote(table.name)} where ${this.predicate(subject, 'tenant_id', params)}`, params);
          deleted += result.rowCount ?? 0;
        }
        if (await this.hasQueue(client)) {
          // Messages of a stale copy (left by an earlier move away, not yet forgotten) or a partial import.
          const params: unknown[] = [];
          await client.query(`delete from cf_work_queue where ${this.predicate(subject, 'tenant_id', params)}`, params);
        }
        // The deletes just recorded tombstones for rows that never were this cell's: drop them.
        const params: unknown[] = [];
        await client.query(`delete from cf_tombstones where ${this.predicate(subject, 'tenant_id', params)}`, params);
        return deleted;
      }),
    );
  }

  public async checksums(subject: MoveSubject): Promise<TableChecksums> {
    return this.withClient(async (client) =>
      inTransaction(client, 'isolation level repeatable read read only', async () => {
        const result: Record<string, { rows: number; checksum: string }> = {};
        for (const table of await this.tables(client)) {
          const params: unknown[] = [];
          // Order-independent: the sum of each row's hash (rowHash), so it equals the sum the
          // incremental verify keeps from rowHashes.
          const {
            rows: [r],
          } = await client.query<{ n: number; sum: string }>(
            `
          select count(*)::int as n, coalesce(sum(${rowHash(table)}::numeric), 0)::text as sum
          from ${quote(table.name)} t where ${this.predicate(subject, 'tenant_id', params)}`,
            params,
          );
          result[table.name] = { rows: r.n, checksum: r.sum };
        }
        return result;
      }),
    );
  }

  public async rowHashes(subject: MoveSubject, since: string): Promise<RowHashes> {
    return this.withClient(async (client) => {
      const upTo = await this.stableUpTo(client);
      // One snapshot taken after every transaction holding a row_version <= upTo has ended: a row
      // whose row_version is still <= upTo later is read here in its final state.
      return inTransaction(client, 'isolation level repeatable read read only', async () => {
        const tables: Record<string, [string, string | null][]> = {};
        for (const table of await this.tables(client)) {
          const params: unknown[] = since === '0' ? [] : [since];
          const where = this.predicate(subject, 'tenant_id', params);
          // An index on row_version (items has one) makes this proportional to what changed, not to the tenant.
          const { rows } = await client.query<{ id: string; h: string }>(
            `
            select t.id::text as id, ${rowHash(table)}::text as h from ${quote(table.name)} t
            where ${since === '0' ? 'true' : 't.row_version > $1::bigint'} and ${where}`,
            params,
          );
          const changed: [string, string | null][] = rows.map((r) => [r.id, r.h]);
          if (since !== '0') {
            const tparams: unknown[] = [since, table.name];
            const twhere = this.predicate(subject, 'tenant_id', tparams);
            const { rows: gone } = await client.query<{ id: string }>(
              `
              select id from cf_tombstones where row_version > $1::bigint and table_name = $2 and ${twhere}`,
              tparams,
            );
            // An id deleted and inserted again has its new row above `since` too (its row_version
            // comes after the tombstone's), so an id absent from `rows` has no row now.
            const present = new Set(rows.map((r) => r.id));
            for (const g of gone) if (!present.has(g.id)) changed.push([g.id, null]);
          }
          tables[table.name] = changed;
        }
        return { upTo, tables };
      });
    });
  }

  /** The workload's local work queue (contract 1's QUEUE_KIND=postgres; empty where the cell uses SQS). */
  private async hasQueue(client: PoolClient): Promise<boolean> {
    const {
      rows: [r],
    } = await client.query<{ t: string | null }>(`select to_regclass('cf_work_queue')::text as t`);
    return r.t !== null;
  }

  public async pendingWork(subject: MoveSubject): Promise<string[]> {
    return this.withClient(async (client) => {
      const {
        rows: [view],
      } = await client.query<{ t: string | null }>(`select to_regclass('cf_pending_work')::text as t`);
      if (view.t === null) return [];
      const params: unknown[] = [];
      const { rows } = await client.query<{ body: string }>(
        `select body::text as body from cf_pending_work where ${this.predicate(subject, 'tenant_id', params)}`,
        params,
      );
      return rows.map((r) => r.body);
    });
  }

  public async exportQueue(subject: MoveSubject, handoff: HandoffStore, prefix: string): Promise<number> {
    return this.withClient(async (client) => {
      let messages: unknown[] = [];
      if (await this.hasQueue(client)) {
        const params: unknown[] = [];
        ({ rows: messages } = await client.query(
          `
          select tenant_id, body, receive_count, enqueued_at, visible_at = 'infinity'::timestamptz as parked
          from cf_work_queue where ${this.predicate(subject, 'tenant_id', params)} order by id`,
          params,
        ));
      }
      await handoff.put(`${prefix}/cf_work_queue.json`, JSON.stringify(messages));
      return messages.length;
    });
  }

  public async importQueue(subject: MoveSubject, handoff: HandoffStore, prefix: string): Promise<number> {
    const text = await handoff.get(`${prefix}/cf_work_queue.json`);
    if ((JSON.parse(text) as unknown[]).length === 0) return 0;
    return this.withClient(async (client) => {
      if (!(await this.hasQueue(client)))
        throw new MoveError(
          `cell ${this.cell} has no cf_work_queue table but the source has queued messages (are both cells on the same schema version?)`,
        );
      const params: unknown[] = [text];
      // Visible at once on the target, except messages the source had parked for an operator.
      // A message already there (a repeated flip step) is not added twice.
      const result = await client.query(
        `
        insert into cf_work_queue (tenant_id, body, visible_at, receive_count, enqueued_at)
        select x.tenant_id, x.body, case when x.parked then 'infinity'::timestamptz else now() end, x.receive_count, x.enqueued_at
        from json_to_recordset($1::json) as x(tenant_id text, body jsonb, receive_count integer, enqueued_at timestamptz, parked boolean)
        where ${this.predicate(subject, 'x.tenant_id', params)}
          and not exists (select 1 from cf_work_queue q where q.tenant_id = x.tenant_id and q.body = x.body)`,
        params,
      );
      return result.rowCount ?? 0;
    });
  }

  private recordKeys(subject: MoveSubject): { kind: 'tenant' | 'bucket'; values: string[] } {
    return subject.kind === 'tenant'
      ? { kind: 'tenant', values: [subject.tenant] }
      : { kind: 'bucket', values: subjectBuckets(subject, this.options.bucketCount).map(String) };
  }

  public async fence(subject: MoveSubject, moveId: string, movedTo: string, state: FenceState = 'moved'): Promise<void> {
    const { kind, values } = this.recordKeys(subject);
    await this.withClient(async (client) => {
      // The state column is optional in the contract (a workload's migration 4 adds it).
      const { rows } = await client.query(
        `select 1 from information_schema.columns where table_schema = current_schema() and table_name = 'cf_moved_away' and column_name = 'state'`,
      );
      const withState = rows.length > 0;
      await client.query(
        `
        insert into cf_moved_away (kind, value, move_id, moved_to, at${withState ? ', state' : ''})
        select $1, v, $3, $4, now()${withState ? ', $5' : ''} from unnest($2::text[]) v
        on conflict (kind, value) do update set move_id = excluded.move_id, moved_to = excluded.moved_to, at = excluded.at${withState ? ', state = excluded.state' : ''}`,
        withState ? [kind, values, moveId, movedTo, state] : [kind, values, moveId, movedTo],
      );
      await this.drain(client);
    });
  }

  /**
   * Waits until every transaction that started before the fence committed has ended. Those are
   * the only ones that may have checked cf_moved_away before the record existed (a read-only check
   * has no transaction id yet, so only pg_stat_activity sees it); every later one sees the record.
   */
  private async drain(client: PoolClient): Promise<void> {
    await this.waitForTransactionsBefore(client, 'that started before the fence', 'the move waits for them to drain');
  }

  public async unfence(moveId: string): Promise<void> {
    await this.withClient((client) => client.query('delete from cf_moved_away where move_id = $1', [moveId]));
  }

  public async clearMovedAway(subject: MoveSubject): Promise<number> {
    return this.withClient(async (client) => {
      const { kind, values } = this.recordKeys(subject);
      let removed = (await client.query('delete from cf_moved_away where kind = $1 and value = any($2::text[])', [kind, values])).rowCount ?? 0;
      if (subject.kind === 'buckets') {
        // Tenants of these buckets that were moved away one by one come back with their bucket.
        const params: unknown[] = [];
        const where = this.predicate(subject, 'value', params);
        removed += (await client.query(`delete from cf_moved_away where kind = 'tenant' and ${where}`, params)).rowCount ?? 0;
      }
      return removed;
    });
  }

  public async blockingRecords(subject: MoveSubject): Promise<MovedAwayRecord[]> {
    if (subject.kind === 'buckets') return [];
    const bucket = subjectBuckets(subject, this.options.bucketCount)[0];
    return this.withClient(async (client) => {
      const { rows } = await client.query<{ kind: 'bucket'; value: string; move_id: string; moved_to: string }>(
        `select kind, value, move_id, moved_to from cf_moved_away where kind = 'bucket' and value = $1`,
        [String(bucket)],
      );
      return rows.map((r) => ({ kind: r.kind, value: r.value, moveId: r.move_id, movedTo: r.moved_to }));
    });
  }

  public async forget(subject: MoveSubject, moveId: string): Promise<number> {
    return this.withClient(async (client) =>
      inTransaction(client, '', async () => {
        // Only what still went away with this move: a subject that has moved back since is live here again.
        const still =
          subject.kind === 'tenant'
            ? `tenant_id in (select value from cf_moved_away where kind = 'tenant' and move_id = $1)`
            : `${this.bucketExpression('tenant_id', subject.homes)} in (select value::bigint from cf_moved_away where kind = 'bucket' and move_id = $1)`;
        const params: unknown[] = [moveId];
        const where = `${this.predicate(subject, 'tenant_id', params)} and ${still}`;
        let deleted = 0;
        for (const table of await this.tables(client)) {
          deleted += (await client.query(`delete from ${quote(table.name)} where ${where}`, params)).rowCount ?? 0;
        }
        await client.query(`delete from cf_tombstones where ${where}`, params);
        // The messages the move copied to the target at the flip (the queue keeps them here until now).
        if (await this.hasQueue(client)) await client.query(`delete from cf_work_queue where ${where}`, params);
        return deleted;
      }),
    );
  }

  public async close(): Promise<void> {
    await this.pool.end();
  }
}
