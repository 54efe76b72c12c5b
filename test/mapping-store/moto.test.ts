import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, PutBucketVersioningCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { addCell, MappingDocument, pinKey } from '../../lib/mapping';
import {
  ConcurrentWriteError, groupKey, mappingHistory, MappingStore, publishMapping, rollbackMapping, statusOf, versionKey,
} from '../../lib/mapping-store';
import { NOW, sampleMapping } from '../support/mapping';
import { Moto, motoClientConfig, startMoto } from '../support/moto';

const GROUPS = ['canary', 'main', 'tail'];

/**
 * The mapping store's publish, rollback and history against moto, an emulator of S3 written apart
 * from this project (the other implementation the store is tested against is s3rver behind our own
 * conditional-write layer, test/mapping-store/publish.test.ts). Each region's bucket is versioned,
 * as MappingBucket makes it.
 */
describe('the mapping store against moto (S3 emulator)', () => {
  let moto: Moto;
  let client: S3Client;
  beforeAll(async () => {
    moto = await startMoto();
    client = new S3Client({ ...motoClientConfig(moto), forcePathStyle: true });
  });
  afterAll(async () => {
    client?.destroy();
    await moto?.stop();
  });

  let store: MappingStore;
  let v1: MappingDocument;
  beforeEach(async () => {
    await moto.reset();
    for (const bucket of ['mappings-eu', 'mappings-us']) {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      await client.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    }
    store = new MappingStore(client, 'mappings-eu');
    v1 = sampleMapping(4);
  });

  it('publishes the version, then every group in order, and reads back exactly what it wrote', async () => {
    const result = await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    expect(result.groups.map((g) => g.status)).toEqual(['published', 'published', 'published']);
    expect(await store.versions()).toEqual([1]);
    for (const group of GROUPS) expect((await store.readGroup(group))!.document).toEqual(v1);
    const stored = await client.send(new GetObjectCommand({ Bucket: 'mappings-eu', Key: versionKey(1) }));
    expect(stored.ContentType).toBe('application/json');
  });

  it('creates only what does not exist (If-None-Match: *) and replaces only the object it read (If-Match: ETag)', async () => {
    await store.put('scratch/once.json', '{}');
    await expect(store.put('scratch/once.json', '{"x":1}')).rejects.toThrow(ConcurrentWriteError);
    expect(await (await client.send(new GetObjectCommand({ Bucket: 'mappings-eu', Key: 'scratch/once.json' }))).Body!.transformToString()).toBe('{}');
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    const read = (await store.readGroup('canary'))!;
    // Someone else replaces the pointer after our read: our write on the old ETag is refused.
    await client.send(new PutObjectCommand({ Bucket: 'mappings-eu', Key: groupKey('canary'), Body: read.text + ' ' }));
    await expect(store.put(groupKey('canary'), read.text, read.etag)).rejects.toThrow(ConcurrentWriteError);
    const error = await client.send(new PutObjectCommand({ Bucket: 'mappings-eu', Key: groupKey('canary'), Body: '{}', IfMatch: read.etag })).catch((e) => e);
    expect(statusOf(error)).toBe(412);
    // With the current ETag it goes through.
    const current = (await store.readGroup('canary'))!;
    await store.put(groupKey('canary'), read.text, current.etag);
    // Deleted since it was read: moto answers 404 NoSuchKey (our s3rver layer 412); both are a concurrent change.
    await client.send(new DeleteObjectCommand({ Bucket: 'mappings-eu', Key: groupKey('main') }));
    const gone = await client.send(new PutObjectCommand({ Bucket: 'mappings-eu', Key: groupKey('main'), Body: '{}', IfMatch: current.etag })).catch((e) => e);
    expect(statusOf(gone)).toBe(404);
    await expect(store.put(groupKey('main'), read.text, current.etag)).rejects.toThrow(ConcurrentWriteError);
  });

  it('fails clearly when another operator writes a group pointer between our read and our write', async () => {
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    const mine = pinKey(v1, 'tenant-1', 'cell-1', NOW);
    const theirs = { ...pinKey(v1, 'tenant-9', 'cell-3', NOW), version: 3 };
    class RacingStore extends MappingStore {
      private raced = false;
      public override async put(key: string, text: string, expected?: string): Promise<void> {
        if (!this.raced && key === groupKey('canary')) {
          this.raced = true;
          await new MappingStore(client, 'mappings-eu').put(key, JSON.stringify(theirs), expected);
        }
        return super.put(key, text, expected);
      }
    }
    await expect(publishMapping(new RacingStore(client, 'mappings-eu'), mine, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(ConcurrentWriteError);
    expect((await store.readGroup('canary'))!.document.version).toBe(3);
    expect((await store.readGroup('main'))!.document.version).toBe(1);
  });

  it('resumes an interrupted publish and refuses an older or conflicting version', async () => {
    await publishMapping(store, v1, { groups: GROUPS, onlyGroup: 'canary', bakeSeconds: 0 });
    const resumed = await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    expect(resumed.versionObject).toBe('already-present');
    expect(resumed.groups.map((g) => `${g.group}:${g.status}`)).toEqual(['canary:already-current', 'main:published', 'tail:published']);
    const v2 = pinKey(v1, 'tenant-1', 'cell-1', NOW);
    await publishMapping(store, v2, { groups: GROUPS, bakeSeconds: 0 });
    await expect(publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(/group `canary` is at version 2; version 1 is older/);
    await expect(publishMapping(store, pinKey(v1, 'tenant-2', 'cell-2', NOW), { groups: GROUPS, bakeSeconds: 0 }))
      .rejects.toThrow(/version 2 is already published with different content; publish version 3 instead/);
  });

  it('rolls back by publishing the previous content as a new version, and shows it in the history', async () => {
    const v2 = addCell(v1, { id: 'cell-5', endpoint: 'http://127.0.0.1:9005' }, NOW);
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    await publishMapping(store, v2, { groups: GROUPS, bakeSeconds: 0 });
    const result = await rollbackMapping(store, { groups: GROUPS, bakeSeconds: 0, now: '2026-11-29T17:00:00.000Z' });
    expect(result).toMatchObject({ restoredFrom: 1, version: 3 });
    for (const group of GROUPS) expect({ ...(await store.readGroup(group))!.document, version: 1, createdAt: v1.createdAt }).toEqual(v1);
    expect((await mappingHistory(store, [...GROUPS, 'not-yet-deployed'])).map((h) => [h.version, h.groups])).toEqual([[3, GROUPS], [2, []], [1, []]]);
  });

  it('writes every region, checking every region before writing anything', async () => {
    const us = new MappingStore(client, 'mappings-us');
    await publishMapping([store, us], v1, { groups: GROUPS, bakeSeconds: 0 });
    for (const s of [store, us]) for (const group of GROUPS) expect((await s.readGroup(group))!.document.version).toBe(1);
    const v2 = pinKey(v1, 'tenant-1', 'cell-1', NOW);
    await publishMapping(us, { ...pinKey(v2, 'tenant-2', 'cell-2', NOW), version: 3 }, { groups: GROUPS, bakeSeconds: 0 });
    await expect(publishMapping([store, us], v2, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(/group `canary` in s3:\/\/mappings-us is at version 3; version 2 is older/);
    expect(await store.readVersion(2)).toBeUndefined();
  });

  it('names the bucket when it does not exist', async () => {
    await expect(publishMapping(new MappingStore(client, 'no-such-bucket'), v1, { groups: GROUPS, bakeSeconds: 0 }))
      .rejects.toThrow(/s3:\/\/no-such-bucket\/\S* failed: NoSuchBucket 404 \(no such bucket: check --bucket or router.mappingBucket\)/);
  });
});
