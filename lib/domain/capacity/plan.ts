import { DEFAULT_TIER } from '../fleet/defaults';
import { compileMapping } from '../mapping/lookup';
import { MappingDocument } from '../mapping/types';
import { MovePlan } from '../moves/plan';
import { hotByCpu } from './judge';
import { CellCapacity, FleetCapacity, TenantLoad } from './types';

/** One move the plan makes: a tenant, or the one bucket holding only that tenant. */
export interface PlannedMove {
  readonly tenant: string;
  /** Set when the move takes the tenant's bucket (its only active tenant) instead of pinning it. */
  readonly bucket?: number;
  readonly from: string;
  readonly to: string;
  /** The tenant's peak rate, which leaves `from` and arrives at `to`. */
  readonly peakRps: number;
}

export interface CellAfterPlan {
  readonly cell: string;
  readonly peakRpsBefore: number;
  readonly peakRpsAfter: number;
  readonly targetRps: number;
  readonly testedRps: number;
  readonly tenantsBefore: number;
  readonly tenantsAfter: number;
}

/** What `cellctl capacity plan` decides. */
export interface CapacityPlan {
  readonly mappingVersion: number;
  readonly moves: readonly PlannedMove[];
  readonly cells: readonly CellAfterPlan[];
  /** Cells still above the target after the moves, and by how much. */
  readonly unresolved: readonly { readonly cell: string; readonly excessRps: number }[];
  /** Cells to add (per region, shape and tier, named when not the default) so what the moves could not take has room; plan again once they are active. */
  readonly cellsToAdd: readonly { readonly region: string; readonly shape: string; readonly tier?: string; readonly count: number }[];
  /** Tenants whose own peak is above the target of every cell they could move to: no move helps them. */
  readonly tooBig: readonly { readonly tenant: string; readonly cell: string; readonly peakRps: number; readonly targetRps: number }[];
}

const peakOf = (t: TenantLoad) => t.peakRps ?? t.rps;

interface Candidate {
  readonly tenant: string;
  readonly peakRps: number;
  readonly bucket?: number;
}

/**
 * Moves that bring every cell under its target, moving as few tenants as possible:
 * - cells above their target are relieved largest excess first; only cells at or under their
 *   target before the plan (rate, and CPU where it was measured), active, not the canary, in the same
 *   region, receive tenants, and never above their target rate or their shape's `maxTenants`;
 * - from a hot cell, the smallest tenant that covers what is left of the excess on its own is
 *   moved if one fits somewhere; otherwise the largest tenant that fits, and so on;
 * - a receiving cell is chosen by best fit (the least room left after the move), so the emptiest
 *   cells stay free for the next large tenant;
 * - each tenant moves at most once. A tenant routed by its bucket alone, the only active tenant
 *   of that bucket, moves as that bucket (no pin added to the mapping); any other tenant moves as a
 *   tenant (its move pins it).
 * What no move can take is reported as cells to add and tenants too big for any cell.
 */
