import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutBucketVersioningCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { addCell, MappingDocument, pinKey } from '../../../lib/domain/mapping';
import {
  ConcurrentWriteError,
  groupKey,
  mappingHistory,
  MappingStore,
  MAX_VERSION_STEP,
  PREVIOUS_IN_FORCE,
  PublishRefusedError,
  publishMapping,
  rollbackMapping,
  serializeMapping,
  statusOf,
  StoreError,
  versionKey,
} from '../../../lib/adapters/mapping-store';
import { NOW, sampleMapping } from '../../support/mapping';
import { Moto, motoClientConfig, startMoto } from '../../support/moto';
import { LocalS3, localS3Client, startLocalS3 } from '../../support/s3';

const GROUPS = ['canary', 'main', 'tail'];
const REGIONS = ['mappings-eu', 'mappings-us'] as const;

/** Two regions' mapping buckets on one S3 implementation. */
interface Buckets {
  /** The client and bucket of region `i` (0: eu, 1: us). */
  region(i: 0 | 1): { readonly client: S3Client; readonly bucket: string };
  /** Empties both buckets. */
  reset(): Promise<void>;
  stop(): Promise<void>;
  /** What a conditional write (If-Match) of a key deleted since it was read answers. */
  readonly deletedSinceRead: number;
}

/**
 * The mapping store is tested against two S3 implementations: the project's stand-in (s3rver behind
 * its conditional-write layer, test/support/s3.ts, which also injects faults and answers as a role
 * with a narrow s3:ListBucket does) and moto, an S3 emulator written apart from this project, with
 * each region's bucket versioned as MappingBucket makes it.
 */
const BACKENDS: readonly [string, () => Promise<Buckets>][] = [
  [
    'the stand-in (s3rver)',
    async () => {
      const servers = await Promise.all(REGIONS.map((bucket) => startLocalS3(bucket)));
      const clients = servers.map((s) => localS3Client(s, 1));
      return {
        region: (i) => ({ client: clients[i], bucket: servers[i].bucket }),
        reset: async () => {
          for (const [i, s] of servers.entries()) {
            s.fault(undefined);
            s.listPermission(undefined);
            const listed = await clients[i].send(new ListObjectsV2Command({ Bucket: s.bucket }));
            for (const object of listed.Contents ?? []) await clients[i].send(new DeleteObjectCommand({ Bucket: s.bucket, Key: object.Key }));
          }
        },
        stop: async () => {
          for (const c of clients) c.destroy();
          await Promise.all(servers.map((s) => s.stop()));
        },
        deletedSinceRead: 412,
      };
    },
  ],
  [
    'moto',
    async () => {
      const moto: Moto = await startMoto();
      const client = new S3Client({ ...motoClientConfig(moto), forcePathStyle: true });
      return {
        region: (i) => ({ client, bucket: REGIONS[i] }),
        reset: async () => {
          await moto.reset();
          for (const bucket of REGIONS) {
            await client.send(new CreateBucketCommand({ Bucket: bucket }));
            await client.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
          }
        },
        stop: async () => {
          client.destroy();
          await moto.stop();
        },
        // moto answers 404 NoSuchKey, the stand-in 412: both are a concurrent change to the store.
        deletedSinceRead: 404,
      };
    },
  ],
];

