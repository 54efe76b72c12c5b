import { totalBuckets } from './homes';
import { BucketRange, MappingDocument } from './types';

/** The bucket space expanded (every table's): `owner[b]` is the index in `cells` of bucket b's cell. */
export interface BucketOwners {
  readonly cells: readonly string[];
  readonly owner: Int32Array;
}

export function expandBuckets(doc: MappingDocument): BucketOwners {
  const cells = Object.keys(doc.cells);
  const index = new Map(cells.map((id, i) => [id, i]));
  const owner = new Int32Array(totalBuckets(doc)).fill(-1);
  for (const range of doc.buckets) owner.fill(index.get(range.cell)!, range.from, range.to + 1);
  return { cells, owner };
}

/** Compresses an owner table back into sorted, contiguous ranges. */
export function compressBuckets({ cells, owner }: BucketOwners): BucketRange[] {
  const ranges: BucketRange[] = [];
  let from = 0;
  for (let b = 1; b <= owner.length; b++) {
    if (b === owner.length || owner[b] !== owner[from]) {
      ranges.push({ from, to: b - 1, cell: cells[owner[from]] });
      from = b;
    }
  }
  return ranges;
}

/** Buckets per cell (cells without buckets are absent). */
export function bucketCounts(doc: MappingDocument): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of doc.buckets) counts.set(r.cell, (counts.get(r.cell) ?? 0) + r.to - r.from + 1);
  return counts;
}
