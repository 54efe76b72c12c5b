import { Client } from 'pg';
import { RunningWorkload, SCHEMA_VERSION, startWorkload } from '../../../lib/runtime/workload';
import { until } from '../../support/cells';
import { startTestPostgres, TestPostgres } from '../../support/postgres';
import { api, testWorkloadConfig } from '../../support/workload';
import { bucketOf } from '../../../lib/domain/mapping';

let pg: TestPostgres;
let workload: RunningWorkload;
let database: string;
let admin: Client;
let base: string;

beforeAll(async () => {
  pg = await startTestPostgres();
  database = await pg.database('api');
  workload = await startWorkload(testWorkloadConfig(pg, database, { testFaults: true }), { log: () => undefined, retryMs: 100 });
  await workload.ready;
  base = workload.url;
  admin = await pg.client(database);
});

afterAll(async () => {
  await admin?.end();
  await workload?.close();
  await pg?.destroy();
});

describe('the tenant', () => {
  test('a request without the partition key is a 400 that names the header', async () => {
    const r = await api(base, 'GET', '/v1/items');
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/x-tenant-id/);
  });

  test('an invalid key is a 400', async () => {
    const r = await api(base, 'GET', '/v1/items', 'bad key!');
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/invalid tenant/);
  });

  test('a header sent twice is a 400', async () => {
    const response = await fetch(`${base}/v1/items`, {
      headers: [
        ['x-tenant-id', 'a'],
        ['x-tenant-id', 'b'],
      ],
    });
    expect(response.status).toBe(400);
  });
});

describe('items', () => {
  test('create, read, list and delete, with row versions and a tombstone', async () => {
    const created = await api(base, 'POST', '/v1/items', 'acme', { name: 'x' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ tenantId: 'acme', data: { name: 'x' }, status: 'pending' });
    expect(created.headers.get('location')).toBe(`/v1/items/${created.body.id}`);
    const read = await api(base, 'GET', `/v1/items/${created.body.id}`, 'acme');
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual({ name: 'x' });

    const deleted = await api(base, 'DELETE', `/v1/items/${created.body.id}`, 'acme');
    expect(deleted.status).toBe(204);
    expect((await api(base, 'GET', `/v1/items/${created.body.id}`, 'acme')).status).toBe(404);
    expect((await api(base, 'DELETE', `/v1/items/${created.body.id}`, 'acme')).status).toBe(404);
    const tomb = await admin.query('select table_name, tenant_id, row_version from cf_tombstones where id = $1', [created.body.id]);
    expect(tomb.rows).toHaveLength(1);
    expect(tomb.rows[0]).toMatchObject({ table_name: 'items', tenant_id: 'acme' });
    expect(Number(tomb.rows[0].row_version)).toBeGreaterThan(created.body.rowVersion);
  });

  test('a form-encoded body (what curl -d sends) is read as JSON; a non-object is a 400', async () => {
    const response = await fetch(`${base}/v1/items`, {
      method: 'POST',
      headers: { 'x-tenant-id': 'curl', 'content-type': 'application/x-www-form-urlencoded' },
      body: '{"name":"x"}',
    });
    expect(response.status).toBe(201);
    expect((await api(base, 'POST', '/v1/items', 'curl', '[1]')).status).toBe(400);
    expect((await api(base, 'POST', '/v1/items', 'curl', 'not json')).status).toBe(400);
    const count = await admin.query("select count(*)::int as n from items where tenant_id = 'curl'");
    expect(count.rows[0].n).toBe(1);
  });

  test('the list is paginated in creation order', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await api(base, 'POST', '/v1/items', 'pager', { i })).body.id);
    const first = await api(base, 'GET', '/v1/items?limit=2', 'pager');
    expect(first.body.items.map((x: { id: string }) => x.id)).toEqual(ids.slice(0, 2));
    const second = await api(base, 'GET', `/v1/items?limit=2&after=${first.body.next}`, 'pager');
    expect(second.body.items.map((x: { id: string }) => x.id)).toEqual(ids.slice(2, 4));
    const last = await api(base, 'GET', `/v1/items?limit=2&after=${second.body.next}`, 'pager');
    expect(last.body.items.map((x: { id: string }) => x.id)).toEqual(ids.slice(4));
    expect(last.body.next).toBeNull();
    expect((await api(base, 'GET', '/v1/items?limit=0', 'pager')).status).toBe(400);
    expect((await api(base, 'GET', '/v1/items?after=zzz', 'pager')).status).toBe(400);
  });

  test("isolation: one tenant never sees, lists or deletes another tenant's items", async () => {
    const mine = await api(base, 'POST', '/v1/items', 'iso-a', { secret: 'a' });
    await api(base, 'POST', '/v1/items', 'iso-b', { secret: 'b' });
    expect((await api(base, 'GET', `/v1/items/${mine.body.id}`, 'iso-b')).status).toBe(404);
    expect((await api(base, 'DELETE', `/v1/items/${mine.body.id}`, 'iso-b')).status).toBe(404);
    const listB = await api(base, 'GET', '/v1/items', 'iso-b');
    expect(listB.body.items.map((x: { data: { secret: string } }) => x.data.secret)).toEqual(['b']);
    expect((await api(base, 'GET', `/v1/items/${mine.body.id}`, 'iso-a')).status).toBe(200);
  });

  test('the queue round trip: a write enqueues a message and the consumer marks the item processed', async () => {
    const created = await api(base, 'POST', '/v1/items', 'queued', { name: 'q' });
    expect(created.body.status).toBe('pending');
    await until(
      'the consumer to process the item',
      async () => (await api(base, 'GET', `/v1/items/${created.body.id}`, 'queued')).body.status === 'processed',
      60_000,
    );
    const left = await admin.query('select count(*)::int as n from cf_work_queue');
    expect(left.rows[0].n).toBe(0);
  });
});

