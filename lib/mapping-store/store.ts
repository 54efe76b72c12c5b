import {
  GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, S3ServiceException,
} from '@aws-sdk/client-s3';
import { MappingDocument, parseMapping } from '../mapping';

/** Where the documents live in the mapping bucket. */
export const versionKey = (version: number) => `mappings/v${version}.json`;
export const groupKey = (group: string) => `groups/${group}/mapping.json`;

/** A document as stored, with the ETag a conditional write must match. */
export interface StoredMapping {
  readonly document: MappingDocument;
  readonly etag: string;
  readonly text: string;
}

/** Another writer changed the object between our read and our write. */
export class ConcurrentWriteError extends Error {
  constructor(public readonly key: string) {
    super(`${key} changed while we were writing it: another operator is publishing. Run \`cellctl mapping history\`, then retry.`);
    this.name = 'ConcurrentWriteError';
  }
}

/** S3 said no (permissions, missing bucket…): the message names the operation and the bucket. */
export class StoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreError';
  }
}

const statusOf = (error: unknown) => (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

/**
 * The mapping bucket: immutable `mappings/v<version>.json` plus one mutable pointer per router group.
 * Every write is conditional (If-None-Match for new objects, If-Match for pointers), so two operators
 * publishing at once cannot silently overwrite each other.
 */
export class MappingStore {
  constructor(private readonly s3: S3Client, public readonly bucket: string) {}

  private fail(operation: string, key: string, error: unknown): never {
    const status = statusOf(error);
    const name = error instanceof S3ServiceException ? error.name : (error as Error).name;
    const hint = status === 403 ? ' (access denied: the publisher role needs s3:GetObject, s3:PutObject and s3:ListBucket on this bucket)'
      : name === 'NoSuchBucket' ? ' (no such bucket: check --bucket or router.mappingBucket)' : '';
    throw new StoreError(`${operation} s3://${this.bucket}/${key} failed: ${name}${status ? ` ${status}` : ''}${hint}: ${(error as Error).message}`);
  }

  /** Reads and validates a stored document; undefined when the object does not exist. */
  public async read(key: string): Promise<StoredMapping | undefined> {
    let text: string;
    let etag: string;
    try {
      const response = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      text = await response.Body!.transformToString();
      etag = response.ETag!;
    } catch (error) {
      if (statusOf(error) === 404 || (error as Error).name === 'NoSuchKey') return undefined;
      this.fail('reading', key, error);
    }
    const parsed = parseMapping(text);
    if (!parsed.ok) {
      throw new StoreError(`s3://${this.bucket}/${key} is not a valid mapping (${parsed.problems[0].path}: ${parsed.problems[0].message}); fix the bucket before publishing`);
    }
    return { document: parsed.document, etag, text };
  }

  public readGroup(group: string): Promise<StoredMapping | undefined> {
    return this.read(groupKey(group));
  }

  public readVersion(version: number): Promise<StoredMapping | undefined> {
    return this.read(versionKey(version));
  }

  /**
   * Writes `text` to `key`: only if absent (`expected` undefined) or only if its ETag is still
   * `expected`. Throws ConcurrentWriteError when the condition fails.
   */
  public async put(key: string, text: string, expected?: string): Promise<void> {
    try {
      await this.s3.send(new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: text,
        ContentType: 'application/json',
        ...(expected === undefined ? { IfNoneMatch: '*' } : { IfMatch: expected }),
      }));
    } catch (error) {
      const status = statusOf(error);
      if (status === 412 || status === 409) throw new ConcurrentWriteError(key);
      this.fail('writing', key, error);
    }
  }

  /** True when `key` exists. */
  public async exists(key: string): Promise<boolean> {
    try {
      await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (error) {
      if (statusOf(error) === 404) return false;
      return this.fail('checking', key, error);
    }
  }

  /** Every published version, ascending. */
  public async versions(): Promise<number[]> {
    const versions: number[] = [];
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: 'mappings/', ContinuationToken: token }));
      } catch (error) {
        this.fail('listing', 'mappings/', error);
      }
      for (const object of page.Contents ?? []) {
        const match = /^mappings\/v(\d+)\.json$/.exec(object.Key ?? '');
        if (match) versions.push(Number(match[1]));
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return versions.sort((a, b) => a - b);
  }
}
