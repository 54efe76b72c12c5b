import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { runMoverTask } from '../../../lib/operations/moves/aws-task';
import { CellDatabase, PostgresCellData } from '../../../lib/operations/moves/cell-data';
import { systemClock } from '../../../lib/domain/moves/types';
import { parseMessage } from '../../../lib/runtime/workload/queue';
import { PostgresServer, sql, startPostgres } from './postgres-fixture';
import { MoveConflictError, MoveRecord } from '../../../lib/operations/moves';
import { S3HandoffStore } from '../../../lib/operations/moves/aws-handoff';
import { S3MoveStore } from '../../../lib/operations/moves/s3-store';
import { until } from '../../support/cells';
import { Moto, motoClientConfig, startMoto } from '../../support/moto';

const record = (id: string): MoveRecord => ({
  id,
  subject: { kind: 'tenant', tenant: 'acme' },
  source: 'cell-a',
  target: 'cell-b',
  bucketCount: 1024,
  reason: '',
  actor: 't',
  createdAt: '2026-11-30T00:00:00Z',
  status: 'active',
  completed: 'planned',
  watermark: '0',
  rounds: 0,
  rowsCopied: 0,
  mappingVersions: {},
  updatedAt: '2026-11-30T00:00:00Z',
});

/**
 * The moves' S3 state against moto, beside s3rver + our conditional-write layer
 * (test/operations/moves/s3-store.test.ts): records, the plan lock and its conditional delete, the hand-off lanes.
 */
describe('move state against moto (S3 emulator)', () => {
  let moto: Moto;
  let s3: S3Client;
  const BUCKET = 'orders-moves-test';
  beforeAll(async () => {
    moto = await startMoto();
    s3 = new S3Client({ ...motoClientConfig(moto), forcePathStyle: true });
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  });
  afterAll(async () => {
    s3?.destroy();
    await moto?.stop();
  });

  it('creates a record once, replaces it only from the version read, lists records and the audit in order', async () => {
    const store = new S3MoveStore(s3, BUCKET);
    await store.create(record('m-one'));
    await expect(store.create(record('m-one'))).rejects.toThrow(MoveConflictError);
    const [a, b] = [(await store.read('m-one'))!, (await store.read('m-one'))!];
    await store.replace({ ...a.record, completed: 'cloned' }, a.tag);
    await expect(store.replace({ ...b.record, completed: 'caught-up' }, b.tag)).rejects.toThrow(/only one operator may drive a move/);
    await store.create(record('m-two'));
    expect((await store.list()).map((r) => [r.id, r.completed])).toEqual([
      ['m-one', 'cloned'],
      ['m-two', 'planned'],
    ]);
    for (const [i, event] of ['planned', 'run', 'delta'].entries())
      await store.appendAudit('m-one', { at: `2026-11-30T00:00:0${i}.000Z`, actor: 'a', event });
    expect((await store.readAudit('m-one')).map((e) => e.event)).toEqual(['planned', 'run', 'delta']);
  });

  it('serializes two operators on the plan lock, and removes a stale lock only while it is the one judged stale', async () => {
    const store = new S3MoveStore(s3, BUCKET, 'moves/', 2500);
    const order: string[] = [];
    let firstIn!: () => void;
    const firstHolds = new Promise<void>((r) => (firstIn = r));
    let releaseFirst!: () => void;
    const firstMayGo = new Promise<void>((r) => (releaseFirst = r));
    // The second operator's client counts moto's 412 answers to its conditional create of the lock.
    const second = new S3Client({ ...motoClientConfig(moto), forcePathStyle: true });
    let refused = 0;
    second.middlewareStack.add(
      (next) => async (args) => {
        try {
          return await next(args);
        } catch (error) {
          if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 412) refused += 1;
          throw error;
        }
      },
      { step: 'initialize', name: 'count412' },
    );
    const both = Promise.all([
      store.withPlanLock(async () => {
        order.push('first in');
        firstIn();
        await firstMayGo;
        order.push('first out');
      }),
      firstHolds.then(() =>
        new S3MoveStore(second, BUCKET, 'moves/', 2500).withPlanLock(async () => {
          order.push('second in');
        }),
      ),
    ]);
    await firstHolds;
    // The second is refused (412 on its create) and waits while the first holds the lock.
    await until('the second operator refused', async () => refused > 0, 30_000);
    expect(order).toEqual(['first in']);
    releaseFirst();
    await both;
    second.destroy();
    expect(order).toEqual(['first in', 'first out', 'second in']);
    // A lock left by a killed operator is taken over once stale, and released after.
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'moves/.plan-lock', Body: '{"killed":true}' }));
    await new Promise((r) => setTimeout(r, 3600));
    let held = '';
    await store.withPlanLock(async () => {
      held = await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'moves/.plan-lock' }))).Body!.transformToString();
    });
    expect(held).toMatch(/"at"/);
    await expect(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'moves/.plan-lock' }))).rejects.toMatchObject({ name: 'NoSuchKey' });
  });

  it("keeps hand-off data in its lane (source and target account) and removes a move's data", async () => {
    const lane = { sourceAccount: '333333333331', targetAccount: '333333333332' };
    const handoff = new S3HandoffStore(s3, BUCKET, lane);
    await handoff.put('m-one/d1/orders.json', '{"rows":2}');
    await handoff.put('m-one/d1/lines.json', '{"rows":5}');
    expect(await handoff.get('m-one/d1/orders.json')).toBe('{"rows":2}');
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'handoff/' }));
    expect((listed.Contents ?? []).map((o) => o.Key).sort()).toEqual([
      'handoff/m-one/from=333333333331/to=333333333332/d1/lines.json',
      'handoff/m-one/from=333333333331/to=333333333332/d1/orders.json',
    ]);
    await handoff.remove('m-one/');
    expect((await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'handoff/' }))).KeyCount).toBe(0);
  });
});