describe('moved tenants and buckets', () => {
  test('a tenant recorded as moved away gets 421 with the new cell, for reads and writes', async () => {
    const before = await api(base, 'POST', '/v1/items', 'gone', { n: 1 });
    await admin.query("insert into cf_moved_away (kind, value, move_id, moved_to) values ('tenant', 'gone', 'mv-1', 'cell-b')");
    for (const [method, path] of [
      ['POST', '/v1/items'],
      ['GET', '/v1/items'],
      ['GET', `/v1/items/${before.body.id}`],
      ['DELETE', `/v1/items/${before.body.id}`],
    ]) {
      const r = await api(base, method, path, 'gone', method === 'POST' ? { n: 2 } : undefined);
      expect(r.status).toBe(421);
      expect(r.body).toEqual({ error: 'moved', cell: 'cell-b', moveId: 'mv-1' });
    }
    const count = await admin.query("select count(*)::int as n from items where tenant_id = 'gone'");
    expect(count.rows[0].n).toBe(1);
    expect((await api(base, 'GET', '/v1/items', 'stays')).status).toBe(200);
  });

  test("a tenant fenced under its freeze gets the freeze's 503 + Retry-After, never 421; the flip turns it into 421", async () => {
    const before = await api(base, 'POST', '/v1/items', 'moving', { n: 1 });
    await admin.query("insert into cf_moved_away (kind, value, move_id, moved_to, state) values ('tenant', 'moving', 'mv-f', 'cell-b', 'frozen')");
    for (const [method, path] of [
      ['POST', '/v1/items'],
      ['GET', `/v1/items/${before.body.id}`],
      ['DELETE', `/v1/items/${before.body.id}`],
    ]) {
      const r = await api(base, method, path, 'moving', method === 'POST' ? { n: 2 } : undefined);
      expect([r.status, r.headers.get('retry-after'), r.body.error, r.body.moveId]).toEqual([503, '1', 'frozen', 'mv-f']);
    }
    await admin.query("update cf_moved_away set state = 'moved' where move_id = 'mv-f'");
    expect((await api(base, 'GET', '/v1/items', 'moving')).status).toBe(421);
    const count = await admin.query("select count(*)::int as n from items where tenant_id = 'moving'");
    expect(count.rows[0].n).toBe(1);
  });

  test('a bucket recorded as moved away refuses every tenant in it, and only those', async () => {
    const bucket = bucketOf('bucket-tenant', 16384);
    await admin.query("insert into cf_moved_away (kind, value, move_id, moved_to) values ('bucket', $1, 'mv-2', 'cell-c')", [String(bucket)]);
    const r = await api(base, 'POST', '/v1/items', 'bucket-tenant', { n: 1 });
    expect(r.status).toBe(421);
    expect(r.body).toEqual({ error: 'moved', cell: 'cell-c', moveId: 'mv-2' });
    const other = ['t1', 't2', 't3'].find((t) => bucketOf(t, 16384) !== bucket)!;
    expect((await api(base, 'POST', '/v1/items', other, { n: 1 })).status).toBe(201);
  });

  test('recording a move waits for writes in flight, and no write lands after the record', async () => {
    // A slow write (test hook: pg_sleep inside its transaction) is in flight when the move is recorded.
    // 3 s: long enough to be seen holding its lock below however slow this machine is.
    const slow = api(base, 'POST', '/v1/items', 'racer', { n: 1 }, { 'x-fault': 'slow', 'x-fault-delay-ms': '3000' });
    await until(
      'the slow write to hold its lock',
      async () => {
        // The slow write's own lock (it sleeps holding it), not any share lock: another transaction's
        // (the in-process queue worker writes too) let the record land before the slow write began.
        const r = await admin.query(
          "select count(*)::int as n from pg_locks l join pg_class c on c.oid = l.relation join pg_stat_activity a on a.pid = l.pid where c.relname = 'cf_moved_away' and l.mode = 'ShareLock' and l.granted and a.query like '%pg_sleep%'",
        );
        return r.rows[0].n > 0;
      },
      60_000,
    );
    await admin.query("insert into cf_moved_away (kind, value, move_id, moved_to) values ('tenant', 'racer', 'mv-3', 'cell-d')");
    // The record waited for the write in flight: that write had committed when the record landed.
    expect((await admin.query("select count(*)::int as n from items where tenant_id = 'racer'")).rows[0].n).toBe(1);
    expect((await slow).status).toBe(201);
    const after = await api(base, 'POST', '/v1/items', 'racer', { n: 2 });
    expect(after.status).toBe(421);
    const rows = await admin.query("select count(*)::int as n from items where tenant_id = 'racer'");
    expect(rows.rows[0].n).toBe(1);
  });
});

