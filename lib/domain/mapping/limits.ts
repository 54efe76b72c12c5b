/**
 * How large a mapping document a router task can hold, and how large a version number may grow.
 * A router task keeps a document three times over: HAProxy's maps (two versions of each while a new
 * one is staged and committed) and the agent's parsed copy. Every task of every group loads the same
 * document at once, so a document that does not fit takes all of them out together: it is refused at
 * `validate`, `publish` and by the agent instead.
 */

/** Memory of a router task: HAProxy and the agent together (Fargate's hard limit for the task). */
export const ROUTER_TASK_MEMORY_MIB = 2048;

/**
 * Of the task's memory, what is not for client connections (`connectionLimits`): HAProxy's and the
 * agent's own footprint (21 and 95 MiB measured idle, the agent as `cellctl router local` runs it),
 * the mapping (`MAPPING_MEMORY_MIB`), and HAProxy's stick tables (tenants' buckets, 32 MiB; client
 * addresses, 16 MiB): 356 MiB, rounded up.
 */
export const ROUTER_RESERVED_MIB = 384;

/** Of `ROUTER_RESERVED_MIB`, what the mapping may take: HAProxy's maps during a swap and the agent's copy. */
export const MAPPING_MEMORY_MIB = 192;

/**
 * What a document costs a router task at its peak, a large document applied over another as large
 * (the agent holds the one in force and the new one, HAProxy the committed and the staged version
 * of each map): about 1,125 bytes per map entry and 9.4 bytes per byte of the document's JSON,
 * measured by `npm run bench:router-memory` (100,000 pins of 15-character keys: 1,381 bytes a pin;
 * 160,000 of 128-character keys, 21.4 MiB: 2,438 bytes a pin), rounded up. Both count: a document of
 * long keys costs far more per entry than one of short keys.
 */
export const TASK_BYTES_PER_ENTRY = 1200;
export const TASK_BYTES_PER_DOCUMENT_BYTE = 10;

export interface DocumentLimits {
  /** Map entries: exact overrides, prefixes, frozen keys and bucket ranges together. */
  readonly maxEntries: number;
  /** Bytes of the document's JSON text. */
  readonly maxBytes: number;
  /** What entries and bytes together may cost (`documentCost`), in bytes of the task's memory. */
  readonly maxCost: number;
}

/** The memory a document of `entries` map entries and `bytes` of JSON costs a router task at its peak. */
export function documentCost(entries: number, bytes: number): number {
  return entries * TASK_BYTES_PER_ENTRY + bytes * TASK_BYTES_PER_DOCUMENT_BYTE;
}

/** What a router task with `mappingMiB` set aside for the mapping holds. */
export function documentLimits(mappingMiB = MAPPING_MEMORY_MIB): DocumentLimits {
  const budget = mappingMiB * 1024 * 1024;
  return {
    // Each alone, as though the other cost nothing: the agent refuses at once what passes either;
    // `maxCost` holds them together.
    maxEntries: Math.floor(budget / TASK_BYTES_PER_ENTRY / 1000) * 1000,
    maxBytes: Math.floor(budget / TASK_BYTES_PER_DOCUMENT_BYTE / (1024 * 1024)) * 1024 * 1024,
    maxCost: budget,
  };
}

export const DOCUMENT_LIMITS = documentLimits();

/**
 * The largest version a document may carry: far below 2^53, so `version + 1` (the next change, a
 * rollback's new version) is always an exact integer greater than it, for 2^52 more versions.
 */
export const MAX_MAPPING_VERSION = 2 ** 52;

/** Map entries a document becomes in HAProxy (what `DocumentLimits.maxEntries` counts). */
export function documentEntries(doc: { overrides?: unknown; buckets?: unknown; freeze?: unknown }): number {
  const count = (o: unknown) => (typeof o === 'object' && o !== null ? (Array.isArray(o) ? o.length : countKeys(o as Record<string, unknown>)) : 0);
  const overrides = (doc.overrides ?? {}) as { exact?: unknown; prefix?: unknown };
  const freeze = (doc.freeze ?? {}) as { exact?: unknown; buckets?: unknown };
  return count(overrides.exact) + count(overrides.prefix) + count(doc.buckets) + count(freeze.exact) + count(freeze.buckets);
}

/** Own keys of an object; for-in, since Object.keys on a 100,000-key object allocates an array as large. */
function countKeys(o: Record<string, unknown>): number {
  let n = 0;
  for (const _key in o) n++;
  return n;
}
