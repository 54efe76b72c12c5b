import { ConcurrentWriteError, MappingStore } from '../../adapters/mapping-store';
import {
  assign,
  ASSIGNMENTS_KEY,
  AssignmentsDocument,
  EMPTY_ASSIGNMENTS,
  LaneSettings,
  parseAssignments,
  Shard,
  TenantShard,
  tenantShard,
} from '../../domain/lanes';

/** Reads the assignments with the ETag a replacement must match; an absent object is the empty document. */
export async function readAssignments(
  store: MappingStore,
  settings: LaneSettings,
  shards: readonly Shard[],
): Promise<{ document: AssignmentsDocument; etag: string | undefined }> {
  const raw = await store.readRaw(ASSIGNMENTS_KEY);
  if (!raw) return { document: EMPTY_ASSIGNMENTS, etag: undefined };
  return { document: parseAssignments(raw.text, settings, shards), etag: raw.etag };
}

export interface AssignOptions {
  readonly dedicated?: boolean;
  /**
   * Attempts when another assignment replaced the document between our read and our write: each
   * round of racing writers has one winner, so this many writers at once all get an answer. @default 25
   */
  readonly attempts?: number;
  readonly now?: () => Date;
  /** Waits between attempts (a random 20-120 ms, so racing writers spread out). */
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
}

export interface AssignResult {
  readonly shard: TenantShard;
  /** Writes that lost to a concurrent assignment before ours went through. */
  readonly conflicts: number;
}

/**
 * Puts `tenant` on `lanes` (or back on its default shard with `lanes` undefined): read, check the
 * overlap bound against every shard in use, write with If-Match on the ETag read (If-None-Match for
 * the first document). A write that loses to another one reads again and checks again, so two
 * assignments made at once can never both pass against a document that no longer holds; a check
 * that fails against the newer document is the caller's error.
 */
export async function assignTenant(
  store: MappingStore,
  settings: LaneSettings,
  shards: readonly Shard[],
  tenant: string,
  lanes: Shard | undefined,
  {
    dedicated = false,
    attempts = 25,
    now = () => new Date(),
    sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    random = Math.random,
  }: AssignOptions = {},
): Promise<AssignResult> {
  for (let attempt = 0; ; attempt++) {
    const { document, etag } = await readAssignments(store, settings, shards);
    const next = assign(settings, shards, document, tenant, lanes, { dedicated, now: now() });
    try {
      await store.put(ASSIGNMENTS_KEY, `${JSON.stringify(next, null, 2)}\n`, etag);
      return { shard: tenantShard(tenant, shards, next), conflicts: attempt };
    } catch (error) {
      if (!(error instanceof ConcurrentWriteError) || attempt + 1 >= attempts) {
        if (error instanceof ConcurrentWriteError)
          throw new Error(`${ASSIGNMENTS_KEY} kept changing under ${attempts} attempts (other assignments are running); retry`);
        throw error;
      }
      await sleep(20 + Math.floor(random() * 100));
    }
  }
}
