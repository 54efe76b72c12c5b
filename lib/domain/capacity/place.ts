import { DEFAULT_TIER } from '../fleet/defaults';
import { hotByCpu } from './judge';
import { CellCapacity, FleetCapacity } from './types';

export interface PlacementRequest {
  readonly tenant: string;
  /** The tenant's expected peak, requests per second. */
  readonly expectedRps: number;
  /** Only cells of this region. @default any region */
  readonly region?: string;
  /** Only cells of these regions: the tenant's home table's, with home regions. @default any region */
  readonly homeRegions?: readonly string[];
  /** Only cells of this shape. @default any shape */
  readonly shape?: string;
  /** Only cells of this tier. @default the fleet's default tier */
  readonly tier?: string;
}

export type Placement =
  /** `cell` takes the tenant and stays under its target (`dedicated`: the cell is the tenant's own). */
  | {
      readonly kind: 'fits';
      readonly cell: string;
      readonly peakRpsAfter: number;
      readonly targetRps: number;
      readonly utilisationAfter: number;
      readonly dedicated?: boolean;
    }
  /** No active cell has the room today, but a cell of `shape` would: add one (or move tenants away) first. */
  | { readonly kind: 'no-room'; readonly shape: string; readonly region?: string; readonly targetRps: number }
  /** The tenant alone is above the target of every shape that may take it: a dedicated cell of a larger shape, or a second key dimension. */
  | { readonly kind: 'too-big'; readonly largestTargetRps: number };

/**
 * Where a new tenant should go. A tenant with a cell dedicated to it goes there, whatever else was
 * asked. Any other tenant: best fit (the least room left after it) among the active cells of its
 * tier (the default tier unless asked) and of the region and shape asked for, never the canary, a
 * dedicated cell or a cell hot by its CPU, that stay under their target rate and their `maxTenants`.
 */
export function place(capacity: FleetCapacity, request: PlacementRequest): Placement {
  if (!(request.expectedRps >= 0) || !Number.isFinite(request.expectedRps))
    throw new Error(`expected rate ${request.expectedRps}: give requests per second as a number of 0 or more`);
  const own = capacity.cells.find((c) => c.dedicatedTo === request.tenant);
  if (own) {
    const after = own.peakRps + request.expectedRps;
    return { kind: 'fits', cell: own.cell, peakRpsAfter: after, targetRps: own.targetRps, utilisationAfter: after / own.testedRps, dedicated: true };
  }
  const tier = request.tier ?? capacity.settings.defaultTier ?? DEFAULT_TIER;
  const eligible = capacity.cells.filter(
    (c) =>
      c.dedicatedTo === undefined &&
      c.tier === tier &&
      (request.region === undefined || c.region === request.region) &&
      (request.homeRegions === undefined || request.homeRegions.includes(c.region)) &&
      (request.shape === undefined || c.shape === request.shape),
  );
  if (eligible.length === 0) {
    const tiers = [...new Set(capacity.cells.filter((c) => c.dedicatedTo === undefined && !c.canary).map((c) => c.tier))].sort();
    const of = [
      request.region && `region ${request.region}`,
      request.homeRegions && `its home ${request.homeRegions.join(' or ')}`,
      request.shape && `shape ${request.shape}`,
    ]
      .filter(Boolean)
      .join(' and ');
    throw new Error(
      `no cell ${of ? `of ${of} ` : ''}in the fleet's tier \`${tier}\` (tiers: ${tiers.join(', ')}); leave out --region/--in-shape or name a tier, region and shape the fleet has together`,
    );
  }
  const largestTargetRps = Math.max(0, ...eligible.map((c) => c.targetRps));
  if (request.expectedRps > largestTargetRps) return { kind: 'too-big', largestTargetRps };
  const room = (c: CellCapacity) => c.targetRps - c.peakRps - request.expectedRps;
  const fitting = eligible
    .filter((c) => c.state === 'active' && !c.canary && !hotByCpu(c) && room(c) >= 0 && c.activeTenants + 1 <= c.maxTenants)
    .sort((a, b) => room(a) - room(b) || a.cell.localeCompare(b.cell));
  const best = fitting[0];
  if (best) {
    const after = best.peakRps + request.expectedRps;
    return { kind: 'fits', cell: best.cell, peakRpsAfter: after, targetRps: best.targetRps, utilisationAfter: after / best.testedRps };
  }
  const biggest = [...eligible].sort((a, b) => b.targetRps - a.targetRps)[0];
  return { kind: 'no-room', shape: biggest.shape, ...(request.region ? { region: request.region } : {}), targetRps: biggest.targetRps };
}
