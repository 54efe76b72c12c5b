/** Mapping document, schema 1: partition key → bucket → cell, plus overrides. */

export const SCHEMA_VERSION = 1;
export const HASH_NAME = 'sha256-u32be';

/** `active` cells take buckets; `draining` cells keep overrides only; `quarantine` cells take pinned keys only. */
export type MappingCellState = 'active' | 'draining' | 'quarantine';

export interface MappingCell {
  readonly endpoint: string;
  readonly state: MappingCellState;
}

/** Buckets `from` … `to` (inclusive) belong to `cell`. */
export interface BucketRange {
  readonly from: number;
  readonly to: number;
  readonly cell: string;
}

export interface Overrides {
  /** Exact key → cell. */
  readonly exact: Readonly<Record<string, string>>;
  /** Key prefix → cell; the longest matching prefix wins. */
  readonly prefix: Readonly<Record<string, string>>;
}

/**
 * Keys the routers answer with `503` + `Retry-After` while a move copies their last changes
 * (contract 3): exact tenants, and bucket ranges (inclusive). Absent or empty: nothing is frozen.
 */
export interface Freeze {
  readonly exact: readonly string[];
  readonly buckets: readonly { readonly from: number; readonly to: number }[];
}

export interface MappingDocument {
  readonly schemaVersion: 1;
  readonly version: number;
  readonly createdAt: string;
  readonly hash: 'sha256-u32be';
  readonly bucketCount: number;
  readonly cells: Readonly<Record<string, MappingCell>>;
  readonly buckets: readonly BucketRange[];
  readonly overrides: Overrides;
  /** Set only while a move is in its freeze window. */
  readonly freeze?: Freeze;
}

/** How a key was routed: `exact` and `prefix` overrides are checked before the bucket table. */
export type LookupVia = 'exact' | 'prefix' | 'bucket';

export interface LookupResult {
  readonly key: string;
  readonly cell: string;
  readonly bucket: number;
  readonly via: LookupVia;
}

/** One problem in a document, located by JSON path (`$.buckets[3].to`). */
export interface MappingProblem {
  readonly path: string;
  readonly message: string;
}
