import { ChangeOptions, MappingChangeError, proportionalParts } from './changes';
import { tableBuckets, tableOfRegion, tableView } from './homes';
import { HomeTable, Homes, HOMES_SCHEMA_VERSION, MappingDocument } from './types';
import { bucketCounts, compressBuckets, expandBuckets } from './buckets';

/**
 * Changes that bring home regions to a mapping: the conversion of a one-table document (schema 1)
 * to home tables that moves no tenant, and the change that then gives one table's buckets to its
 * own regions' cells.
 */

/**
 * A document given the fleet's home tables, moving no tenant. From one table (schema 1), every
 * table starts as a copy of its ranges, so every key still reaches the cell it reached. From home
 * tables, `homes` must list the document's tables first, unchanged, and may add tables after them
 * (a new region): each new table copies table 0, where its prefixes' keys were. Each cell is given
 * its region. The next steps (`rehomeTable`, one table at a time) move tenants.
 */
export function convertToHomes(
  doc: MappingDocument,
  homes: Homes,
  regionOf: (cell: string) => string | undefined,
  options: ChangeOptions,
): MappingDocument {
  const had = doc.homes?.tables ?? [];
  if (had.length > 1) {
    const same = (a: HomeTable, b: HomeTable | undefined) => JSON.stringify(a) === JSON.stringify(b);
    const changed = had.findIndex((table, t) => !same(table, homes.tables[t]));
    if (changed >= 0)
      throw new MappingChangeError(
        `the mapping's home table ${changed} (${had[changed].regions.join('+')}, prefixes ${had[changed].prefixes.join(', ') || 'none'}) is not the fleet's table ${changed}: a table's regions and prefixes never change once published (its tenants would move); list the mapping's tables first, in order, and add new regions after them`,
      );
    if (homes.tables.length === had.length) throw new MappingChangeError("the mapping already has the fleet file's home tables; nothing to convert");
  }
  const missing = Object.keys(doc.cells).filter((id) => regionOf(id) === undefined);
  if (missing.length > 0)
    throw new MappingChangeError(
      `cells ${missing.join(', ')} are not in the fleet file: their regions are unknown; add them, or remove them from the mapping first`,
    );
  const outside = Object.keys(doc.cells).filter((id) => tableOfRegion(homes, regionOf(id)!) === undefined);
  if (outside.length > 0) throw new MappingChangeError(`cells ${outside.join(', ')} are in regions no home table lists`);
  const freeze = doc.freeze;
  if (freeze !== undefined && (freeze.buckets.length > 0 || freeze.exact.length > 0))
    throw new MappingChangeError('the mapping has a freeze (a move is in its freeze window); finish or abort the move, then convert');
  const first = tableView(doc, 0).buckets;
  const kept = had.length > 1 ? doc.buckets : [];
  const added = homes.tables.slice(had.length > 1 ? had.length : 0).flatMap((_, i) => {
    const offset = ((had.length > 1 ? had.length : 0) + i) * doc.bucketCount;
    return first.map((r) => ({ from: r.from + offset, to: r.to + offset, cell: r.cell }));
  });
  const { freeze: _freeze, ...rest } = doc;
  return {
    ...rest,
    schemaVersion: HOMES_SCHEMA_VERSION,
    version: doc.version + 1,
    createdAt: options.now,
    homes,
    cells: Object.fromEntries(Object.entries(doc.cells).map(([id, c]) => [id, { endpoint: c.endpoint, state: c.state, region: regionOf(id)! }])),
    buckets: [...kept, ...added],
  };
}

/**
 * Gives `region`'s table to its own cells: the table's buckets held by cells of other regions go to
 * the table's active cells that `canReceive` (by `weights` when every one has a weight, else evenly),
 * each cell topped up to its share, in contiguous runs; buckets already on the table's cells stay.
 * The tenants of the moved buckets are the table's only (a key's table comes from its prefix).
 */
export function rehomeTable(
  doc: MappingDocument,
  region: string,
  options: ChangeOptions,
  canReceive: (cell: string) => boolean = () => true,
  weights?: ReadonlyMap<string, number>,
): MappingDocument {
  const homes = doc.homes;
  const table = homes === undefined ? undefined : tableOfRegion(homes, region);
  if (homes === undefined || table === undefined)
    throw new MappingChangeError(
      homes === undefined
        ? 'the mapping has no home tables; convert it first (`cellctl mapping convert`)'
        : `no home table holds ${region} (tables: ${homes.tables.map((t) => t.regions.join('+')).join(', ')})`,
    );
  const regions = homes.tables[table].regions;
  const home = (id: string) => regions.includes(doc.cells[id]?.region ?? '');
  const receivers = Object.keys(doc.cells).filter((id) => home(id) && doc.cells[id].state === 'active' && canReceive(id));
  const view = tableView(doc, table);
  const counts = bucketCounts(view);
  const holding = receivers.filter((id) => (counts.get(id) ?? 0) > 0);
  // The cells already holding the table's buckets, or, when none does, every cell of its regions that may.
  const takers = holding.length > 0 ? holding : receivers;
  if (takers.length === 0) throw new MappingChangeError(`no active cell of ${regions.join(', ')} may hold the buckets of its tenants; add one first`);
  const weighted = weights !== undefined && takers.every((id) => (weights.get(id) ?? 0) > 0);
  const shares = proportionalParts(
    doc.bucketCount,
    takers.map((id) => (weighted ? weights!.get(id)! : 1)),
  );
  const expanded = expandBuckets(view);
  const index = new Map(expanded.cells.map((id, i) => [id, i]));
  const deficit = takers.map((id, i) => Math.max(0, shares[i] - (counts.get(id) ?? 0)));
  let k = 0;
  for (let b = 0; b < expanded.owner.length; b++) {
    if (home(expanded.cells[expanded.owner[b]])) continue;
    while (k < takers.length - 1 && deficit[k] === 0) k++;
    expanded.owner[b] = index.get(takers[k])!;
    deficit[k] -= 1;
  }
  const offset = tableBuckets(doc, table).from;
  const moved = compressBuckets(expanded).map((r) => ({ from: r.from + offset, to: r.to + offset, cell: r.cell }));
  const buckets = [...doc.buckets.filter((r) => r.to < offset || r.from > offset + doc.bucketCount - 1), ...moved];
  // A range of the old document that straddles the table's edges keeps its outside part.
  for (const r of doc.buckets) {
    if (r.from < offset && r.to >= offset) buckets.push({ from: r.from, to: offset - 1, cell: r.cell });
    if (r.from <= offset + doc.bucketCount - 1 && r.to > offset + doc.bucketCount - 1)
      buckets.push({ from: offset + doc.bucketCount, to: r.to, cell: r.cell });
  }
  buckets.sort((a, b) => a.from - b.from);
  return { ...doc, version: doc.version + 1, createdAt: options.now, buckets };
}
