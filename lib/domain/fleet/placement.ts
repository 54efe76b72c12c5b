import { bucketCounts, diffMappings, lookup, MappingDocument } from '../mapping';
import { Cell, Fleet } from './types';

/**
 * Tiers and dedicated cells, as the mapping must respect them. Only regular cells of the default
 * tier hold buckets (where a tenant nobody placed lands); a cell of another tier takes tenants by
 * placement and pins; a dedicated cell serves its one tenant through an exact override and nothing
 * else. Pure: no CDK, no AWS SDK.
 */

/** Whether `cell` takes a share of the buckets. */
export function holdsBuckets(fleet: Pick<Fleet, 'capacity'>, cell: Pick<Cell, 'canary' | 'tier' | 'dedicatedTo'>): boolean {
  return !cell.canary && cell.dedicatedTo === undefined && cell.tier === fleet.capacity.defaultTier;
}

/**
 * What `doc` does against the fleet's tiers and dedicated cells, one line each: buckets on a cell
 * that holds none (another tier's, a dedicated one), another tenant pinned to a dedicated cell, a
 * prefix override onto one. An empty list: the document respects them. Cells the fleet does not
 * name (cell zero, cells being added) are not judged.
 */
export function mappingPlacementProblems(fleet: Pick<Fleet, 'cells' | 'capacity'>, doc: MappingDocument): string[] {
  const problems: string[] = [];
  const counts = bucketCounts(doc);
  for (const cell of fleet.cells) {
    const buckets = counts.get(cell.id) ?? 0;
    if (cell.dedicatedTo !== undefined) {
      if (buckets > 0)
        problems.push(
          `cell \`${cell.id}\` is dedicated to \`${cell.dedicatedTo}\` but holds ${buckets} buckets; give them to cells of the default tier`,
        );
      for (const [key, to] of Object.entries(doc.overrides.exact))
        if (to === cell.id && key !== cell.dedicatedTo)
          problems.push(
            `cell \`${cell.id}\` is dedicated to \`${cell.dedicatedTo}\`; tenant \`${key}\` is pinned to it too (pin it to a cell of its tier)`,
          );
      for (const [prefix, to] of Object.entries(doc.overrides.prefix))
        if (to === cell.id)
          problems.push(`cell \`${cell.id}\` is dedicated to \`${cell.dedicatedTo}\`; prefix \`${prefix}\` routes other tenants to it`);
    } else if (buckets > 0 && !cell.canary && cell.tier !== fleet.capacity.defaultTier) {
      problems.push(
        `cell \`${cell.id}\` is of tier \`${cell.tier}\` but holds ${buckets} buckets; only cells of the default tier \`${fleet.capacity.defaultTier}\` hold buckets (its tenants come by \`cellctl place --tier ${cell.tier}\`)`,
      );
    }
  }
  return problems;
}

/** Buckets and overridden keys a change moves from the cells of one region to those of another (or the same). */
export interface RegionMove {
  readonly from: string;
  readonly to: string;
  readonly buckets: number;
  /** Exact pins whose key now goes from a cell of `from` to one of `to`; and prefix overrides, `by bucket` where one was added or removed. */
  readonly overrides: number;
}

/**
 * The moves from `before` to `after` by the regions of their cells (`unknown` for a cell the fleet
 * file does not name): within a region first, then across, largest first. A move across regions
 * takes the tenants' data out of their region.
 */
export function movesByRegion(before: MappingDocument, after: MappingDocument, fleet: Pick<Fleet, 'cells'>): RegionMove[] {
  const diff = diffMappings(before, after);
  const regionOf = new Map(fleet.cells.map((c) => [c.id, c.region]));
  const region = (cell: string | undefined) => (cell === undefined ? BY_BUCKET : (regionOf.get(cell) ?? 'unknown'));
  const pairs = new Map<string, { from: string; to: string; buckets: number; overrides: number }>();
  const entry = (from: string, to: string) => {
    const key = `${from}\u0000${to}`;
    if (!pairs.has(key)) pairs.set(key, { from, to, buckets: 0, overrides: 0 });
    return pairs.get(key)!;
  };
  for (const m of diff.moves) entry(region(m.from), region(m.to)).buckets += m.buckets;
  for (const o of diff.overrides) {
    // An exact pin's key went, and goes, to one cell each side, its bucket's where it has no pin.
    if (o.kind === 'exact') entry(region(lookup(before, o.key).cell), region(lookup(after, o.key).cell)).overrides += 1;
    else entry(region(o.before), region(o.after)).overrides += 1;
  }
  return [...pairs.values()].sort(
    (a, b) => Number(a.from !== a.to) - Number(b.from !== b.to) || b.buckets - a.buckets || b.overrides - a.overrides || a.from.localeCompare(b.from),
  );
}

/** The "region" of a prefix override's keys where none was set: they went (or now go) by their buckets. */
const BY_BUCKET = 'by bucket';
