import { GetObjectCommand, ListObjectsV2Command, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { initialMapping } from '../../../lib/domain/mapping';
import { groupKey, MappingStore, publishMapping } from '../../../lib/adapters/mapping-store';
import { S3MappingSource, SourceAccessDenied } from '../../../lib/runtime/router';
import { LocalS3, localS3Client, startLocalS3 } from '../../support/s3';

const NOW = { now: '2026-11-29T16:00:00.000Z' };

describe('S3MappingSource', () => {
  let s3: LocalS3;
  let client: S3Client;

  beforeAll(async () => {
    s3 = await startLocalS3();
    client = localS3Client(s3, 1);
    const doc = initialMapping([{ id: 'cell-a', endpoint: 'http://127.0.0.1:9001', state: 'active' }], 1024, NOW);
    await publishMapping(new MappingStore(client, s3.bucket), doc, { groups: ['main'], bakeSeconds: 0 });
  });
  afterAll(async () => {
    client.destroy();
    await s3.stop();
  });

  it('reads the document once, then gets 304 until it changes', async () => {
    const source = new S3MappingSource(client, s3.bucket, 'main');
    const first = await source.fetch();
    expect('text' in first && JSON.parse(first.text).version).toBe(1);
    expect(await source.fetch()).toEqual({ changed: false });
  });

  it('does not read a document larger than a router task holds, and reads it again only when it changes', async () => {
    const big = `${JSON.stringify({ pad: 'x'.repeat(20_000) })}\n`;
    await new MappingStore(client, s3.bucket).put(groupKey('big'), big);
    const source = new S3MappingSource(client, s3.bucket, 'big', 5000, 10_000);
    expect(await source.fetch()).toEqual({ changed: true, tooLarge: Buffer.byteLength(big), maxBytes: 10_000 });
    expect(await source.fetch()).toEqual({ changed: false });
  });

  it('stops reading an answer without Content-Length once it passes what a router task holds', async () => {
    const big = `${JSON.stringify({ pad: 'x'.repeat(200_000) })}\n`;
    await new MappingStore(client, s3.bucket).put(groupKey('big-chunked'), big);
    const source = new S3MappingSource(client, s3.bucket, 'big-chunked', 5000, 10_000);
    s3.fault('chunked');
    try {
      const result = await source.fetch();
      expect(result).toMatchObject({ changed: true, maxBytes: 10_000 });
      // Refused once past the cap, not after the whole 200 KB.
      const read = (result as { tooLarge: number }).tooLarge;
      expect(read).toBeGreaterThan(10_000);
      expect(read).toBeLessThan(100_000);
    } finally {
      s3.fault(undefined);
    }
  });

  it('reads a torn body again at the next poll instead of trusting its ETag', async () => {
    const source = new S3MappingSource(client, s3.bucket, 'main');
    s3.fault('torn');
    try {
      const torn = await source.fetch();
      expect('text' in torn && (() => JSON.parse(torn.text))).toThrow(SyntaxError);
    } finally {
      s3.fault(undefined);
    }
    const next = await source.fetch();
    expect('text' in next && JSON.parse(next.text).version).toBe(1);
    expect(await source.fetch()).toEqual({ changed: false });
  });

  // S3 answers a GET of a missing key with 404 only to a caller allowed s3:ListBucket, else 403
  // (GetObject API reference, "Permissions"): the stand-in answers the same way.
  describe('a group with no pointer yet', () => {
    afterEach(() => s3.listPermission(undefined));

    it('is "missing" when S3 says 404 (the caller may list the bucket)', async () => {
      expect(await new S3MappingSource(client, s3.bucket, 'nothing-here').fetch()).toEqual({ changed: false, missing: true });
    });

    it('is "missing" when S3 says 403 and the caller may list only its own pointer key, as the router task role may', async () => {
      s3.listPermission((prefix) => prefix === groupKey('nothing-here'));
      expect(await new S3MappingSource(client, s3.bucket, 'nothing-here').fetch()).toEqual({ changed: false, missing: true });
      expect(s3.requests.slice(-2).map((r) => `${r.method} ${r.status}`)).toEqual(['GET 403', 'GET 200']);
    });

    it('is "denied", with what the role needs, when the caller may not list its key either (S3 cannot say which)', async () => {
      s3.listPermission(() => false);
      const fetching = new S3MappingSource(client, s3.bucket, 'nothing-here').fetch();
      await expect(fetching).rejects.toThrow(SourceAccessDenied);
      await expect(new S3MappingSource(client, s3.bucket, 'nothing-here').fetch()).rejects.toThrow(
        /access denied \(403\)\. The router task role needs s3:GetObject on this key and s3:ListBucket on the bucket with s3:prefix "groups\/nothing-here\/mapping\.json"/,
      );
    });

    it('is an error, not "missing", when the bucket does not exist', async () => {
      await expect(new S3MappingSource(client, 'no-such-mapping-bucket', 'main').fetch()).rejects.toThrow(/bucket/i);
    });

    it('is "denied" when the object exists but reading it is refused (the listing shows it)', async () => {
      const mocked = new S3Client({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
      const mock = mockClient(mocked);
      mock
        .on(GetObjectCommand)
        .rejects(new S3ServiceException({ name: 'AccessDenied', $fault: 'client', $metadata: { httpStatusCode: 403 }, message: 'Access Denied' }));
      mock.on(ListObjectsV2Command).resolves({ Contents: [{ Key: groupKey('main') }] });
      await expect(new S3MappingSource(mocked, 'bucket', 'main').fetch()).rejects.toThrow(SourceAccessDenied);
      mock.restore();
    });
  });
});
