import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client, ClientConfig, Pool, PoolConfig } from 'pg';
import { makeTempDir, PostgresServer, startPostgresServer } from '../../lib/operations/local-fleet/postgres';

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

/**
 * Turns TLS on in a test server (reloaded, no restart): a certificate for 127.0.0.1 from a CA of the
 * test's own, made with the openssl CLI. Returns a world-readable directory holding `ca.pem`, for a
 * client (a container) that verifies the server; the caller removes it.
 */
export async function enableTestTls(pg: TestPostgres): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-tls-'));
  fs.chmodSync(dir, 0o755);
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=test database CA');
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  fs.writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  run(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  );
  fs.chmodSync(path.join(dir, 'ca.pem'), 0o644);
  // The server reads its key and certificate from its data directory, as its own user.
  const owner = fs.statSync(pg.server.dataDir);
  for (const file of ['server.pem', 'server.key']) {
    const target = path.join(pg.server.dataDir, file);
    fs.copyFileSync(path.join(dir, file), target);
    fs.chownSync(target, owner.uid, owner.gid);
    fs.chmodSync(target, 0o600);
  }
  for (const file of ['ca.key', 'server.key', 'server.csr']) fs.rmSync(path.join(dir, file));
  const admin = await pg.client('postgres');
  try {
    await admin.query("alter system set ssl_cert_file = 'server.pem'");
    await admin.query("alter system set ssl_key_file = 'server.key'");
    await admin.query('alter system set ssl = on');
    await admin.query('select pg_reload_conf()');
  } finally {
    await admin.end();
  }
  return dir;
}