describe('meta and health', () => {
  test('GET /v1/_meta reports the schema version', async () => {
    const r = await api(base, 'GET', '/v1/_meta');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ schemaVersion: SCHEMA_VERSION, cell: 'cell-test', movableTables: ['items'] });
  });

  test('fault hooks are off unless the workload was started with them', async () => {
    const plain = await startWorkload(testWorkloadConfig(pg, database), { log: () => undefined });
    try {
      await plain.ready;
      // Were the hook on, the read would sleep in the database (pg_sleep) before answering: look for
      // that sleep until the answer arrives.
      let answer: Awaited<ReturnType<typeof api>> | undefined;
      const request = api(plain.url, 'GET', '/v1/items', 'acme', undefined, { 'x-fault': 'slow', 'x-fault-delay-ms': '30000' }).then((r) => {
        answer = r;
      });
      let slept = false;
      while (!answer && !slept) {
        const sleeping = await admin.query(
          "select count(*)::int as n from pg_stat_activity where state = 'active' and query like '%pg_sleep%' and pid <> pg_backend_pid()",
        );
        slept = sleeping.rows[0].n > 0;
        await new Promise((r) => setTimeout(r, 20));
      }
      await request;
      expect(slept).toBe(false);
      expect(answer!.status).toBe(200);
    } finally {
      await plain.close();
    }
  });

  test('a database that does not exist yet is created at start (RDS creates only `postgres`)', async () => {
    const fresh = await startWorkload(
      testWorkloadConfig(pg, database, { database: { ...testWorkloadConfig(pg, database).database, name: `fresh_${process.pid}` } }),
      { log: () => undefined },
    );
    try {
      await fresh.ready;
      expect((await api(fresh.url, 'POST', '/v1/items', 'acme', { n: 1 })).status).toBe(201);
    } finally {
      await fresh.close();
    }
  });

  // Last: it stops the database.
  test('health fails while the database is unreachable and recovers when it is back', async () => {
    expect((await api(base, 'GET', '/healthz')).status).toBe(200);
    await admin.end();
    await pg.server.stop();
    const down = await api(base, 'GET', '/healthz');
    expect(down.status).toBe(503);
    expect(down.body.status).toBe('database unreachable');
    const write = await api(base, 'POST', '/v1/items', 'acme', { n: 1 });
    expect(write.status).toBe(503);
    await pg.server.start();
    await until('health to recover', async () => (await api(base, 'GET', '/healthz')).status === 200, 60_000);
    expect((await api(base, 'POST', '/v1/items', 'acme', { n: 1 })).status).toBe(201);
    admin = await pg.client(database);
  });
});
