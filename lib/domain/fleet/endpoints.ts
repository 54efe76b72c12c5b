import { adoptionMapping, initialMapping, MappingDocument } from '../mapping';
import { routedCells } from './cell-zero';
import { holdsBuckets } from './placement';
import { Fleet } from './types';

/**
 * Where each cell is reached from a router, derived from the fleet alone, so that the router stacks,
 * the seeded mapping and `cellctl mapping add-cell` always agree. Pure: no CDK, no AWS SDK.
 */

/** Replaced by `https` for a cell with a certificate, else `http` (its PrivateLink listener is on 443 or 80). */
export const SCHEME_PLACEHOLDER = '{scheme}';

const TEMPLATE_HOST = /^(?:https?|\{scheme\}):\/\/\{cell\}\.([a-z0-9{}.-]+)\/?$/;

/** The endpoint of `cellId` in the mapping: `router.cellEndpointTemplate` with `{cell}`, `{app}` and `{scheme}` filled in. */
export function cellEndpoint(fleet: Pick<Fleet, 'app' | 'router' | 'cells' | 'cellZero'>, cellId: string): string {
  const cell = routedCells(fleet).find((c) => c.id === cellId);
  if (!cell)
    throw new Error(
      `cell \`${cellId}\` is not in the fleet (cells: ${routedCells(fleet)
        .map((c) => c.id)
        .join(', ')}); add it to cells.config.ts first`,
    );
  return fleet.router.cellEndpointTemplate.replace('{cell}', cellId).replace('{app}', fleet.app).replace(SCHEME_PLACEHOLDER, cell.scheme);
}

/**
 * The private DNS zone every router VPC holds, naming each cell after its interface endpoint, when
 * the template's host is `{cell}.<zone>` (the default: `<app>.cells.internal`). Undefined when the
 * template points somewhere else: then the names are yours to create.
 */
export function cellZoneName(fleet: Pick<Fleet, 'app' | 'router'>): string | undefined {
  const match = TEMPLATE_HOST.exec(fleet.router.cellEndpointTemplate);
  return match ? match[1].replace('{app}', fleet.app) : undefined;
}

/** Version 1 of the mapping as the fleet defines it: what the router stacks seed and `cellctl mapping init` writes. */
export const SEED_CREATED_AT = '1970-01-01T00:00:00.000Z';

/**
 * The first mapping of the fleet: buckets spread by shape over the active regular cells of the
 * default tier, `internal-` on the canary, each dedicated cell's tenant pinned to it, every endpoint
 * from `cellEndpoint`; with a cell zero, every bucket on it and no override
 * (adoptionMapping). Its `createdAt` is fixed, so the document (and the router templates that seed
 * it) is the same on every synth, and `cellctl mapping init` writes exactly what the routers were
 * seeded with.
 */
export function seedMapping(fleet: Pick<Fleet, 'app' | 'router' | 'cells' | 'bucketCount' | 'cellZero' | 'capacity' | 'homes'>): MappingDocument {
  // Weighted by each shape's tested rate: a small cell takes the buckets its capacity can serve.
  const cells = fleet.cells.map((c) => ({
    id: c.id,
    state: c.state,
    canary: c.canary,
    endpoint: cellEndpoint(fleet, c.id),
    region: c.region,
    weight: c.shape.limits.requestsPerSecond,
    // Another tier's cells and dedicated ones take no bucket: nobody lands there unplaced.
    holdsBuckets: holdsBuckets(fleet, c),
    ...(c.dedicatedTo !== undefined ? { dedicatedTo: c.dedicatedTo } : {}),
  }));
  const options = { now: SEED_CREATED_AT };
  // Under a cell zero, one table on it (its tenants are where they are), whatever the fleet's homes:
  // `cellctl mapping convert` gives the mapping its home tables later, moving no tenant.
  if (fleet.cellZero) {
    return adoptionMapping(
      { id: fleet.cellZero.id, state: 'active', endpoint: cellEndpoint(fleet, fleet.cellZero.id) },
      cells,
      fleet.bucketCount,
      options,
    );
  }
  // With home regions, a table per region (or group): each over its own cells (schema 2).
  return initialMapping(cells, fleet.bucketCount, options, fleet.homes);
}
