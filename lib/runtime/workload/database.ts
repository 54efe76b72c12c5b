import { Client, ClientConfig, Pool, PoolClient } from 'pg';
import { CredentialSource } from './credentials';

export interface DatabasePoolOptions {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly credentials: CredentialSource;
  readonly ssl: boolean;
  readonly max: number;
  readonly statementTimeoutMs: number;
  /** @default 3000 */
  readonly connectTimeoutMs?: number;
}

/** SQLSTATE class 28: invalid authorization (28P01 wrong password, 28000 no such role / not allowed). */
export function isAuthenticationError(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  return typeof code === 'string' && code.startsWith('28');
}

/**
 * A pg pool whose every new connection asks `credentials` for the user and password first, and on
 * an authentication failure drops the cached credentials and tries once more with fresh ones
 * (the secret was rotated since they were read). Connections already open stay open: PostgreSQL
 * checks the password only when a session starts.
 */
export function createDatabasePool(o: DatabasePoolOptions): Pool {
  const credentials = o.credentials;
  // pg's typings do not let a subclass override connect's overloads; the runtime contract is plain:
  // the pool calls connect(callback), direct users call connect() for a promise.
  const Base = Client as unknown as new (config: ClientConfig) => {
    user: string;
    password: string;
    connectionParameters: { user: string; password: string };
  };
  const baseConnect = Client.prototype.connect as unknown as (this: unknown) => Promise<unknown>;
  class RotationSafeClient extends Base {
    connect(callback?: (err: Error | null, client?: unknown) => void): Promise<unknown> | undefined {
      const attempt = async (): Promise<unknown> => {
        const { username, password } = await credentials.get();
        this.user = username;
        this.connectionParameters.user = username;
        this.password = password;
        this.connectionParameters.password = password;
        try {
          return await baseConnect.call(this);
        } catch (error) {
          // A pg client connects once: the pool hands the failure to the caller, whose retry
          // (connectWithRetry) gets a new client that reads the fresh credentials.
          if (isAuthenticationError(error)) credentials.invalidate();
          throw error;
        }
      };
      const done = attempt();
      if (callback) {
        done.then(
          () => callback(null, this),
          (error: Error) => callback(error),
        );
        return undefined;
      }
      return done;
    }
  }
  const pool = new Pool({
    Client: RotationSafeClient as unknown as typeof Client,
    host: o.host,
    port: o.port,
    database: o.database,
    // RDS/Aurora certificates chain to the RDS CA bundle, which the image adds with NODE_EXTRA_CA_CERTS.
    ssl: o.ssl ? { rejectUnauthorized: true } : false,
    max: o.max,
    connectionTimeoutMillis: o.connectTimeoutMs ?? 3000,
    idleTimeoutMillis: 30_000,
    statement_timeout: o.statementTimeoutMs,
    application_name: 'cell-workload',
  });
  // An idle connection whose server went away (restart, failover, terminated session) emits
  // 'error' on the pool; unhandled, that would crash the process. The pool drops the client itself.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * A pooled connection; when opening it failed on stale credentials (the failed attempt invalidated
 * them), one more attempt with fresh ones. Authentication happens before any statement runs, so the
 * retry repeats nothing.
 */
export async function connectWithRetry(pool: Pool): Promise<PoolClient> {
  try {
    return await pool.connect();
  } catch (error) {
    if (!isAuthenticationError(error)) throw error;
    return pool.connect();
  }
}

/**
 * Creates `database` when the server does not have it yet (SQLSTATE 3D000 on connect): RDS and Aurora
 * create only the maintenance database `postgres` unless told otherwise, and naming a database on an
 * existing instance would replace it. Connects to `postgres` with the same credentials (the cell's
 * admin user may create databases); a concurrent creator's "already exists" counts as success.
 */
export async function ensureDatabase(o: DatabasePoolOptions): Promise<boolean> {
  const probe = createDatabasePool({ ...o, max: 1 });
  try {
    const client = await connectWithRetry(probe);
    client.release();
    return false;
  } catch (error) {
    if ((error as { code?: string }).code !== '3D000') throw error;
  } finally {
    await probe.end();
  }
  const admin = createDatabasePool({ ...o, database: 'postgres', max: 1 });
  try {
    await admin.query(`create database "${o.database.replace(/"/g, '""')}"`);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === '42P04') return false;
    throw error;
  } finally {
    await admin.end();
  }
}
