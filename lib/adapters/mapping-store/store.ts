import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { MappingDocument, parseMapping } from '../../domain/mapping';

/** Where the documents live in the mapping bucket. */
export const VERSIONS_PREFIX = 'mappings/';
export const GROUPS_PREFIX = 'groups/';
/** Lane assignments (lib/domain/lanes/assignments: `lanes/assignments.json`), in the home region's bucket. */
export const LANES_PREFIX = 'lanes/';
export const versionKey = (version: number) => `${VERSIONS_PREFIX}v${version}.json`;
export const groupKey = (group: string) => `${GROUPS_PREFIX}${group}/mapping.json`;
/** Each region's zones document (lib/domain/zones), in that region's bucket; every router group of the region reads it. */
export const ZONES_PREFIX = 'zones/';
export const zonesKey = (region: string) => `${ZONES_PREFIX}${region}.json`;

/**
 * The S3 actions MappingStore uses (publish, rollback, history): GetObject and HeadObject need
 * s3:GetObject, conditional PutObject s3:PutObject, ListObjectsV2 s3:ListBucket (on the two
 * prefixes: listing the versions, and telling a missing key from a denied one). The publisher role
 * is granted exactly these, and test/iam checks every call against the synthesized policies.
 */
export const PUBLISHER_ACTIONS = ['s3:GetObject', 's3:PutObject', 's3:ListBucket'] as const;

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

/** The HTTP status an AWS SDK v3 error carries (`$metadata.httpStatusCode`), if any. */
export const statusOf = (error: unknown): number | undefined =>
  (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;

/**
 * Whether a conditional PUT failed because the object is not the one the condition named: 412
 * (If-None-Match found an object, If-Match a different ETag), 409 ConditionalRequestConflict (a
 * concurrent write; PutObject API reference) or, for an If-Match write (`replacing`), 404 NoSuchKey:
 * the object was deleted since it was read. moto 5.2 answers that last case 404 NoSuchKey where our
 * s3rver layer answered 412; the S3 pages we read do not say which S3 answers, so both mean the same.
 */
export function conditionFailed(error: unknown, replacing: boolean): boolean {
  const status = statusOf(error);
  return status === 412 || status === 409 || (replacing && (status === 404 || (error as Error | undefined)?.name === 'NoSuchKey'));
}

/**
 * The mapping bucket: immutable `mappings/v<version>.json` plus one mutable pointer per router group.
 * Every write is conditional (If-None-Match for new objects, If-Match for pointers), so two operators
 * publishing at once cannot silently overwrite each other.
 */
export class MappingStore {
  constructor(
    private readonly s3: S3Client,
    public readonly bucket: string,
  ) {}

  private fail(operation: string, key: string, error: unknown): never {
    const status = statusOf(error);
    const name = error instanceof S3ServiceException ? error.name : (error as Error).name;
    const hint =
      status === 403
        ? ` (access denied: the publisher role (${PUBLISHER_ACTIONS.join(', ')} on mappings/*, groups/* and lanes/*) is what publish, rollback and history run as)`
        : name === 'NoSuchBucket'
          ? ' (no such bucket: check --bucket or router.mappingBucket)'
          : '';
    throw new StoreError(`${operation} s3://${this.bucket}/${key} failed: ${name}${status ? ` ${status}` : ''}${hint}: ${(error as Error).message}`);
  }

  /**
   * Whether a GET or HEAD that failed with `error` means "no such object". S3 answers 404 for a
   * missing key only to a caller allowed `s3:ListBucket` on the bucket, and 403 to everyone else
   * (GetObject / HeadObject API reference, "Permissions"). Whether a ListBucket grant conditioned
   * on `s3:prefix` counts for that check is not documented, so a 403 is settled by listing the key
   * itself (the publisher may list `mappings/` and `groups/`): absent from the listing means
   * missing; present, or the listing denied too, means a real access denial.
   */
  private async missing(key: string, error: unknown): Promise<boolean> {
    const status = statusOf(error);
    if (status === 404 || (error as Error).name === 'NoSuchKey' || (error as Error).name === 'NotFound') return true;
    if (status !== 403) return false;
    let listed;
    try {
      listed = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: key, MaxKeys: 1 }));
    } catch {
      return false; // not allowed to list either: the original 403 is the answer
    }
    return !(listed.Contents ?? []).some((object) => object.Key === key);
  }

  /** An object's text and ETag as stored, valid or not; undefined when it does not exist. */
  public async readRaw(key: string): Promise<{ text: string; etag: string } | undefined> {
    try {
      const response = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return { text: await response.Body!.transformToString(), etag: response.ETag! };
    } catch (error) {
      if (await this.missing(key, error)) return undefined;
      this.fail('reading', key, error);
    }
  }

  /** Reads and validates a stored document; undefined when the object does not exist. */
  public async read(key: string): Promise<StoredMapping | undefined> {
    const raw = await this.readRaw(key);
    if (!raw) return undefined;
    const parsed = parseMapping(raw.text);
    if (!parsed.ok) {
      const repair = key.startsWith(GROUPS_PREFIX)
        ? '`cellctl mapping repair` points the group at a valid published version again'
        : 'fix the bucket';
      throw new StoreError(
        `s3://${this.bucket}/${key} is not a valid mapping (${parsed.problems[0].path}: ${parsed.problems[0].message}); the routers keep their last-known-good mapping; ${repair} before publishing`,
      );
    }
    return { document: parsed.document, etag: raw.etag, text: raw.text };
  }

  public readGroup(group: string): Promise<StoredMapping | undefined> {
    return this.read(groupKey(group));
  }

  public readVersion(version: number): Promise<StoredMapping | undefined> {
    return this.read(versionKey(version));
  }

  /**
   * Writes `text` to `key`: only if absent (`expected` undefined) or only if its ETag is still
   * `expected`, with user `metadata` (`x-amz-meta-*`). Throws ConcurrentWriteError when the
   * condition fails.
   */
  public async put(key: string, text: string, expected?: string, metadata?: Record<string, string>): Promise<void> {
    try {
      await this.s3.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Body: text,
          ContentType: 'application/json',
          ...(expected === undefined ? { IfNoneMatch: '*' } : { IfMatch: expected }),
          ...(metadata ? { Metadata: metadata } : {}),
        }),
      );
    } catch (error) {
      if (conditionFailed(error, expected !== undefined)) throw new ConcurrentWriteError(key);
      this.fail('writing', key, error);
    }
  }

  /** The user metadata of version `version`'s object; undefined when the object does not exist. */
  public async versionMetadata(version: number): Promise<Record<string, string> | undefined> {
    const key = versionKey(version);
    try {
      const head = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return head.Metadata ?? {};
    } catch (error) {
      if (await this.missing(key, error)) return undefined;
      return this.fail('checking', key, error);
    }
  }

  /** True when `key` exists. */
  public async exists(key: string): Promise<boolean> {
    try {
      await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (error) {
      if (await this.missing(key, error)) return false;
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
        page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: VERSIONS_PREFIX, ContinuationToken: token }));
      } catch (error) {
        this.fail('listing', VERSIONS_PREFIX, error);
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
