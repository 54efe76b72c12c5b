import { expandBuckets } from './buckets';
import { createKeyHasher } from './hash';
import { createBatchHasher } from './hash-batch';
import { homeTableOf } from './homes';
import { keyProblem } from './key';
import { LookupResult, MappingDocument } from './types';

/** A key that is not a valid partition key: the router answers 400, the CLI exits 1. */
export class InvalidKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidKeyError';
  }
}

/** A document indexed for lookups: bucket table as a typed array, overrides as maps. */
export interface CompiledMapping {
  readonly document: MappingDocument;
  /** Routes a key; throws `InvalidKeyError` for an invalid key. */
  lookup(key: string): LookupResult;
  /**
   * Routes many keys (same answers as `lookup`, in order), hashing them four at a time with SIMD:
   * the fast path for bulk questions such as where a whole tenant list goes. Throws
   * `InvalidKeyError` naming the first invalid key and its position, before routing any.
   */
  lookupMany(keys: readonly string[]): LookupResult[];
}

/** Indexes a (valid) document for fast lookups. */
export function compileMapping(document: MappingDocument): CompiledMapping {
  const { cells: cellIds, owner } = expandBuckets(document);
  const exact = new Map(Object.entries(document.overrides.exact));
  // Prefixes grouped by first character, longest first: most keys match no group, and a key that
  // does is compared with `startsWith` (no substring allocated) until the longest match.
  const prefixesByFirst = new Map<number, [string, string][]>();
  for (const [prefix, cell] of Object.entries(document.overrides.prefix)) {
    const group = prefixesByFirst.get(prefix.charCodeAt(0)) ?? [];
    group.push([prefix, cell]);
    prefixesByFirst.set(prefix.charCodeAt(0), group);
  }
  for (const group of prefixesByFirst.values()) group.sort((a, b) => b[0].length - a[0].length);
  const hash = createKeyHasher();
  const mask = document.bucketCount - 1;
  // Home regions (schema 2): the key's table moves its hash bucket into the table's part of the space.
  const tableOf = homeTableOf(document.homes);
  const shift = document.homes === undefined ? undefined : document.bucketCount;
  const bucketOf = (key: string, hashed: number) => (shift === undefined ? hashed & mask : tableOf(key) * shift + (hashed & mask));
  let hashMany: ReturnType<typeof createBatchHasher> | undefined;
  const route = (key: string, bucket: number): LookupResult => {
    const pinned = exact.get(key);
    if (pinned !== undefined) return { key, bucket, cell: pinned, via: 'exact' };
    const candidates = prefixesByFirst.get(key.charCodeAt(0));
    if (candidates !== undefined) {
      for (const [prefix, cell] of candidates) {
        if (key.startsWith(prefix)) return { key, bucket, cell, via: 'prefix' };
      }
    }
    return { key, bucket, cell: cellIds[owner[bucket]], via: 'bucket' };
  };
  return {
    document,
    lookup(key: string): LookupResult {
      const problem = keyProblem(key);
      if (problem !== undefined) throw new InvalidKeyError(problem);
      return route(key, bucketOf(key, hash(key)));
    },
    lookupMany(keys: readonly string[]): LookupResult[] {
      for (let i = 0; i < keys.length; i++) {
        const problem = keyProblem(keys[i]);
        if (problem !== undefined) throw new InvalidKeyError(`key ${i + 1} of ${keys.length}: ${problem}`);
      }
      hashMany ??= createBatchHasher();
      const hashes = new Uint32Array(keys.length);
      hashMany(keys, hashes);
      const results = new Array<LookupResult>(keys.length);
      for (let i = 0; i < keys.length; i++) results[i] = route(keys[i], bucketOf(keys[i], hashes[i]));
      return results;
    },
  };
}

// Documents are immutable values, so a compiled index can be remembered per document object.
const compiled = new WeakMap<MappingDocument, CompiledMapping>();

function compiledFor(doc: MappingDocument): CompiledMapping {
  let index = compiled.get(doc);
  if (!index) {
    index = compileMapping(doc);
    compiled.set(doc, index);
  }
  return index;
}

/** Routes `key` with `doc`: exact override, else longest prefix override, else its bucket's cell. */
export function lookup(doc: MappingDocument, key: string): LookupResult {
  return compiledFor(doc).lookup(key);
}

/** Routes many keys with `doc`, like `lookup` on each (see `CompiledMapping.lookupMany`). */
export function lookupMany(doc: MappingDocument, keys: readonly string[]): LookupResult[] {
  return compiledFor(doc).lookupMany(keys);
}
