import { createHash } from 'crypto';
import * as fs from 'fs';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { DOCUMENT_LIMITS } from '../../domain/mapping/limits';
import { groupKey, statusOf } from '../../adapters/mapping-store';

/**
 * A fetch result: nothing new, a new document text to validate, or (`missing`) no document at the
 * source yet: nothing has been published for this group, which is not an error.
 */
export type FetchResult =
  | { readonly changed: false; readonly missing?: true }
  | { readonly changed: true; readonly text: string }
  /** A document larger than a router task holds: not read at all (its size is the problem). */
  | { readonly changed: true; readonly tooLarge: number; readonly maxBytes: number };

/** Reading the source was refused (as opposed to: there is nothing to read). */
export class SourceAccessDenied extends Error {
  public override readonly name = 'SourceAccessDenied';
}

/** Where the agent reads its router group's mapping. Errors are thrown; the agent keeps serving. */
export interface MappingSource {
  readonly description: string;
  fetch(): Promise<FetchResult>;
  /** Forget what was last read, so the next fetch returns the document again (after a failed apply). */
  reset(): void;
}

/** `groups/<group>/mapping.json` in the mapping bucket, with conditional GETs (304 = unchanged). */
export class S3MappingSource implements MappingSource {
  private etag?: string;
  public readonly description: string;

  /** `timeoutMs`: a fetch that takes longer is abandoned (and counted as an error). */
  /** `maxBytes`: a larger document is not read (what a router task holds). */
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    group: string,
    private readonly timeoutMs = 5000,
    private readonly maxBytes = DOCUMENT_LIMITS.maxBytes,
    /** The object read: the group's pointer by default (the zones document: zonesKey(region)). */
    key = groupKey(group),
  ) {
    this.key = key;
    this.description = `s3://${bucket}/${this.key}`;
  }

  private readonly key: string;

  public async fetch(): Promise<FetchResult> {
    try {
      const abortSignal = AbortSignal.timeout(this.timeoutMs);
      const response = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key, IfNoneMatch: this.etag }), { abortSignal });
      if ((response.ContentLength ?? 0) > this.maxBytes) {
        // Not read: a document this large would cost the agent several times its size to parse.
        (response.Body as { destroy?: () => void } | undefined)?.destroy?.();
        this.etag = response.ETag;
        return { changed: true, tooLarge: response.ContentLength!, maxBytes: this.maxBytes };
      }
      // Read with a byte cap as well: an answer without Content-Length (or with a wrong one) is
      // otherwise read whole, however large, until the fetch's timeout.
      const read = await readCapped(response.Body as unknown as AsyncIterable<Uint8Array>, this.maxBytes);
      if (read.tooLarge) {
        this.etag = undefined;
        return { changed: true, tooLarge: read.bytes, maxBytes: this.maxBytes };
      }
      const text = read.text;
      // Remember the ETag only when the body is the object it names (a single-part ETag is the
      // MD5 of the content): a torn or truncated read is then read again at the next poll
      // instead of being answered 304 until the next publish.
      const etag = response.ETag?.replace(/"/g, '');
      const intact = etag !== undefined && createHash('md5').update(text).digest('hex') === etag;
      this.etag = intact ? response.ETag : undefined;
      return { changed: true, text };
    } catch (error) {
      const status = statusOf(error);
      if (status === 304) return { changed: false };
      if ((status === 404 && (error as Error).name !== 'NoSuchBucket') || status === 403) {
        this.etag = undefined;
        if (await this.missing(status)) return { changed: false, missing: true };
        throw new SourceAccessDenied(
          `${this.description}: access denied (403). The router task role needs s3:GetObject on this key and s3:ListBucket on the bucket with s3:prefix "${this.key}" (grantMappingRead in lib/constructs/router/mapping-bucket.ts); check the role, the bucket policy and the bucket name (S3_BUCKET)`,
        );
      }
      throw error;
    }
  }

  /**
   * Whether a GET answered `status` means the pointer does not exist. S3 answers a missing key with
   * 404 to a caller allowed s3:ListBucket on the bucket and with 403 to any other (GetObject API
   * reference, "Permissions", https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html).
   * The task role may list exactly its pointer's key (s3:prefix condition); S3 does not say whether
   * such a conditioned grant counts for that check, so a 403 is settled by listing the key: absent
   * means missing; present, or the listing refused too, means denied.
   */
  private async missing(status: number): Promise<boolean> {
    if (status === 404) return true;
    try {
      const listed = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.key, MaxKeys: 1 }), {
        abortSignal: AbortSignal.timeout(this.timeoutMs),
      });
      return !(listed.Contents ?? []).some((object) => object.Key === this.key);
    } catch {
      return false;
    }
  }

  public reset(): void {
    this.etag = undefined;
  }
}

/**
 * The body's text, or `tooLarge` as soon as more than `maxBytes` arrived (the rest is not read: the
 * stream is destroyed). `bytes` is what was read by then.
 */
export async function readCapped(
  body: AsyncIterable<Uint8Array>,
  maxBytes: number,
): Promise<{ tooLarge: false; text: string } | { tooLarge: true; bytes: number }> {
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.byteLength;
    if (bytes > maxBytes) {
      (body as { destroy?: () => void }).destroy?.();
      return { tooLarge: true, bytes };
    }
    chunks.push(chunk);
  }
  return { tooLarge: false, text: Buffer.concat(chunks, bytes).toString('utf8') };
}

/** A local file (cellctl router local): re-read when its size or modification time changes. */
export class FileMappingSource implements MappingSource {
  private stamp?: string;
  public readonly description: string;

  constructor(private readonly file: string) {
    this.description = file;
  }

  public async fetch(): Promise<FetchResult> {
    const stat = await fs.promises.stat(this.file);
    const stamp = `${stat.size}:${stat.mtimeMs}`;
    if (stamp === this.stamp) return { changed: false };
    this.stamp = stamp;
    if (stat.size > DOCUMENT_LIMITS.maxBytes) return { changed: true, tooLarge: stat.size, maxBytes: DOCUMENT_LIMITS.maxBytes };
    const text = await fs.promises.readFile(this.file, 'utf8');
    return { changed: true, text };
  }

  public reset(): void {
    this.stamp = undefined;
  }
}
