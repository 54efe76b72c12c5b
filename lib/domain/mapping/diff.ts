import { BucketOwners, bucketCounts, expandBuckets } from './buckets';
import { homeTableOf, sameHomes, tableCount } from './homes';
import { lookup } from './lookup';
import { MappingDocument } from './types';

export interface BucketMove {
  readonly from: string;
  readonly to: string;
  readonly buckets: number;
}

export interface OverrideChange {
  readonly kind: 'exact' | 'prefix';
  readonly key: string;
  /** Undefined when the override was added. */
  readonly before?: string;
  /** Undefined when the override was removed. */
  readonly after?: string;
}

export interface MappingDiff {
  readonly fromVersion: number;
  readonly toVersion: number;
  /** Bucket moves per (from → to) pair, largest first. */
  readonly moves: readonly BucketMove[];
  readonly bucketsMoved: number;
  /** Share of all valid keys that changed prefix overrides can cover (see `prefixShare`), 0 … 1. */
  readonly prefixShare: number;
  /** Share of the keyspace whose cell may have changed: the buckets moved plus what changed prefixes cover, 0 … 1. */
  readonly movedShare: number;
  readonly overrides: readonly OverrideChange[];
  readonly cellsAdded: readonly string[];
  readonly cellsRemoved: readonly string[];
  readonly stateChanges: readonly { cell: string; before: string; after: string }[];
}

/** Characters a key may start with (letters and digits), and may continue with (also `._:@-`): KEY_PATTERN. */
const FIRST_CHARACTERS = 62;
const NEXT_CHARACTERS = 67;
const MAX_KEY_LENGTH = 128;

/**
 * Share of all valid keys (KEY_PATTERN: up to 128 characters) that start with `prefix`: what a
 * prefix override can cover, about 1/62 for one character and 67 times less per character after it.
 * Real tenant ids are rarely spread like this (many share a first letter), so it is a floor for
 * how much a prefix moves, never an estimate of its tenants.
 */
export function prefixShare(prefix: string): number {
  const keysFrom = (length: number) => (NEXT_CHARACTERS ** (MAX_KEY_LENGTH - length + 1) - 1) / (NEXT_CHARACTERS - 1);
  return keysFrom(prefix.length) / (FIRST_CHARACTERS * keysFrom(1));
}

/** What changes between two documents with the same bucket count. */
export function diffMappings(before: MappingDocument, after: MappingDocument): MappingDiff {
  if (before.bucketCount !== after.bucketCount) {
    throw new Error(`cannot diff: bucketCount ${before.bucketCount} vs ${after.bucketCount}; every key would move`);
  }
  const a = ownersIn(before, after);
  const b = expandBuckets(after);
  const pairs = new Map<string, number>();
  let moved = 0;
  const movedPerTable = new Array<number>(tableCount(after)).fill(0);
  for (let i = 0; i < a.owner.length; i++) {
    const from = a.cells[a.owner[i]];
    const to = b.cells[b.owner[i]];
    if (from !== to) {
      moved += 1;
      movedPerTable[Math.floor(i / after.bucketCount)] += 1;
      const pair = `${from}\u0000${to}`;
      pairs.set(pair, (pairs.get(pair) ?? 0) + 1);
    }
  }
  const moves = [...pairs.entries()]
    .map(([pair, buckets]) => {
      const [from, to] = pair.split('\u0000');
      return { from, to, buckets };
    })
    .sort((x, y) => y.buckets - x.buckets || x.from.localeCompare(y.from) || x.to.localeCompare(y.to));
  const overrides: OverrideChange[] = [];
  for (const kind of ['exact', 'prefix'] as const) {
    const old = before.overrides[kind];
    const now = after.overrides[kind];
    for (const key of new Set([...Object.keys(old), ...Object.keys(now)])) {
      if (old[key] !== now[key]) overrides.push({ kind, key, before: old[key], after: now[key] });
    }
  }
  // Keys under a changed prefix that is itself under another changed prefix are counted once.
  const changedPrefixes = overrides.filter((o) => o.kind === 'prefix').map((o) => o.key);
  const covering = changedPrefixes.filter((p) => !changedPrefixes.some((q) => q !== p && p.startsWith(q)));
  const prefixes = covering.reduce((sum, p) => sum + prefixShare(p), 0);
  const beforeIds = Object.keys(before.cells);
  const afterIds = Object.keys(after.cells);
  return {
    fromVersion: before.version,
    toVersion: after.version,
    moves,
    bucketsMoved: moved,
    prefixShare: prefixes,
    // Per table: how a table's tenants are spread over the keyspace is not known, so the share is
    // that of the table that moves most (a table may hold every tenant).
    movedShare: Math.min(1, Math.max(...movedPerTable) / after.bucketCount + prefixes),
    overrides,
    cellsAdded: afterIds.filter((id) => !before.cells[id]),
    cellsRemoved: beforeIds.filter((id) => !after.cells[id]),
    stateChanges: beforeIds
      .filter((id) => after.cells[id] && after.cells[id].state !== before.cells[id].state)
      .map((id) => ({ cell: id, before: before.cells[id].state, after: after.cells[id].state })),
  };
}

/**
 * `before`'s bucket owners laid out in `after`'s bucket space: the same when both have the same home
 * tables; else each of `after`'s tables takes the owners of the table of `before` its keys were in
 * (a one-table document: table 0 for all; a table added for new prefixes: the table those keys
 * came from). A change of home rules that splits one of `after`'s tables over several of
 * `before`'s cannot be compared bucket by bucket, and is refused.
 */
