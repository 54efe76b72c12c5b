import { expandBuckets } from '../mapping/buckets';
import { MappingDocument } from '../mapping/types';
import { formatRanges, mergeRanges } from './subject';
import { Range } from './types';

/** The bucket moves a routing change implies, one per (source, target) pair: what `cellctl move plan` runs. */
export interface MovePlan {
  /** The mapping version the plan was made from. */
  readonly mappingVersion: number;
  readonly moves: readonly (
    | { readonly buckets: string; readonly from: string; readonly to: string; readonly bucketCount: number }
    /** One tenant (written by `cellctl mapping pin|unpin|quarantine --plan FILE`). */
    | { readonly tenant: string; readonly from: string; readonly to: string }
  )[];
}

/** Compares two documents' bucket tables: every bucket whose cell changed becomes part of a move. */
export function bucketMovePlan(before: MappingDocument, after: MappingDocument): MovePlan {
  const a = expandBuckets(before);
  const b = expandBuckets(after);
  const pairs = new Map<string, { from: string; to: string; ranges: Range[]; count: number }>();
  for (let bucket = 0; bucket < a.owner.length; bucket++) {
    const from = a.cells[a.owner[bucket]];
    const to = b.cells[b.owner[bucket]];
    if (from === to) continue;
    const key = `${from}\u0000${to}`;
    const pair = pairs.get(key) ?? { from, to, ranges: [], count: 0 };
    const last = pair.ranges[pair.ranges.length - 1];
    if (last && last.to === bucket - 1) pair.ranges[pair.ranges.length - 1] = { from: last.from, to: bucket };
    else pair.ranges.push({ from: bucket, to: bucket });
    pair.count += 1;
    pairs.set(key, pair);
  }
  return {
    mappingVersion: before.version,
    moves: [...pairs.values()].map((p) => ({ buckets: formatRanges(mergeRanges(p.ranges)), from: p.from, to: p.to, bucketCount: p.count })),
  };
}
