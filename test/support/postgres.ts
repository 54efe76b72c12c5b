import * as fs from 'fs';
import * as path from 'path';
import { Client } from 'pg';
import { makeTempDir, PostgresServer, startPostgresServer } from '../../lib/local-fleet/postgres';

/**
 * A throwaway real PostgreSQL server for a test file: its own cluster in a temp directory on a
 * free loopback port (as the `postgres` user when the tests run as root). Start it in `beforeAll`,
 * `await pg.destroy()` in `afterAll`. `database()` hands out a fresh, empty database per test.
 */
export interface TestPostgres {
  readonly server: PostgresServer;
  /** Creates a new empty database and returns its name. */
  database(prefix?: string): Promise<string>;
  /** A connected client on `database` (the caller ends it). */
  client(database: string): Promise<Client>;
  /** Stops the server and removes its directory. */
  destroy(): Promise<void>;
}

let counter = 0;

export async function startTestPostgres(): Promise<TestPostgres> {
  const root = makeTempDir('cells-pg-');
  let server: PostgresServer;
  try {
    server = await startPostgresServer({ dataDir: path.join(root, 'data') });
  } catch (error) {
    fs.rmSync(root, { recursive: true, force: true });
    throw error;
  }
  const client = async (database: string) => {
    const c = new Client({ host: server.host, port: server.port, user: server.user, password: server.password, database });
    await c.connect();
    return c;
  };
  return {
    server,
    client,
    database: async (prefix = 'test') => {
      counter += 1;
      const name = `${prefix}_${process.pid}_${counter}`;
      const admin = await client('postgres');
      try {
        await admin.query(`create database "${name}"`);
      } finally {
        await admin.end();
      }
      return name;
    },
    destroy: async () => {
      await server.stop();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
