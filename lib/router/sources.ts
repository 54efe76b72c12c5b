import { createHash } from 'crypto';
import * as fs from 'fs';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { groupKey } from '../mapping-store';

/** A fetch result: nothing new, or a new document text to validate. */
export type FetchResult = { readonly changed: false } | { readonly changed: true; readonly text: string };

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
  constructor(private readonly s3: S3Client, private readonly bucket: string, group: string, private readonly timeoutMs = 5000) {
    this.key = groupKey(group);
    this.description = `s3://${bucket}/${this.key}`;
  }

  private readonly key: string;

  public async fetch(): Promise<FetchResult> {
    try {
      const abortSignal = AbortSignal.timeout(this.timeoutMs);
      const response = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key, IfNoneMatch: this.etag }), { abortSignal });
      const text = await response.Body!.transformToString();
      // Remember the ETag only when the body is the object it names (a single-part ETag is the
      // MD5 of the content): a torn or truncated read is then read again at the next poll
      // instead of being answered 304 until the next publish.
      const etag = response.ETag?.replace(/"/g, '');
      const intact = etag !== undefined && createHash('md5').update(text).digest('hex') === etag;
      this.etag = intact ? response.ETag : undefined;
      return { changed: true, text };
    } catch (error) {
      if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 304) return { changed: false };
      throw error;
    }
  }

  public reset(): void {
    this.etag = undefined;
  }
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
    const text = await fs.promises.readFile(this.file, 'utf8');
    this.stamp = stamp;
    return { changed: true, text };
  }

  public reset(): void {
    this.stamp = undefined;
  }
}