describe.each(BACKENDS)('publishing to %s', (_name, start) => {
  let backend: Buckets;
  let client: S3Client;
  let bucket: string;
  beforeAll(async () => {
    backend = await start();
    ({ client, bucket } = backend.region(0));
  });
  afterAll(async () => {
    await backend?.stop();
  });

  let store: MappingStore;
  let v1: MappingDocument;
  beforeEach(async () => {
    // Each test starts from empty buckets.
    await backend.reset();
    store = new MappingStore(client, bucket);
    v1 = sampleMapping(4);
  });

  it('writes the immutable version, then every group in order, baking after the first, and reads back exactly what it wrote', async () => {
    const events: string[] = [];
    const result = await publishMapping(store, v1, {
      groups: GROUPS,
      bakeSeconds: 7,
      sleep: async (ms) => {
        events.push(`sleep ${ms}`);
      },
      progress: (line) => events.push(line),
    });
    expect(result.groups.map((g) => g.status)).toEqual(['published', 'published', 'published']);
    expect(events).toEqual([
      'checking 3 router group(s) before writing anything',
      'wrote mappings/v1.json',
      'group canary (1/3): v- -> v1',
      'baking 7s on group canary before the other groups',
      'sleep 7000',
      'group main (2/3): v- -> v1',
      'group tail (3/3): v- -> v1',
    ]);
    expect(await store.versions()).toEqual([1]);
    for (const group of GROUPS) expect((await store.readGroup(group))!.document).toEqual(v1);
    const stored = await client.send(new GetObjectCommand({ Bucket: bucket, Key: versionKey(1) }));
    expect(stored.ContentType).toBe('application/json');
  });

  it('says how long a long bake has left, every half minute', async () => {
    const events: string[] = [];
    await publishMapping(store, v1, {
      groups: GROUPS,
      bakeSeconds: 75,
      sleep: async (ms) => {
        events.push(`sleep ${ms}`);
      },
      progress: (line) => events.push(line),
    });
    expect(events.slice(events.indexOf('baking 75s on group canary before the other groups'), events.indexOf('group main (2/3): v- -> v1'))).toEqual([
      'baking 75s on group canary before the other groups',
      'sleep 30000',
      'baking on group canary: 45s left',
      'sleep 30000',
      'baking on group canary: 15s left',
      'sleep 15000',
    ]);
  });

  it('publishes to one group only with onlyGroup', async () => {
    await publishMapping(store, v1, { groups: GROUPS, onlyGroup: 'canary', bakeSeconds: 0 });
    expect(await store.readGroup('canary')).toBeDefined();
    expect(await store.readGroup('main')).toBeUndefined();
    await expect(publishMapping(store, v1, { groups: GROUPS, onlyGroup: 'nope', bakeSeconds: 0 })).rejects.toThrow(/no router group `nope`/);
  });

  it('refuses a version that is not greater than the current one, and a document made from a version no longer in force', async () => {
    const v2 = pinKey(v1, 'tenant-1', 'cell-1', NOW);
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    await publishMapping(store, v2, { groups: GROUPS, bakeSeconds: 0 });
    await expect(publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(/group `canary` is at version 2; version 1 is older/);
    // A second operator's change, also made from v1: not "publish version 3 instead", which would undo the first's.
    const other = { ...pinKey(v1, 'tenant-2', 'cell-2', NOW) };
    await expect(publishMapping(store, other, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(
      /^version 2 is already published with different content: someone published since this document was made; make the change again on the document in force \(cellctl mapping pull --out FILE\), which numbers it 3$/,
    );
    expect(await store.versions()).toEqual([1, 2]);
  });

  it('refuses a version far past the newest (no jump ahead to 2^52), and anything but 1 into an empty bucket; a few changes at once pass', async () => {
    await expect(publishMapping(store, { ...v1, version: 2 }, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(
      /^version 2 into an empty bucket: the first published version is 1/,
    );
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    for (const version of [2 + MAX_VERSION_STEP, 2 ** 52 - 1])
      await expect(publishMapping(store, { ...pinKey(v1, 'tenant-1', 'cell-1', NOW), version }, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(
        `version ${version} is more than ${MAX_VERSION_STEP} past the newest published version 1`,
      );
    expect(await store.versions()).toEqual([1]);
    // Two changes made one after the other, published together.
    await publishMapping(store, pinKey(pinKey(v1, 'tenant-1', 'cell-1', NOW), 'tenant-2', 'cell-2', NOW), { groups: GROUPS, bakeSeconds: 0 });
    expect(await store.versions()).toEqual([1, 3]);
  });

  it("applies the caller's guard against the document in force, writing nothing when it refuses", async () => {
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    const v2 = pinKey(v1, 'tenant-1', 'cell-1', NOW);
    const seen: [number, number][] = [];
    const guard = (inForce: MappingDocument, next: MappingDocument) => {
      seen.push([inForce.version, next.version]);
      return ['re-routes 1 pinned key(s) (tenant-1) to other cells without their data'];
    };
    await expect(publishMapping(store, v2, { groups: GROUPS, bakeSeconds: 0, guard })).rejects.toThrow(
      /^going from version 1 \(in force in group `canary`\) to 2 is refused; nothing written:\n {2}- re-routes 1 pinned key/,
    );
    expect(seen).toEqual([[1, 2]]);
    expect(await store.versions()).toEqual([1]);
    await publishMapping(store, v2, { groups: GROUPS, bakeSeconds: 0, guard: () => [] });
    expect((await store.readGroup('tail'))!.document.version).toBe(2);
  });

  it('refuses, writing nothing, a change that needs more backend slots than the routers have', async () => {
    const n = Object.keys(v1.cells).length;
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0, routerSlots: n });
    const v2 = addCell(v1, { id: 'cell-new', endpoint: 'https://cell-new.example' }, NOW);
    await expect(publishMapping(store, v2, { groups: GROUPS, bakeSeconds: 0, routerSlots: n })).rejects.toThrow(
      new RegExp(`group \`canary\`: going to version 2 needs ${n + 1} backend slots at once .* routers have ${n} \\(router.slots\\)`),
    );
    expect(await store.versions()).toEqual([1]);
    expect((await store.readGroup('canary'))!.document.version).toBe(1);
    await publishMapping(store, v2, { groups: GROUPS, bakeSeconds: 0, routerSlots: n + 1 });
    expect((await store.readGroup('tail'))!.document.version).toBe(2);
  });

  it('resumes an interrupted publish: the version object is reused, finished groups are skipped', async () => {
    await publishMapping(store, v1, { groups: GROUPS, onlyGroup: 'canary', bakeSeconds: 0 });
    const result = await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    expect(result.versionObject).toBe('already-present');
    expect(result.groups.map((g) => `${g.group}:${g.status}`)).toEqual(['canary:already-current', 'main:published', 'tail:published']);
  });

  it('fails clearly when another operator writes a group pointer concurrently', async () => {
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    const mine = pinKey(v1, 'tenant-1', 'cell-1', NOW);
    const theirs = { ...pinKey(v1, 'tenant-9', 'cell-3', NOW), version: 3 };
    // The other operator writes the canary pointer between our read and our conditional write.
    class RacingStore extends MappingStore {
      private raced = false;
      public override async put(key: string, text: string, expected?: string): Promise<void> {
        if (!this.raced && key === groupKey('canary')) {
          this.raced = true;
          await new MappingStore(client, bucket).put(key, JSON.stringify(theirs), expected);
        }
        return super.put(key, text, expected);
      }
    }
    await expect(publishMapping(new RacingStore(client, bucket), mine, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(ConcurrentWriteError);
    expect((await store.readGroup('canary'))!.document.version).toBe(3);
    expect((await store.readGroup('main'))!.document.version).toBe(1);
  });

  it('rolls back by publishing the previous content as a new version, group by group', async () => {
    const v2 = addCell(v1, { id: 'cell-5', endpoint: 'http://127.0.0.1:9005' }, NOW);
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    await publishMapping(store, v2, { groups: GROUPS, bakeSeconds: 0 });
    const sleeps: number[] = [];
    const result = await rollbackMapping(store, {
      groups: GROUPS,
      bakeSeconds: 3,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      now: '2026-11-29T17:00:00.000Z',
    });
    expect(result).toMatchObject({ restoredFrom: 1, version: 3 });
    expect(sleeps).toEqual([3000]);
    for (const group of GROUPS) {
      const doc = (await store.readGroup(group))!.document;
      expect(doc.version).toBe(3);
      expect({ ...doc, version: 1, createdAt: v1.createdAt }).toEqual(v1);
    }
    const history = await mappingHistory(store, [...GROUPS, 'not-yet-deployed']);
    expect(history.map((h) => [h.version, h.groups])).toEqual([
      [3, GROUPS],
      [2, []],
      [1, []],
    ]);
  });

  it('rolls back to the version that was in force, never to one written and never in force (an interrupted publish)', async () => {
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    // An interrupted publish: its version object is written, no pointer reached it.
    const never = pinKey(v1, 'tenant-7', 'cell-2', NOW);
    await store.put(versionKey(2), serializeMapping(never));
    const v3 = { ...pinKey(v1, 'tenant-8', 'cell-3', NOW), version: 3 };
    await publishMapping(store, v3, { groups: GROUPS, bakeSeconds: 0 });
    expect(await store.versionMetadata(3)).toEqual({ [PREVIOUS_IN_FORCE]: '1' });
    const progress: string[] = [];
    const result = await rollbackMapping(store, { groups: GROUPS, bakeSeconds: 0, now: NOW.now, progress: (l) => progress.push(l) });
    expect(result).toMatchObject({ restoredFrom: 1, version: 4 });
    expect((await store.readGroup('canary'))!.document.overrides.exact).toEqual(v1.overrides.exact);
    // Undo of the undo: v4 records v3 as the one before it.
    expect(await store.versionMetadata(4)).toEqual({ [PREVIOUS_IN_FORCE]: '3' });
    expect(progress.some((l) => l.includes('carries no record'))).toBe(false);
  });

  it('rolls back a version published before the record existed to the newest version below it, and says so', async () => {
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    const v2 = pinKey(v1, 'tenant-1', 'cell-1', NOW);
    await store.put(versionKey(2), serializeMapping(v2));
    for (const group of GROUPS) await store.put(groupKey(group), serializeMapping(v2), (await store.readGroup(group))!.etag);
    const progress: string[] = [];
    const result = await rollbackMapping(store, { groups: GROUPS, bakeSeconds: 0, now: NOW.now, progress: (l) => progress.push(l) });
    expect(result.restoredFrom).toBe(1);
    expect(progress).toContain(
      'v2 carries no record of the version in force before it (published before that was recorded): restoring the newest version below it, v1',
    );
  });

  it('has nothing to roll back before two versions exist', async () => {
    await expect(rollbackMapping(store, { groups: GROUPS, bakeSeconds: 0, now: NOW.now })).rejects.toThrow(/has no mapping yet/);
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    await expect(rollbackMapping(store, { groups: GROUPS, bakeSeconds: 0, now: NOW.now })).rejects.toThrow(/first published version/);
  });

  it('refuses to publish an invalid document', async () => {
    const broken = { ...v1, buckets: v1.buckets.slice(1) };
    await expect(publishMapping(store, broken, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(PublishRefusedError);
    expect(await store.versions()).toEqual([]);
  });

  it.each([
    [
      "another bucket count than the fleet's",
      (d: MappingDocument) => ({ ...d, bucketCount: 65536, buckets: [{ from: 0, to: 65535, cell: d.buckets[0].cell }] }),
      /\$\.bucketCount: 65536, but the fleet's routers hash keys into 16384 buckets/,
    ],
    [
      'a version no later version can follow',
      (d: MappingDocument) => ({ ...d, version: 1e308 }),
      /\$\.version: 1e\+308 is 2\^52 \(4503599627370496\) or more/,
    ],
    [
      'two cells on one endpoint',
      (d: MappingDocument) => {
        const [a, b] = Object.keys(d.cells);
        return { ...d, cells: { ...d.cells, [b]: { ...d.cells[b], endpoint: d.cells[a].endpoint } } };
      },
      /endpoint too: one cell's tenants would be answered by the other/,
    ],
  ])('refuses, writing nothing, a document with %s, in one line', async (_name, make, message) => {
    const error = await publishMapping(store, make(v1), { groups: GROUPS, bakeSeconds: 0, bucketCount: 16384 }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(PublishRefusedError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('\n');
    expect(await store.versions()).toEqual([]);
  });

  it('creates only what does not exist (If-None-Match: *) and replaces only the object it read (If-Match: ETag)', async () => {
    await store.put('scratch/once.json', '{}');
    await expect(store.put('scratch/once.json', '{"x":1}')).rejects.toThrow(ConcurrentWriteError);
    expect(await (await client.send(new GetObjectCommand({ Bucket: bucket, Key: 'scratch/once.json' }))).Body!.transformToString()).toBe('{}');
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    const read = (await store.readGroup('canary'))!;
    // Someone else replaces the pointer after our read: our write on the old ETag is refused.
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: groupKey('canary'), Body: read.text + ' ' }));
    await expect(store.put(groupKey('canary'), read.text, read.etag)).rejects.toThrow(ConcurrentWriteError);
    const error = await client
      .send(new PutObjectCommand({ Bucket: bucket, Key: groupKey('canary'), Body: '{}', IfMatch: read.etag }))
      .catch((e) => e);
    expect(statusOf(error)).toBe(412);
    // With the current ETag it goes through.
    const current = (await store.readGroup('canary'))!;
    await store.put(groupKey('canary'), read.text, current.etag);
    // Deleted since it was read: a concurrent change too, whatever the status says.
    await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: groupKey('main') }));
    const gone = await client
      .send(new PutObjectCommand({ Bucket: bucket, Key: groupKey('main'), Body: '{}', IfMatch: current.etag }))
      .catch((e) => e);
    expect(statusOf(gone)).toBe(backend.deletedSinceRead);
    await expect(store.put(groupKey('main'), read.text, current.etag)).rejects.toThrow(ConcurrentWriteError);
  });

  it('names the bucket when it does not exist', async () => {
    await expect(publishMapping(new MappingStore(client, 'no-such-bucket'), v1, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(
      /s3:\/\/no-such-bucket\/\S* failed: NoSuchBucket 404 \(no such bucket: check --bucket or router.mappingBucket\)/,
    );
  });

  it('writes the version and each group pointer in every region, checks every region before writing, and resumes', async () => {
    const [euStore, usStore] = ([0, 1] as const).map((i) => new MappingStore(backend.region(i).client, backend.region(i).bucket));
    const events: string[] = [];
    const result = await publishMapping([euStore, usStore], v1, {
      groups: GROUPS,
      bakeSeconds: 5,
      sleep: async (ms) => {
        events.push(`sleep ${ms}`);
      },
      progress: (l) => events.push(l),
    });
    expect(result.groups.map((g) => g.status)).toEqual(['published', 'published', 'published']);
    for (const s of [euStore, usStore]) {
      expect((await s.readVersion(1))?.document.version).toBe(1);
      for (const group of GROUPS) expect((await s.readGroup(group))?.document.version).toBe(1);
    }
    // The canary group goes everywhere before the bake; the other groups after it.
    expect(events.indexOf('group canary (1/3) in s3://mappings-us: v- -> v1')).toBeLessThan(events.indexOf('sleep 5000'));
    expect(events.indexOf('sleep 5000')).toBeLessThan(events.indexOf('group main (2/3) in s3://mappings-eu: v- -> v1'));

    // One region ahead (say, an operator published there only): nothing is written anywhere.
    const v2 = pinKey(v1, 'tenant-1', Object.keys(v1.cells)[1], NOW);
    const theirs = pinKey(v1, 'tenant-2', Object.keys(v1.cells)[1], NOW);
    await publishMapping(usStore, theirs, { groups: GROUPS, bakeSeconds: 0 });
    await publishMapping(usStore, { ...pinKey(theirs, 'tenant-3', Object.keys(v1.cells)[1], NOW), version: 3 }, { groups: GROUPS, bakeSeconds: 0 });
    await expect(publishMapping([euStore, usStore], v2, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(
      /group `canary` in s3:\/\/mappings-us is at version 3; version 2 is older/,
    );
    expect(await euStore.readVersion(2)).toBeUndefined();

    // A region that missed a publish (say, a new region seeded with v1) catches up; the other is skipped.
    const v4 = { ...v2, version: 4 };
    await publishMapping(usStore, v4, { groups: GROUPS, bakeSeconds: 0 });
    const resumed = await publishMapping([euStore, usStore], v4, { groups: GROUPS, bakeSeconds: 0 });
    expect(resumed.groups.map((g) => [g.group, g.previousVersion, g.status])).toEqual(GROUPS.map((g) => [g, 1, 'published']));
    for (const group of GROUPS) expect((await euStore.readGroup(group))?.document.version).toBe(4);
  });
});

/** What only the stand-in can do: show the requests it saw, inject faults, answer as a narrow role. */
describe('publishing to the stand-in, as S3 answers in ways moto does not show', () => {
  let s3: LocalS3;
  let client: S3Client;
  beforeAll(async () => {
    s3 = await startLocalS3();
    client = localS3Client(s3, 1);
  });
  afterAll(async () => {
    client.destroy();
    await s3.stop();
  });

  let store: MappingStore;
  let v1: MappingDocument;
  beforeEach(async () => {
    s3.fault(undefined);
    s3.listPermission(undefined);
    store = new MappingStore(client, s3.bucket);
    const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
    for (const object of listed.Contents ?? []) await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: object.Key }));
    v1 = sampleMapping(4);
  });

  it('writes the version object before the group pointers, in group order', async () => {
    await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
    const puts = s3.requests.filter((r) => r.method === 'PUT' && r.status === 200).map((r) => r.path.split('?')[0]);
    expect(puts.slice(-4)).toEqual([`/${s3.bucket}/${versionKey(1)}`, ...GROUPS.map((g) => `/${s3.bucket}/${groupKey(g)}`)]);
  });

  it('names the bucket and the permission on access denied', async () => {
    s3.fault({ status: 403, code: 'AccessDenied' });
    await expect(publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(StoreError);
    await expect(publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(
      /s3:\/\/test-mappings\/groups\/canary\/mapping.json failed: .*403 \(access denied: the publisher role \(s3:GetObject, s3:PutObject, s3:ListBucket on mappings\/\*, groups\/\* and lanes\/\*\)/,
    );
  });

  describe('as S3 answers the publisher role, which may list mappings/ and groups/ only', () => {
    // The publisher's grant (MappingBucket): s3:ListBucket conditioned on s3:prefix. S3 decides 404
    // or 403 for a missing key without a prefix, so the publisher gets 403 for every missing key.
    const publisherMayList = (prefix: string | undefined) => prefix !== undefined && (prefix.startsWith('mappings/') || prefix.startsWith('groups/'));
    const statusesOf = (key: string) =>
      s3.requests.filter((r) => r.path.split('?')[0] === `/${s3.bucket}/${key}`).map((r) => `${r.method} ${r.status}`);

    it('publishes the first version into an empty bucket, where every read of a missing key is 403', async () => {
      s3.listPermission(publisherMayList);
      const before = s3.requests.length;
      const result = await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
      expect(result.groups.map((g) => g.status)).toEqual(['published', 'published', 'published']);
      const seen = s3.requests.slice(before);
      // The stand-in answered the missing pointer and version with 403, as S3 does: that is the path under test.
      expect(seen.filter((r) => r.status === 403).map((r) => `${r.method} ${r.path.split('?')[0]}`)).toEqual([
        ...GROUPS.map((g) => `GET /${s3.bucket}/${groupKey(g)}`),
        `GET /${s3.bucket}/${versionKey(1)}`,
      ]);
      for (const group of GROUPS) expect((await store.readGroup(group))!.document).toEqual(v1);
      expect(statusesOf(groupKey('canary')).at(-1)).toBe('GET 200');
    });

    it('tells a missing key from an existing one on a 403 (exists, history, rollback)', async () => {
      s3.listPermission(publisherMayList);
      expect(await store.exists(versionKey(1))).toBe(false);
      expect(statusesOf(versionKey(1))).toContain('HEAD 403');
      await publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 });
      expect(await store.exists(versionKey(1))).toBe(true);
      expect((await mappingHistory(store, [...GROUPS, 'not-yet-deployed'])).map((h) => [h.version, h.groups])).toEqual([[1, GROUPS]]);
      await expect(rollbackMapping(store, { groups: GROUPS, bakeSeconds: 0, now: NOW.now })).rejects.toThrow(/first published version/);
    });

    it('keeps a 403 an access error when the caller may not list the key either, writing nothing', async () => {
      s3.listPermission(() => false);
      await expect(publishMapping(store, v1, { groups: GROUPS, bakeSeconds: 0 })).rejects.toThrow(
        /reading s3:\/\/test-mappings\/groups\/canary\/mapping.json failed: AccessDenied 403 \(access denied/,
      );
      s3.listPermission(undefined);
      expect(await store.versions()).toEqual([]);
    });
  });
});
