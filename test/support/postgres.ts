import * as fs from 'fs';
import * as path from 'path';
import { Client, ClientConfig, Pool, PoolConfig } from 'pg';
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

/*
 * Clients and pools for a server that a test stops. At shutdown PostgreSQL sends 57P01 to every
 * connection still open, and a Client or Pool without an 'error' listener throws it from an idle
 * connection as an uncaught exception, failing whatever test runs then. `pool.end()` resolves
 * before its clients' sockets close, so even an ended pool can get one. A query in flight still
 * rejects with the error, so the listener hides nothing a test checks.
 */

/** A connected pg Client that survives the server stopping under it (the caller ends it). */
export async function testClient(config: ClientConfig): Promise<Client> {
  const client = new Client(config);
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** A pg Pool that survives the server stopping under it (the caller ends it). */
export function testPool(config: PoolConfig): Pool {
  const pool = new Pool(config);
  pool.on('error', () => undefined);
  return pool;
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const root = makeTempDir('cells-pg-');
  let server: PostgresServer;
  try {
    server = await startPostgresServer({ dataDir: path.join(root, 'data') });
  } catch (error) {
    fs.rmSync(root, { recursive: true, force: true });
    throw error;
  }
  const client = (database: string) => testClient({ host: server.host, port: server.port, user: server.user, password: server.password, database });
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
