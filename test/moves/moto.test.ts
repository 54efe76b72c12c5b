import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { MoveConflictError, MoveRecord } from '../../lib/moves';
import { S3HandoffStore } from '../../lib/moves/aws-handoff';
import { S3MoveStore } from '../../lib/moves/s3-store';
import { until } from '../support/cells';
import { Moto, motoClientConfig, startMoto } from '../support/moto';

const record = (id: string): MoveRecord => ({
  id, subject: { kind: 'tenant', tenant: 'acme' }, source: 'cell-a', target: 'cell-b', bucketCount: 1024, reason: '', actor: 't',
  createdAt: '2026-11-30T00:00:00Z', status: 'active', completed: 'planned', watermark: '0', rounds: 0, rowsCopied: 0,
  mappingVersions: {}, updatedAt: '2026-11-30T00:00:00Z',
});

/**
 * The moves' S3 state against moto, beside s3rver + our conditional-write layer
 * (test/moves/s3-store.test.ts): records, the plan lock and its conditional delete, the hand-off lanes.
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
    expect((await store.list()).map((r) => [r.id, r.completed])).toEqual([['m-one', 'cloned'], ['m-two', 'planned']]);
    for (const [i, event] of ['planned', 'run', 'delta'].entries()) await store.appendAudit('m-one', { at: `2026-11-30T00:00:0${i}.000Z`, actor: 'a', event });
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
    second.middlewareStack.add((next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 412) refused += 1;
        throw error;
      }
    }, { step: 'initialize', name: 'count412' });
    const both = Promise.all([
      store.withPlanLock(async () => { order.push('first in'); firstIn(); await firstMayGo; order.push('first out'); }),
      firstHolds.then(() => new S3MoveStore(second, BUCKET, 'moves/', 2500).withPlanLock(async () => { order.push('second in'); })),
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

  it('keeps hand-off data in its lane (source and target account) and removes a move\'s data', async () => {
    const lane = { sourceAccount: '333333333331', targetAccount: '333333333332' };
    const handoff = new S3HandoffStore(s3, BUCKET, lane);
    await handoff.put('m-one/d1/orders.json', '{"rows":2}');
    await handoff.put('m-one/d1/lines.json', '{"rows":5}');
    expect(await handoff.get('m-one/d1/orders.json')).toBe('{"rows":2}');
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'handoff/' }));
    expect((listed.Contents ?? []).map((o) => o.Key).sort()).toEqual([
      'handoff/m-one/from=333333333331/to=333333333332/d1/lines.json', 'handoff/m-one/from=333333333331/to=333333333332/d1/orders.json',
    ]);
    await handoff.remove('m-one/');
    expect((await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'handoff/' }))).KeyCount).toBe(0);
  });
});