function ownersIn(before: MappingDocument, after: MappingDocument): BucketOwners {
  const expanded = expandBuckets(before);
  if (sameHomes(before.homes, after.homes)) return expanded;
  const wasIn = homeTableOf(before.homes);
  const beforePrefixes = before.homes?.tables.flatMap((t) => t.prefixes) ?? [];
  const afterTables = after.homes?.tables ?? [{ regions: [], prefixes: [] }];
  const afterPrefixes = afterTables.flatMap((t) => t.prefixes);
  const source = afterTables.map((table, t) => {
    const from = new Set<number>();
    for (const p of table.prefixes) {
      from.add(wasIn(p));
      for (const q of beforePrefixes) if (q.startsWith(p)) from.add(wasIn(q));
    }
    if (t === 0) {
      from.add(0);
      for (const q of beforePrefixes) if (!afterPrefixes.some((p) => q.startsWith(p))) from.add(wasIn(q));
    }
    if (from.size !== 1)
      throw new Error(
        `cannot diff v${before.version} and v${after.version}: the keys of the home table of ${table.regions.join(', ')} were in ${from.size} tables before; change home rules one table at a time`,
      );
    return [...from][0];
  });
  const owner = new Int32Array(after.bucketCount * afterTables.length);
  source.forEach((s, t) => owner.set(expanded.owner.subarray(s * before.bucketCount, (s + 1) * before.bucketCount), t * after.bucketCount));
  return { cells: expanded.cells, owner };
}

export interface GuardOptions {
  /** Largest share of the keyspace one change may move. @default 0.25 */
  readonly maxMovedShare?: number;
}

export const DEFAULT_MAX_MOVED_SHARE = 0.25;

/**
 * Reasons to refuse a change unless forced: it moves more than `maxMovedShare` of the keyspace, or an
 * active cell that held buckets holds none afterwards (a cell silently emptied).
 */
export function guardChange(before: MappingDocument, after: MappingDocument, options: GuardOptions = {}): string[] {
  const limit = options.maxMovedShare ?? DEFAULT_MAX_MOVED_SHARE;
  const diff = diffMappings(before, after);
  const reasons: string[] = [];
  if (diff.movedShare > limit) {
    reasons.push(
      `moves ${(diff.movedShare * 100).toFixed(1)}% of the keyspace (limit ${(limit * 100).toFixed(1)}%); split the change or pass --force`,
    );
  }
  const was = bucketCounts(before);
  const now = bucketCounts(after);
  for (const [id, cell] of Object.entries(after.cells)) {
    if (cell.state === 'active' && (was.get(id) ?? 0) > 0 && (now.get(id) ?? 0) === 0) {
      reasons.push(`leaves active cell \`${id}\` with no buckets; drain it instead, or pass --force`);
    }
  }
  return reasons;
}

/** What going from `before` to `after` re-routes: buckets to another cell, pinned keys and prefixes to another cell. */
export interface Rerouted {
  readonly buckets: number;
  /** Exact keys whose override now sends them elsewhere than before. */
  readonly keys: readonly string[];
  /** Prefixes whose override changed. */
  readonly prefixes: readonly string[];
}

export function reroutedBy(before: MappingDocument, after: MappingDocument): Rerouted {
  const diff = diffMappings(before, after);
  const keys = diff.overrides.filter((o) => o.kind === 'exact' && lookup(before, o.key).cell !== lookup(after, o.key).cell).map((o) => o.key);
  const prefixes = diff.overrides.filter((o) => o.kind === 'prefix').map((o) => o.key);
  return { buckets: diff.bucketsMoved, keys, prefixes };
}

export interface PublishGuardOptions extends GuardOptions {
  /** The workload is stateless: re-routing keys without their data is allowed. @default false */
  readonly routingOnly?: boolean;
  /** Skip `guardChange` (the moved share, an emptied cell), as the change commands' --force does. @default false */
  readonly force?: boolean;
}

/**
 * Reasons to refuse publishing `after` over `before`, the document in force: the change commands'
 * guard (`guardChange`), and any key re-routed without its data unless the workload is stateless
 * (`routingOnly`): on a stateful one those tenants would lose sight of their rows. Moves with their
 * data are published by `cellctl move`, not by hand.
 */
export function publishRefusals(before: MappingDocument, after: MappingDocument, options: PublishGuardOptions = {}): string[] {
  const reasons = options.force ? [] : guardChange(before, after, options);
  if (options.routingOnly) return reasons;
  const { buckets, keys, prefixes } = reroutedBy(before, after);
  const parts = [
    ...(buckets > 0 ? [`${buckets} bucket(s)`] : []),
    ...(keys.length > 0 ? [`${keys.length} pinned key(s) (${keys.slice(0, 3).join(', ')}${keys.length > 3 ? ', …' : ''})`] : []),
    ...(prefixes.length > 0 ? [`prefix(es) ${prefixes.slice(0, 3).join(', ')}${prefixes.length > 3 ? ', …' : ''}`] : []),
  ];
  if (parts.length > 0)
    reasons.push(
      `re-routes ${parts.join(', ')} to other cells without their data: move them with \`cellctl move plan FILE\` or \`cellctl move tenant KEY --to CELL\` (the changes' --plan FILE writes the plan), or, for a stateless workload, pass --routing-only`,
    );
  return reasons;
}
