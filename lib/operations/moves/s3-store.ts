import { randomBytes } from 'crypto';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { checkMoveId, MoveConflictError, MoveStore, StoredMove } from './store';
import { AuditEntry, MoveError, MoveRecord } from '../../domain/moves/types';
import { conditionFailed, statusOf } from '../../adapters/mapping-store/store';

/**
 * Moves kept in S3 next to the mapping (`moves/<id>/move.json`), for operators driving moves of AWS
 * cells. Every write is conditional: a new record with `If-None-Match: *`, a replacement with
 * `If-Match: <ETag read>`, so two operators cannot drive one move (S3 answers 412 Precondition
 * Failed, or 409 when a conflicting write is in progress: Amazon S3 User Guide, "Add preconditions
 * to S3 operations with conditional requests"). The audit log is one object per entry
 * (`moves/<id>/audit/<time>-<random>.json`), each created with `If-None-Match: *`: S3 has no append,
 * and entries are never overwritten. Reading a missing key answers 403, not 404, to a caller
 * without `s3:ListBucket`: the mover's role needs it on `moves/`.
 */
export class S3MoveStore implements MoveStore {
  public readonly description: string;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly prefix = 'moves/',
    private readonly staleLockMs = 60_000,
  ) {
    this.description = `s3://${bucket}/${prefix}`;
  }

  private key(id: string, name: string): string {
    checkMoveId(id);
    return `${this.prefix}${id}/${name}`;
  }

  private fail(operation: string, key: string, error: unknown): never {
    throw new MoveError(
      `${operation} s3://${this.bucket}/${key} failed: ${(error as Error).name} ${statusOf(error) ?? ''}: ${(error as Error).message}`,
    );
  }

  private async put(key: string, body: string, condition: { IfNoneMatch: string } | { IfMatch: string }, id: string): Promise<string> {
    try {
      const response = await this.s3.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: 'application/json', ...condition }),
      );
      return response.ETag!;
    } catch (error) {
      if (conditionFailed(error, 'IfMatch' in condition)) throw new MoveConflictError(id);
      return this.fail('writing', key, error);
    }
  }

  private async get(key: string): Promise<{ text: string; etag: string; lastModified?: Date } | undefined> {
    try {
      const response = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return { text: await response.Body!.transformToString(), etag: response.ETag!, lastModified: response.LastModified };
    } catch (error) {
      if (statusOf(error) === 404 || (error as Error).name === 'NoSuchKey') return undefined;
      return this.fail('reading', key, error);
    }
  }

  public async create(record: MoveRecord): Promise<StoredMove> {
    const tag = await this.put(this.key(record.id, 'move.json'), JSON.stringify(record, null, 2), { IfNoneMatch: '*' }, record.id);
    return { record, tag };
  }

  public async read(id: string): Promise<StoredMove | undefined> {
    const found = await this.get(this.key(id, 'move.json'));
    return found && { record: JSON.parse(found.text) as MoveRecord, tag: found.etag };
  }

  public async replace(record: MoveRecord, tag: string): Promise<StoredMove> {
    const etag = await this.put(this.key(record.id, 'move.json'), JSON.stringify(record, null, 2), { IfMatch: tag }, record.id);
    return { record, tag: etag };
  }

  private async listKeys(prefix: string, delimiter?: string): Promise<{ keys: string[]; prefixes: string[] }> {
    const keys: string[] = [];
    const prefixes: string[] = [];
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, Delimiter: delimiter, ContinuationToken: token }));
      } catch (error) {
        return this.fail('listing', prefix, error);
      }
      keys.push(...(page.Contents ?? []).map((o) => o.Key!));
      prefixes.push(...(page.CommonPrefixes ?? []).map((p) => p.Prefix!));
      token = page.NextContinuationToken;
    } while (token);
    return { keys, prefixes };
  }

  public async list(): Promise<MoveRecord[]> {
    const { prefixes } = await this.listKeys(this.prefix, '/');
    const records: MoveRecord[] = [];
    for (const p of prefixes.sort()) {
      const id = p.slice(this.prefix.length, -1);
      if (id.startsWith('.')) continue;
      const stored = await this.read(id);
      if (stored) records.push(stored.record);
    }
    return records;
  }

  public async appendAudit(id: string, entry: AuditEntry): Promise<void> {
    const name = `audit/${entry.at.replace(/[^0-9TZ]/g, '')}-${randomBytes(4).toString('hex')}.json`;
    await this.put(this.key(id, name), JSON.stringify(entry), { IfNoneMatch: '*' }, id);
  }

  public async readAudit(id: string): Promise<AuditEntry[]> {
    const { keys } = await this.listKeys(this.key(id, 'audit/'));
    const entries: AuditEntry[] = [];
    for (const key of keys.sort()) {
      const found = await this.get(key);
      if (found) entries.push(JSON.parse(found.text) as AuditEntry);
    }
    return entries;
  }

  /**
   * A lock object created with If-None-Match: *; one left by a killed operator is removed once
   * older than `staleLockMs`. Every delete of the lock is conditional (If-Match on the ETag this
   * operator read or wrote; Amazon S3 User Guide, "How to perform conditional deletes"): a stale lock
   * that another operator has meanwhile removed and taken again has a new ETag, so the delete answers
   * 412 (404 when it is gone) and removes nothing, and a lock this operator held past `staleLockMs`
   * and lost is never released from under its new holder.
   */
  public async withPlanLock<T>(body: () => Promise<T>): Promise<T> {
    const key = `${this.prefix}.plan-lock`;
    const deadline = Date.now() + 30_000;
    let mine: string;
    for (;;) {
      try {
        mine = await this.put(key, JSON.stringify({ at: new Date().toISOString() }), { IfNoneMatch: '*' }, '.plan-lock');
        break;
      } catch (error) {
        if (!(error instanceof MoveConflictError)) throw error;
        const held = await this.get(key);
        if (held?.lastModified && Date.now() - held.lastModified.getTime() > this.staleLockMs) {
          await this.deleteIfMatch(key, held.etag);
        } else if (Date.now() > deadline) {
          throw new MoveError(`s3://${this.bucket}/${key} is held by another operator planning a move; retry, or remove it if nobody is`);
        } else {
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    }
    try {
      return await body();
    } finally {
      await this.deleteIfMatch(key, mine).catch(() => undefined);
    }
  }

  /** Deletes `key` only while its ETag is `etag`; false when it changed (412, 409) or is gone (404). */
  private async deleteIfMatch(key: string, etag: string): Promise<boolean> {
    try {
      await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key, IfMatch: etag }));
      return true;
    } catch (error) {
      const status = statusOf(error);
      if (status === 412 || status === 409 || status === 404 || (error as Error).name === 'NoSuchKey') return false;
      return this.fail('deleting', key, error);
    }
  }
}
