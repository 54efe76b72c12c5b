import { migrate } from '../../../lib/runtime/workload/migrations';
import { CellDatabase } from '../../../lib/operations/moves/cell-data';
import { startTestPostgres, TestPostgres, testClient, testPool } from '../../support/postgres';

/**
 * Cell databases for the move tests on the shared real-PostgreSQL test helper: each is migrated
 * with the reference workload's own migrations (contract 2), plus a second movable table with a
 * bigint id, so the moves are tested on more than one table and id type.
 */
export interface PostgresServer {
  database(name: string): CellDatabase;
  /** A new database: the workload's migrations and `notes`, or `schema` instead when given. */
  createDatabase(name: string, schema?: string): Promise<CellDatabase>;
  stop(): Promise<void>;
}

/** A second movable table, following contract 2 with the workload's own trigger functions. */
export const NOTES_TABLE = `
create table notes (id bigint primary key, tenant_id text not null, text text, row_version bigint not null default 0);
create trigger notes_row_version before insert or update on notes for each row execute function cf_set_row_version();
create trigger notes_tombstone after delete on notes for each row execute function cf_record_tombstone();
`;

export async function startPostgres(): Promise<PostgresServer> {
  const pg: TestPostgres = await startTestPostgres();
  const { host, port, user, password } = pg.server;
  const database = (name: string): CellDatabase => ({ host, port, user, password, database: name });
  return {
    database,
    createDatabase: async (prefix, schema) => {
      const name = await pg.database(prefix.replace(/[^a-z0-9_]/gi, '_'));
      const pool = testPool({ ...database(name), max: 1 });
      try {
        if (schema !== undefined) {
          await pool.query(schema);
        } else {
          await migrate(pool);
          await pool.query(NOTES_TABLE);
        }
      } finally {
        await pool.end();
      }
      return database(name);
    },
    stop: () => pg.destroy(),
  };
}

/** Rows of one query on a cell database, on a connection of its own. */
export async function sql<T extends Record<string, unknown>>(db: CellDatabase, text: string, params: unknown[] = []): Promise<T[]> {
  const client = await testClient(db);
  try {
    return (await client.query<T>(text, params)).rows;
  } finally {
    await client.end();
  }
}
