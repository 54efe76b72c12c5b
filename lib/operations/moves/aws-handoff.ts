import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { checkHandoffKey, HandoffStore } from './handoff';
import { HANDOFF_PREFIX, handoffLanePrefix, HandoffLane } from '../../domain/names/move-bucket';
import { MoveError } from '../../domain/moves/types';
import { statusOf } from '../../adapters/mapping-store/store';

/**
 * The hand-off in the move bucket. Keys `<moveId>/<rest>` live at
 * `handoff/<moveId>/from=<source account>/to=<target account>/<rest>`: the source cell's mover may
 * write only under its `from=` lanes, the target's may read only under its `to=` lanes (bucket
 * policy, lib/constructs/router/move-bucket.ts). `lane` is needed to put and get; the operator, which only
 * removes a finished move's data, needs none.
 */
export class S3HandoffStore implements HandoffStore {
  public readonly description: string;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly lane?: HandoffLane,
  ) {
    this.description = `s3://${bucket}/${HANDOFF_PREFIX}`;
  }

  private key(key: string): string {
    checkHandoffKey(key);
    if (!this.lane) throw new Error("S3HandoffStore: reading or writing hand-off data needs the move's lane (source and target account)");
    const [moveId, ...rest] = key.split('/');
    if (rest.length === 0) throw new Error(`hand-off key ${JSON.stringify(key)} has no move id prefix`);
    return `${handoffLanePrefix(moveId, this.lane)}${rest.join('/')}`;
  }

  public async put(key: string, text: string): Promise<void> {
    const full = this.key(key);
    try {
      await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: full, Body: text, ContentType: 'application/json' }));
    } catch (error) {
      throw new MoveError(
        `writing s3://${this.bucket}/${full} failed: ${(error as Error).name} ${statusOf(error) ?? ''}: ${(error as Error).message}${statusOf(error) === 403 ? " (the mover role may write only its own cell's from= lanes)" : ''}`,
      );
    }
  }

  public async get(key: string): Promise<string> {
    const full = this.key(key);
    try {
      const response = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: full }));
      return await response.Body!.transformToString();
    } catch (error) {
      const status = statusOf(error);
      // The mover may not list the bucket, so S3 answers a missing key with 403, not 404 (GetObject
      // API reference, "Permissions"): either means the exporter's file is not there.
      const missing = status === 404 || status === 403 || (error as Error).name === 'NoSuchKey';
      throw new MoveError(
        missing
          ? `hand-off s3://${this.bucket}/${full} is missing or not readable (${(error as Error).name} ${status ?? ''}); if the move's data expired or was removed, run the move again with \`cellctl move resume\``
          : `reading s3://${this.bucket}/${full} failed: ${(error as Error).name} ${status ?? ''}: ${(error as Error).message}`,
      );
    }
  }

  /** Removes every object of one move (`prefix` is the move id): all its lanes. */
  public async remove(prefix: string): Promise<void> {
    checkHandoffKey(prefix);
    const root = `${HANDOFF_PREFIX}${prefix.replace(/\/$/, '')}/`;
    let token: string | undefined;
    do {
      const page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: root, ContinuationToken: token }));
      const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
      // DeleteObjects takes at most 1,000 keys, as many as one listing page holds.
      if (keys.length > 0) await this.s3.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } }));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}
