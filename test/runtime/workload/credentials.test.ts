import { Client } from 'pg';
import { cachedSecretCredentials, connectWithRetry, createDatabasePool, migrate } from '../../../lib/runtime/workload';
import { startTestPostgres, TestPostgres } from '../../support/postgres';
import { until } from '../../support/cells';

describe('cached secret credentials', () => {
  test('cached at most 60 s, refetched after, and at once when invalidated', async () => {
    let now = 0;
    let fetches = 0;
    let password = 'one';
    const source = cachedSecretCredentials({
      name: 'secret',
      now: () => now,
      fetch: async () => {
        fetches += 1;
        return JSON.stringify({ username: 'u', password });
      },
    });
    expect(await source.get()).toEqual({ username: 'u', password: 'one' });
    password = 'two';
    now = 59_000;
    expect((await source.get()).password).toBe('one');
    now = 60_000;
    expect((await source.get()).password).toBe('two');
    password = 'three';
    source.invalidate();
    expect((await source.get()).password).toBe('three');
    expect(fetches).toBe(3);
  });

  test('concurrent connects share one fetch', async () => {
    let fetches = 0;
    const source = cachedSecretCredentials({
      name: 'secret',
      fetch: async () => {
        fetches += 1;
        await new Promise((r) => setTimeout(r, 20));
        return '{"username":"u","password":"p"}';
      },
    });
    await Promise.all([source.get(), source.get(), source.get()]);
    expect(fetches).toBe(1);
  });

  test('a secret without username and password is a clear error', async () => {
    await expect(cachedSecretCredentials({ name: 'arn:x', fetch: async () => '{"user":"u"}' }).get()).rejects.toThrow(
      /arn:x: the secret has no string username and password/,
    );
    await expect(cachedSecretCredentials({ name: 'arn:x', fetch: async () => 'nope' }).get()).rejects.toThrow(/not JSON/);
  });
});

describe('rotation against a real PostgreSQL', () => {
  let pg: TestPostgres;
  let admin: Client;
  let database: string;

  beforeAll(async () => {
    pg = await startTestPostgres();
    database = await pg.database('rotation');
    admin = await pg.client(database);
    await admin.query("create role app login password 'first'");
    await admin.query(`grant all on database "${database}" to app`);
    await admin.query('grant all on schema public to app');
  });

  afterAll(async () => {
    await admin?.end();
    await pg?.destroy();
  });

  test('after a rotation, new connections read the new password: the cached one fails once, is dropped, and the retry succeeds', async () => {
    // The secret store: what Secrets Manager holds now.
    let stored = { username: 'app', password: 'first' };
    let fetches = 0;
    const credentials = cachedSecretCredentials({
      name: 'secret',
      fetch: async () => {
        fetches += 1;
        return JSON.stringify(stored);
      },
    });
    const pool = createDatabasePool({
      host: pg.server.host,
      port: pg.server.port,
      database,
      credentials,
      ssl: false,
      max: 2,
      statementTimeoutMs: 5000,
    });
    try {
      await migrate(pool);
      expect(fetches).toBe(1);
      // Rotation: the password changes in the database and in the secret; open sessions end (a restart, a failover).
      await admin.query("alter role app password 'second'");
      stored = { username: 'app', password: 'second' };
      await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where usename = 'app'");
      // The pool drops its terminated idle connections when their 57P01 arrives (not at once).
      await until('the pool to drop its terminated connections', async () => pool.totalCount === 0, 60_000);
      const client = await connectWithRetry(pool);
      try {
        expect((await client.query('select current_user as u')).rows[0].u).toBe('app');
      } finally {
        client.release();
      }
      expect(fetches).toBe(2);
    } finally {
      await pool.end();
    }
  });
});
