/**
 * Mapping document: partition key → bucket → cell, plus overrides. Schema 1 has one bucket table;
 * schema 2 (`homes`) one per home region or group of regions, side by side in one bucket space.
 */

export const SCHEMA_VERSION = 1;
/** The schema of documents with home regions (`homes`). */
export const HOMES_SCHEMA_VERSION = 2;
export const HASH_NAME = 'sha256-u32be';

/** `active` cells take buckets; `draining` cells keep overrides only; `quarantine` cells take pinned keys only. */
export type MappingCellState = 'active' | 'draining' | 'quarantine';

export interface MappingCell {
  readonly endpoint: string;
  readonly state: MappingCellState;
  /** The cell's region: required in schema 2 (where a change may put a table's buckets), absent in 1. */
  readonly region?: string;
}

/**
 * One bucket table of a schema-2 document: the tenants whose home is one of `regions`. A key is in
 * the table one of whose `prefixes` it starts with (no prefix of the document starts another),
 * else in table 0, the default home's.
 */
export interface HomeTable {
  readonly regions: readonly string[];
  readonly prefixes: readonly string[];
}

/**
 * Home regions (schema 2). Table t holds buckets t·bucketCount … (t+1)·bucketCount − 1: a key's
 * bucket is its table's offset plus its hash bucket, so ranges, freezes and moves stay plain ranges.
 */
export interface Homes {
  /** Table 0 first: the default home region's, which keys with none of the prefixes belong to. */
  readonly tables: readonly HomeTable[];
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
  readonly schemaVersion: 1 | 2;
  readonly version: number;
  readonly createdAt: string;
  readonly hash: 'sha256-u32be';
  /** Buckets per table: keys hash into 0 … bucketCount − 1, then move by their table's offset. */
  readonly bucketCount: number;
  /** Schema 2 only: the home tables. Absent: one table, every key in it. */
  readonly homes?: Homes;
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
  /** The bucket in the document's bucket space (its table's offset included). */
  readonly bucket: number;
  readonly via: LookupVia;
}

/** One problem in a document, located by JSON path (`$.buckets[3].to`). */
export interface MappingProblem {
  readonly path: string;
  readonly message: string;
}
