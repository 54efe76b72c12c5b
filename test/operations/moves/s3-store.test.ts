import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { MoveConflictError, MoveRecord } from '../../../lib/operations/moves';
import { S3MoveStore } from '../../../lib/operations/moves/s3-store';
import { LocalS3, localS3Client, startLocalS3 } from '../../support/s3';
import { until } from '../../support/cells';

const record = (id: string, patch: Partial<MoveRecord> = {}): MoveRecord => ({
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
  ...patch,
});

/** Against s3rver behind the conditional-write layer that answers 412 as S3 does (test/support/s3). */
describe('S3MoveStore', () => {
  let s3: LocalS3;
  /** How far S3's clock is behind this machine's: a write made while it is 3 s dates its object 3 s back. */
  let behindMs = 0;
  beforeAll(async () => {
    s3 = await startLocalS3('moves-test', { now: () => Date.now() - behindMs });
  });
  afterAll(async () => {
    await s3.stop();
  });

  test('create once, replace only from the version read, list, audit entries in order', async () => {
    const store = new S3MoveStore(localS3Client(s3, 1), s3.bucket);
    const created = await store.create(record('m-s3-one'));
    await expect(store.create(record('m-s3-one'))).rejects.toThrow(MoveConflictError);
    const a = (await store.read('m-s3-one'))!;
    const b = (await store.read('m-s3-one'))!;
    expect(a.tag).toBe(created.tag);
    await store.replace({ ...a.record, completed: 'cloned' }, a.tag);
    await expect(store.replace({ ...b.record, completed: 'caught-up' }, b.tag)).rejects.toThrow(/only one operator may drive a move/);
    expect((await store.read('m-s3-one'))!.record.completed).toBe('cloned');
    expect(await store.read('m-s3-nope')).toBeUndefined();
    await store.create(record('m-s3-two'));
    expect((await store.list()).map((r) => r.id)).toEqual(['m-s3-one', 'm-s3-two']);
    for (const [i, event] of ['planned', 'run', 'delta'].entries())
      await store.appendAudit('m-s3-one', { at: `2026-11-30T00:00:0${i}.000Z`, actor: 'a', event });
    expect((await store.readAudit('m-s3-one')).map((e) => e.event)).toEqual(['planned', 'run', 'delta']);
    // The plan lock is held during the body and released after.
    // The second operator tries once the first holds the lock; the first lets go only once the
    // second has been refused (412 on its conditional create).
    const order: string[] = [];
    const refused = () => s3.requests.filter((r) => r.status === 412).length;
    const refusedBefore = refused();
    let firstIn!: () => void;
    const firstHolds = new Promise<void>((r) => (firstIn = r));
    await Promise.all([
      store.withPlanLock(async () => {
        order.push('first in');
        firstIn();
        await until('the second operator refused', async () => refused() > refusedBefore, 60_000);
        order.push('first out');
      }),
      firstHolds.then(() =>
        store.withPlanLock(async () => {
          order.push('second in');
        }),
      ),
    ]);
    expect(order).toEqual(['first in', 'first out', 'second in']);
  });

  test('a stale plan lock is deleted only if it is still the one judged stale (If-Match on its ETag)', async () => {
    const key = 'moves/.plan-lock';
    const direct = localS3Client(s3, 1);
    // A lock left by a killed operator 3 s ago: older than the stale limit below (2.5 s). S3's
    // Last-Modified has whole seconds, so a fresh lock can look up to a second older than it is:
    // B's lock (held for one request) stays well inside the limit.
    behindMs = 3000;
    await direct.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: '{"killed":true}' }));
    behindMs = 0;
    const order: string[] = [];
    let bIn!: () => void;
    const bHolds = new Promise<void>((r) => (bIn = r));
    // Operator B judges the same lock stale, removes it and takes the lock while A is about to delete it.
    const b = new S3MoveStore(localS3Client(s3, 1), s3.bucket, 'moves/', 2500);
    const racing = localS3Client(s3, 1);
    let raced = false;
    racing.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'DeleteObjectCommand' && !raced) {
          raced = true;
          // B lets go once A's delete met its lock (412): held no longer than that, B's own lock stays
          // far from looking stale, however slow this machine is.
          void b.withPlanLock(async () => {
            order.push('B in');
            bIn();
            await until("A's delete refused", async () => s3.requests.slice(before).some((r) => r.method === 'DELETE' && r.status === 412), 60_000);
            order.push('B out');
          });
          await bHolds;
        }
        return next(args);
      },
      { step: 'initialize', name: 'raceStaleLockDelete' },
    );
    const a = new S3MoveStore(racing, s3.bucket, 'moves/', 2500);
    const before = s3.requests.length;
    await a.withPlanLock(async () => {
      order.push('A in');
      // The lock now is A's own, not B's.
      const held = await direct.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
      expect(await held.Body!.transformToString()).toMatch(/"at"/);
    });
    // A's delete of the lock it judged stale met B's new lock: 412, nothing deleted, A waited for B.
    expect(order).toEqual(['B in', 'B out', 'A in']);
    expect(s3.requests.slice(before).filter((r) => r.method === 'DELETE' && r.status === 412)).toHaveLength(1);
    // Released with If-Match too: the lock is gone.
    await expect(direct.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
  });
});
