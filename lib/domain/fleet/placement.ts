import { bucketCounts, MappingDocument } from '../mapping';
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
