import type { Homes } from '../mapping/types';
/** Moves: a tenant, or the tenants of some buckets, taken from one cell to another. */

/** Inclusive bucket range. */
export interface Range {
  readonly from: number;
  readonly to: number;
}

/**
 * What moves: one tenant, or every tenant whose key's bucket is in the ranges. With `homes` (a
 * mapping with home tables, recorded at plan time) a bucket is in the mapping's bucket space: the
 * key's hash bucket plus its home table's offset, so a range selects only its table's tenants.
 */
export type MoveSubject =
  | { readonly kind: 'tenant'; readonly tenant: string; readonly homes?: Homes }
  | {
      readonly kind: 'buckets';
      readonly ranges: readonly Range[];
      readonly homes?: Homes;
      /**
       * Tenants of these buckets routed by an override (to another cell), recorded at plan time: they
       * do not follow their bucket, so their rows are neither copied nor deleted.
       */
      readonly except?: { readonly exact: readonly string[]; readonly prefixes: readonly string[] };
    };

/**
 * The steps of a move, in order. A record's `completed` is the last step done; resuming runs the
 * step after it. Every step is idempotent, so a mover killed inside a step repeats it whole.
 */
export const STEPS = ['planned', 'cloned', 'caught-up', 'frozen', 'synced', 'verified', 'flipped', 'unfrozen', 'forgotten'] as const;
export type MoveStep = (typeof STEPS)[number];

/**
 * `active`: steps left before the flip is undone by nothing; `retained`: flipped and unfrozen, the
 * source copy kept until `forgetAfter` (counts as finished for routing and for the limits);
 * `finished`: the source copy is deleted; `aborted`: undone before the flip.
 */
export type MoveStatus = 'active' | 'retained' | 'finished' | 'aborted';

/** Rows copied per table (upserted rows and applied tombstones). */
export type TableCounts = Readonly<Record<string, { readonly rows: number; readonly tombstones: number }>>;

/** Row count and order-independent checksum of one table's rows of the subject (row_version excluded). */
export type TableChecksums = Readonly<Record<string, { readonly rows: number; readonly checksum: string }>>;

export interface MoveRecord {
  readonly id: string;
  readonly subject: MoveSubject;
  readonly source: string;
  readonly target: string;
  readonly bucketCount: number;
  readonly reason: string;
  readonly actor: string;
  readonly createdAt: string;
  readonly status: MoveStatus;
  readonly completed: MoveStep;
  /** Highest source row_version copied to the target: the next delta starts after it. */
  readonly watermark: string;
  /** Catch-up rounds done (each one a delta in the hand-off store). */
  readonly rounds: number;
  readonly rowsCopied: number;
  readonly frozenAt?: string;
  readonly unfrozenAt?: string;
  /** How long the subject was frozen (routers answering 503), from the freeze to the unfreeze. */
  readonly freezeMs?: number;
  readonly forgetAfter?: string;
  /** Rows of the subject deleted from the source cell by `forget`. */
  readonly sourceRowsDeleted?: number;
  /** Mapping versions written by this move (freeze, flip, unfreeze). */
  readonly mappingVersions: Readonly<Partial<Record<'freeze' | 'flip' | 'unfreeze', number>>>;
  readonly checksums?: TableChecksums;
  /** The last failure, kept until a step succeeds; `cellctl move show` prints it. */
  readonly lastError?: string;
  readonly updatedAt: string;
}

/** One line of a move's append-only audit log. */
export interface AuditEntry {
  readonly at: string;
  readonly actor: string;
  readonly event: string;
  readonly detail?: Readonly<Record<string, unknown>>;
}

/** Injected time, so every wait in a move is testable without waiting. */
export interface Clock {
  now(): Date;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => new Date(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** A move that cannot be planned or driven; the message says why and what to do. */
export class MoveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MoveError';
  }
}
