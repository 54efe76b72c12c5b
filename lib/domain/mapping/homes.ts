import { bucketOf } from './hash';
import { Homes, LookupResult, MappingDocument } from './types';

/**
 * Home regions in a mapping document (schema 2): which table a key belongs to, and where each
 * table's buckets sit in the document's one bucket space. A schema-1 document is one table.
 */

/** Most tables a document may have: one per region of the largest fleet, with room to spare. */
export const MAX_HOME_TABLES = 64;

export function tableCount(doc: Pick<MappingDocument, 'homes'>): number {
  return doc.homes?.tables.length ?? 1;
}

/** Buckets in the document's bucket space: every table's. */
export function totalBuckets(doc: Pick<MappingDocument, 'homes' | 'bucketCount'>): number {
  return doc.bucketCount * tableCount(doc);
}

/** Table t's buckets, inclusive. */
export function tableBuckets(doc: Pick<MappingDocument, 'bucketCount'>, table: number): { from: number; to: number } {
  return { from: table * doc.bucketCount, to: (table + 1) * doc.bucketCount - 1 };
}

/** The table a bucket of the document's space belongs to. */
export function tableOfBucket(doc: Pick<MappingDocument, 'bucketCount'>, bucket: number): number {
  return Math.floor(bucket / doc.bucketCount);
}

/**
 * A key's table, as a function: the prefix that starts it names its table (a document's prefixes
 * never start one another, so at most one does), else table 0, the default home's. Prefixes are grouped by
 * first character: most keys are compared with none or one.
 */
export function homeTableOf(homes: Homes | undefined): (key: string) => number {
  if (homes === undefined) return () => 0;
  const byFirst = new Map<number, [string, number][]>();
  homes.tables.forEach((table, t) => {
    for (const prefix of table.prefixes) {
      const group = byFirst.get(prefix.charCodeAt(0)) ?? [];
      group.push([prefix, t]);
      byFirst.set(prefix.charCodeAt(0), group);
    }
  });
  return (key: string) => {
    const group = byFirst.get(key.charCodeAt(0));
    if (group !== undefined) for (const [prefix, t] of group) if (key.startsWith(prefix)) return t;
    return 0;
  };
}

/** The table holding `region`'s tenants, or undefined when no table lists it. */
export function tableOfRegion(homes: Homes | undefined, region: string): number | undefined {
  if (homes === undefined) return 0;
  const t = homes.tables.findIndex((table) => table.regions.includes(region));
  return t < 0 ? undefined : t;
}

/** A table named for people: its regions joined (`eu-west-1`, `us-east-1+us-west-2`). */
export function tableName(homes: Homes | undefined, table: number): string {
  return homes === undefined ? 'all regions' : homes.tables[table].regions.join('+');
}

/**
 * The region a key's tenant lives in under `homes`, as the router sees it: the region of its
 * table when the table has one region; a group's regions joined otherwise.
 */
export function homeOf(homes: Homes | undefined, key: string): string {
  return tableName(homes, homeTableOf(homes)(key));
}

/** Two home rules send every key to the same table. */
export function sameHomes(a: Homes | undefined, b: Homes | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/**
 * Table t alone, as a one-table document (its buckets numbered from 0, no freeze): what a change
 * written for one table (add-cell, drain) works on. Ranges are cut at the table's edges.
 */
export function tableView(doc: MappingDocument, table: number): MappingDocument {
  const { from, to } = tableBuckets(doc, table);
  const buckets = doc.buckets
    .filter((r) => r.to >= from && r.from <= to)
    .map((r) => ({ from: Math.max(r.from, from) - from, to: Math.min(r.to, to) - from, cell: r.cell }));
  const { homes: _homes, freeze: _freeze, ...rest } = doc;
  return { ...rest, schemaVersion: 1, buckets };
}

/**
 * A change made table by table: `change` gets each table's view (tableView) and returns it changed,
 * or undefined to leave the table as it is. The tables' buckets are put back side by side; the
 * cells are those of the first changed view (a change lists the same cells in every table). One
 * new version, as the change would make for a one-table document.
 */
export function changeEachTable(
  doc: MappingDocument,
  change: (view: MappingDocument, table: number) => MappingDocument | undefined,
): MappingDocument {
  if (doc.homes === undefined) return change(doc, 0) ?? doc;
  let changed: MappingDocument | undefined;
  const buckets = doc.homes.tables.flatMap((_, t) => {
    const view = tableView(doc, t);
    const after = change(view, t);
    changed ??= after;
    const offset = t * doc.bucketCount;
    return (after ?? view).buckets.map((r) => ({ from: r.from + offset, to: r.to + offset, cell: r.cell }));
  });
  if (changed === undefined) return doc;
  const cells = Object.fromEntries(Object.entries(changed.cells).map(([id, c]) => [id, { ...c, region: doc.cells[id]?.region ?? c.region }]));
  return { ...doc, version: changed.version, createdAt: changed.createdAt, cells, buckets };
}

/**
 * `result` (a lookup) as it would be for a tenant of `table`: a key routed by its bucket takes
 * that table's bucket of the same hash; one routed by an override is unchanged (overrides come first).
 */
export function lookupInTable(doc: MappingDocument, result: LookupResult, table: number): LookupResult {
  if (result.via !== 'bucket') return result;
  const bucket = table * doc.bucketCount + (result.bucket % doc.bucketCount);
  const range = doc.buckets.find((r) => r.from <= bucket && bucket <= r.to);
  return { ...result, bucket, cell: range!.cell };
}

/** A key's bucket in the mapping's bucket space: its hash bucket plus its home table's offset. */
export function homeBucketOf(key: string, bucketCount: number, homes: Homes | undefined): number {
  return homeTableOf(homes)(key) * bucketCount + bucketOf(key, bucketCount);
}
