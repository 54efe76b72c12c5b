import { S3Client } from '@aws-sdk/client-s3';
import { initialMapping } from '../../lib/mapping';
import { MappingStore, publishMapping } from '../../lib/mapping-store';
import { S3MappingSource } from '../../lib/router';
import { LocalS3, localS3Client, startLocalS3 } from '../support/s3';

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
    expect(first.changed && JSON.parse(first.text).version).toBe(1);
    expect(await source.fetch()).toEqual({ changed: false });
  });

  it('reads a torn body again at the next poll instead of trusting its ETag', async () => {
    const source = new S3MappingSource(client, s3.bucket, 'main');
    s3.fault('torn');
    try {
      const torn = await source.fetch();
      expect(torn.changed && (() => JSON.parse(torn.text))).toThrow(SyntaxError);
    } finally {
      s3.fault(undefined);
    }
    const next = await source.fetch();
    expect(next.changed && JSON.parse(next.text).version).toBe(1);
    expect(await source.fetch()).toEqual({ changed: false });
  });
});