export function planCapacity(capacity: FleetCapacity, mapping: MappingDocument): CapacityPlan {
  const compiled = compileMapping(mapping);
  const cells = capacity.cells;
  const load = new Map(cells.map((c) => [c.cell, c.peakRps]));
  const tenants = new Map(cells.map((c) => [c.cell, c.activeTenants]));
  const receivers = new Set(
    cells
      .filter(
        (c) =>
          c.state === 'active' &&
          !c.canary &&
          c.dedicatedTo === undefined &&
          c.peakRps <= c.targetRps &&
          !hotByCpu(c) &&
          c.activeTenants <= c.maxTenants &&
          mapping.cells[c.cell]?.state === 'active',
      )
      .map((c) => c.cell),
  );
  const byId = new Map(cells.map((c) => [c.cell, c]));
  const moves: PlannedMove[] = [];
  const moved = new Set<string>();
  const tooBig: CapacityPlan['tooBig'][number][] = [];

  const hot = cells
    .filter((c) => c.peakRps > c.targetRps)
    .sort((a, b) => b.peakRps - b.targetRps - (a.peakRps - a.targetRps) || a.cell.localeCompare(b.cell));
  for (const source of hot) {
    // A dedicated cell's tenant stays on its own cell: past its target it needs a larger shape, not a move.
    if (source.dedicatedTo !== undefined) {
      tooBig.push({ tenant: source.dedicatedTo, cell: source.cell, peakRps: source.peakRps, targetRps: source.targetRps });
      continue;
    }
    const candidates = candidatesOf(source, compiled);
    const room = (cell: CellCapacity) => cell.targetRps - (load.get(cell.cell) ?? 0);
    const targetsFor = (c: Candidate) =>
      cells
        .filter(
          (r) =>
            receivers.has(r.cell) &&
            r.cell !== source.cell &&
            r.region === source.region &&
            r.tier === source.tier &&
            c.peakRps <= room(r) &&
            (tenants.get(r.cell) ?? 0) + 1 <= r.maxTenants,
        )
        .sort((a, b) => room(a) - c.peakRps - (room(b) - c.peakRps) || a.cell.localeCompare(b.cell));
    // Its own target too: with no other cell of its tier in the region, a new cell of the source's shape is where it would go.
    const largestTarget = Math.max(
      source.targetRps,
      ...cells
        .filter(
          (r) =>
            r.region === source.region &&
            r.tier === source.tier &&
            r.cell !== source.cell &&
            r.state === 'active' &&
            !r.canary &&
            r.dedicatedTo === undefined,
        )
        .map((r) => r.targetRps),
    );
    for (const c of candidates) {
      if (c.peakRps > largestTarget) tooBig.push({ tenant: c.tenant, cell: source.cell, peakRps: c.peakRps, targetRps: largestTarget });
    }
    for (;;) {
      const excess = (load.get(source.cell) ?? 0) - source.targetRps;
      if (excess <= 0) break;
      const open = candidates.filter((c) => !moved.has(c.tenant) && targetsFor(c).length > 0);
      if (open.length === 0) break;
      const covering = open.filter((c) => c.peakRps >= excess).sort((a, b) => a.peakRps - b.peakRps || a.tenant.localeCompare(b.tenant));
      const pick = covering[0] ?? open[0];
      const to = targetsFor(pick)[0];
      moved.add(pick.tenant);
      moves.push({
        tenant: pick.tenant,
        ...(pick.bucket !== undefined ? { bucket: pick.bucket } : {}),
        from: source.cell,
        to: to.cell,
        peakRps: pick.peakRps,
      });
      load.set(source.cell, (load.get(source.cell) ?? 0) - pick.peakRps);
      load.set(to.cell, (load.get(to.cell) ?? 0) + pick.peakRps);
      tenants.set(source.cell, (tenants.get(source.cell) ?? 0) - 1);
      tenants.set(to.cell, (tenants.get(to.cell) ?? 0) + 1);
    }
  }

  const unresolved = cells.map((c) => ({ cell: c.cell, excessRps: (load.get(c.cell) ?? 0) - c.targetRps })).filter((u) => u.excessRps > 0);
  const addBy = new Map<string, { region: string; shape: string; tier: string; excess: number; targetRps: number }>();
  for (const u of unresolved) {
    const c = byId.get(u.cell)!;
    if (c.dedicatedTo !== undefined) continue;
    const key = `${c.region}\u0000${c.shape}\u0000${c.tier}`;
    const entry = addBy.get(key) ?? { region: c.region, shape: c.shape, tier: c.tier, excess: 0, targetRps: c.targetRps };
    entry.excess += u.excessRps;
    addBy.set(key, entry);
  }
  return {
    mappingVersion: mapping.version,
    moves,
    cells: cells.map((c) => ({
      cell: c.cell,
      peakRpsBefore: c.peakRps,
      peakRpsAfter: load.get(c.cell) ?? 0,
      targetRps: c.targetRps,
      testedRps: c.testedRps,
      tenantsBefore: c.activeTenants,
      tenantsAfter: tenants.get(c.cell) ?? 0,
    })),
    unresolved,
    cellsToAdd: [...addBy.values()].map((a) => ({
      region: a.region,
      shape: a.shape,
      ...(a.tier !== (capacity.settings.defaultTier ?? DEFAULT_TIER) ? { tier: a.tier } : {}),
      count: Math.ceil(a.excess / a.targetRps),
    })),
    tooBig,
  };
}

/**
 * The tenants of a hot cell that a move can take, largest first. The report of a cell may list only
 * its top tenants; a bucket is moved whole only when the report lists every active tenant of the
 * cell (otherwise the bucket could carry tenants whose load is unknown).
 */
function candidatesOf(cell: CellCapacity, compiled: ReturnType<typeof compileMapping>): Candidate[] {
  const complete = cell.topTenants.length >= cell.activeTenants;
  const routes = cell.topTenants.map((t) => ({ t, route: safeLookup(compiled, t.tenant) }));
  const perBucket = new Map<number, number>();
  for (const { route } of routes) if (route) perBucket.set(route.bucket, (perBucket.get(route.bucket) ?? 0) + 1);
  return routes
    .filter(({ t, route }) => peakOf(t) > 0 && route !== undefined && route.cell === cell.cell)
    .map(({ t, route }) => ({
      tenant: t.tenant,
      peakRps: peakOf(t),
      ...(complete && route!.via === 'bucket' && perBucket.get(route!.bucket) === 1 ? { bucket: route!.bucket } : {}),
    }))
    .sort((a, b) => b.peakRps - a.peakRps || a.tenant.localeCompare(b.tenant));
}

function safeLookup(compiled: ReturnType<typeof compileMapping>, key: string) {
  try {
    return compiled.lookup(key);
  } catch {
    return undefined;
  }
}

/** The file `cellctl move plan FILE` runs: bucket moves for whole buckets, tenant moves (pins) otherwise. */
export function movePlanOf(plan: CapacityPlan): MovePlan & { readonly capacity: CapacityPlan } {
  return {
    mappingVersion: plan.mappingVersion,
    moves: plan.moves.map((m) =>
      m.bucket !== undefined ? { buckets: String(m.bucket), from: m.from, to: m.to, bucketCount: 1 } : { tenant: m.tenant, from: m.from, to: m.to },
    ),
    capacity: plan,
  };
}