/**
 * SQS work for moved tenants: SQS cannot hand one tenant's messages over, so after the flip the
 * target's mover re-sends the subject's pending work, derived from the rows the move copied (the
 * workload's cf_pending_work view), to the target's queue. Against a real PostgreSQL with the
 * reference workload's migrations and moto's SQS.
 */
describe("requeue: the subject's pending work re-sent to the target cell's SQS queue (moto SQS, PostgreSQL)", () => {
  let moto: Moto;
  let pg: PostgresServer;
  let db: CellDatabase;
  let s3: S3Client;
  let sqs: SQSClient;
  let queueUrl: string;
  const saved: Record<string, string | undefined> = {};
  beforeAll(async () => {
    [moto, pg] = await Promise.all([startMoto(), startPostgres()]);
    db = await pg.createDatabase('requeue');
    // The mover task's own SQS client takes its endpoint and region from the environment, as in ECS.
    for (const [k, v] of Object.entries({
      AWS_ENDPOINT_URL: moto.endpoint,
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'testing',
      AWS_SECRET_ACCESS_KEY: 'testing',
    })) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    s3 = new S3Client({ ...motoClientConfig(moto, 'eu-west-1'), forcePathStyle: true });
    sqs = new SQSClient(motoClientConfig(moto, 'eu-west-1'));
    await s3.send(new CreateBucketCommand({ Bucket: 'orders-moves-requeue', CreateBucketConfiguration: { LocationConstraint: 'eu-west-1' } }));
    queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'orders-eu-2-work' }))).QueueUrl!;
    // acme: 23 items, 8 processed; globex: 5 pending (another tenant, stays out).
    const rows = [
      ...Array.from({ length: 23 }, (_, i) => ['acme', `acme-${String(i).padStart(2, '0')}`, i < 8 ? 'processed' : 'pending']),
      ...Array.from({ length: 5 }, (_, i) => ['globex', `globex-${i}`, 'pending']),
    ];
    for (const [tenant, id, status] of rows)
      await sql(db, "insert into items (id, tenant_id, data, status) values ($1, $2, '{}', $3)", [id, tenant, status]);
  }, 120_000);
  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    s3?.destroy();
    sqs?.destroy();
    await Promise.all([moto?.stop(), pg?.stop()]);
  });

  const receiveAll = async () => {
    const bodies: string[] = [];
    for (;;) {
      const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
      if (!Messages?.length) return bodies;
      for (const m of Messages) {
        bodies.push(m.Body!);
        await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
      }
    }
  };

  it("lists exactly the subject's unfinished items as the messages the workload sends for them", async () => {
    const cell = new PostgresCellData('eu-2', db, { bucketCount: 1024, batchRows: 100, clock: systemClock });
    try {
      const bodies = (await cell.pendingWork({ kind: 'tenant', tenant: 'acme' })).map((b) => JSON.parse(b));
      expect(bodies.map((b) => b.itemId).sort()).toEqual(Array.from({ length: 15 }, (_, i) => `acme-${String(i + 8).padStart(2, '0')}`));
      // The same shape the workload's own sender writes, so its worker handles them unchanged.
      for (const b of bodies) expect(parseMessage(JSON.stringify(b))).toEqual({ kind: 'item.created', tenantId: 'acme', itemId: b.itemId });
    } finally {
      await cell.close();
    }
  });

  it("sends them to the cell's queue from the mover task (batches of 10), and again when the step is repeated", async () => {
    const run = async (id: string) => {
      await s3.send(
        new PutObjectCommand({
          Bucket: 'orders-moves-requeue',
          Key: `tasks/333333333332/${id}/request.json`,
          Body: JSON.stringify({
            op: 'requeue',
            args: { subject: { kind: 'tenant', tenant: 'acme' } },
            cell: 'eu-2',
            bucketCount: 1024,
            batchRows: 100,
          }),
        }),
      );
      const exit = await runMoverTask(
        {
          CELL_ID: 'eu-2',
          DB_HOST: db.host,
          DB_PORT: String(db.port),
          DB_NAME: db.database,
          DB_USER: db.user,
          DB_PASSWORD: db.password,
          MOVE_BUCKET: 'orders-moves-requeue',
          MOVE_BUCKET_REGION: 'eu-west-1',
          MOVE_REQUEST_KEY: `tasks/333333333332/${id}/request.json`,
          MOVE_RESULT_KEY: `tasks/333333333332/${id}/result.json`,
          QUEUE_URL: queueUrl,
        },
        { s3: () => s3, secret: async () => '{}', clock: systemClock, log: () => undefined },
      );
      const result = JSON.parse(
        await (
          await s3.send(new GetObjectCommand({ Bucket: 'orders-moves-requeue', Key: `tasks/333333333332/${id}/result.json` }))
        ).Body!.transformToString(),
      );
      return { exit, result };
    };
    expect(await run('r1')).toEqual({ exit: 0, result: { ok: true, value: 15 } });
    const first = (await receiveAll()).map((b) => JSON.parse(b).itemId).sort();
    expect(first).toEqual(Array.from({ length: 15 }, (_, i) => `acme-${String(i + 8).padStart(2, '0')}`));
    // A resumed flip step sends them again; the workload's handler only moves pending items to processed.
    expect(await run('r2')).toEqual({ exit: 0, result: { ok: true, value: 15 } });
    expect((await receiveAll()).length).toBe(15);
  });

  it("fails the step, saying what is missing, for a mover without the cell's queue", async () => {
    await s3.send(
      new PutObjectCommand({
        Bucket: 'orders-moves-requeue',
        Key: 'tasks/333333333332/r3/request.json',
        Body: JSON.stringify({
          op: 'requeue',
          args: { subject: { kind: 'tenant', tenant: 'acme' } },
          cell: 'eu-2',
          bucketCount: 1024,
          batchRows: 100,
        }),
      }),
    );
    const exit = await runMoverTask(
      {
        CELL_ID: 'eu-2',
        DB_HOST: db.host,
        DB_PORT: String(db.port),
        DB_NAME: db.database,
        DB_USER: db.user,
        DB_PASSWORD: db.password,
        MOVE_BUCKET: 'orders-moves-requeue',
        MOVE_BUCKET_REGION: 'eu-west-1',
        MOVE_REQUEST_KEY: 'tasks/333333333332/r3/request.json',
        MOVE_RESULT_KEY: 'tasks/333333333332/r3/result.json',
      },
      { s3: () => s3, secret: async () => '{}', clock: systemClock, log: () => undefined },
    );
    expect(exit).toBe(1);
    const result = JSON.parse(
      await (
        await s3.send(new GetObjectCommand({ Bucket: 'orders-moves-requeue', Key: 'tasks/333333333332/r3/result.json' }))
      ).Body!.transformToString(),
    );
    expect(result.error).toMatch(/this cell's data has no work queue \(QUEUE_URL\)/);
  });
});
