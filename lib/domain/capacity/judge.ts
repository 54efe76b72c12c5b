import { DEFAULT_TIER } from '../fleet/defaults';
import { Fleet } from '../fleet/types';
import { CellSignalReadings, CPU_SIGNALS } from './signals';
import { CapacitySettings, CellCapacity, CellLimits, CellLoad, CellStatus, FleetCapacity, StatusCause } from './types';

/** Each cell of the fleet with the limits it is judged against. */
export function cellLimitsOf(fleet: Fleet): CellLimits[] {
  return fleet.cells.map((c) => ({
    cell: c.id,
    region: c.region,
    shape: c.shapeName,
    state: c.state,
    testedRps: c.shape.limits.requestsPerSecond,
    maxTenants: c.shape.limits.maxTenants,
    zones: c.availabilityZones.length,
    canary: c.canary,
    tier: c.tier,
    ...(c.dedicatedTo !== undefined ? { dedicatedTo: c.dedicatedTo } : {}),
  }));
}

/** A cell's status from its peak rate and tenants. */
export function statusOf(peakRps: number, tenants: number, limits: Pick<CellLimits, 'testedRps' | 'maxTenants'>, target: number): CellStatus {
  return statusWithCauses(peakRps, tenants, limits, target, undefined).status;
}

/**
 * A cell's status and every signal that set it: `full` above the tested rate or `maxTenants`;
 * `hot` above the target share of the tested rate, or with the peak share of its maximum compute in
 * use (`computeReadingOf`: average CPU × running / maximum, never the tasks' average CPU alone, which
 * sits at the scaling target under load) or the peak CPU of its database above the target
 * utilisation in percent (a cell whose requests cost more than its shape was tested with runs out of
 * CPU before it runs out of rate). A CPU signal without data sets nothing.
 */
export function statusWithCauses(
  peakRps: number,
  tenants: number,
  limits: Pick<CellLimits, 'testedRps' | 'maxTenants'>,
  target: number,
  signals: CellSignalReadings | undefined,
): { status: CellStatus; statusBy: StatusCause[] } {
  const full: StatusCause[] = [
    ...(peakRps > limits.testedRps ? ['rate' as const] : []),
    ...(tenants > limits.maxTenants ? ['tenants' as const] : []),
  ];
  if (full.length > 0) return { status: 'full', statusBy: full };
  const hot: StatusCause[] = [
    ...(peakRps > limits.testedRps * target ? ['rate' as const] : []),
    ...(CPU_SIGNALS.filter((s) => (signals?.[s]?.peak ?? -Infinity) > target * 100) as StatusCause[]),
  ];
  return hot.length > 0 ? { status: 'hot', statusBy: hot } : { status: 'ok', statusBy: [] };
}

/** Whether a cell is hot by one of its CPU signals: it takes no tenant from a move or a placement. */
export const hotByCpu = (cell: Pick<CellCapacity, 'statusBy'>) => cell.statusBy.some((s) => s === 'computeCpu' || s === 'databaseCpu');

const peakOf = (t: { rps: number; peakRps?: number }) => t.peakRps ?? t.rps;

/** One cell judged against its limits; a cell with no measurement is judged as idle. */
export function judgeCell(limits: CellLimits, load: CellLoad | undefined, settings: CapacitySettings): CellCapacity {
  const peakRps = load?.peakRps ?? 0;
  const activeTenants = load?.activeTenants ?? 0;
  const top = [...(load?.topTenants ?? [])].sort((a, b) => peakOf(b) - peakOf(a) || a.tenant.localeCompare(b.tenant));
  const largest = top[0];
  // Losing one of `zones` zones leaves (zones - 1) / zones of the cell's tasks for the same load.
  const survivors = limits.zones > 1 ? (limits.zones - 1) / limits.zones : 1;
  return {
    cell: limits.cell,
    region: limits.region,
    shape: limits.shape,
    state: limits.state,
    canary: limits.canary ?? false,
    tier: limits.tier ?? settings.defaultTier ?? DEFAULT_TIER,
    ...(limits.dedicatedTo !== undefined ? { dedicatedTo: limits.dedicatedTo } : {}),
    currentRps: load?.currentRps ?? 0,
    peakRps,
    testedRps: limits.testedRps,
    targetRps: limits.testedRps * settings.targetUtilisation,
    utilisation: peakRps / limits.testedRps,
    activeTenants,
    maxTenants: limits.maxTenants,
    ...(largest ? { largestTenant: { tenant: largest.tenant, peakRps: peakOf(largest), share: peakRps > 0 ? peakOf(largest) / peakRps : 0 } } : {}),
    zoneLossUtilisation: peakRps / (limits.testedRps * survivors),
    ...statusWithCauses(peakRps, activeTenants, limits, settings.targetUtilisation, load?.signals),
    topTenants: top,
    missingPeriods: load?.missingPeriods ?? 0,
    ...(load?.signals ? { signals: load.signals } : {}),
    ...(load?.signalsError ? { signalsError: load.signalsError } : {}),
  };
}

/**
 * The fleet judged: every cell, the cells the measured peak needs at the target (per shape, since
 * a shape's cells take only that shape's rate) plus the spares, and the tenants too large for a
 * share of any cell.
 */
export function judgeFleet(limits: readonly CellLimits[], loads: readonly CellLoad[], settings: CapacitySettings): FleetCapacity {
  const byCell = new Map(loads.map((l) => [l.cell, l]));
  const cells = limits.map((l) => judgeCell(l, byCell.get(l.cell), settings));
  const peakByShape = new Map<string, { peak: number; targetRps: number }>();
  for (const c of cells) {
    const entry = peakByShape.get(c.shape) ?? { peak: 0, targetRps: c.targetRps };
    entry.peak += c.peakRps;
    peakByShape.set(c.shape, entry);
  }
  const serving = [...peakByShape.values()].reduce((n, s) => n + Math.max(s.peak > 0 ? 1 : 0, Math.ceil(roundUp(s.peak / s.targetRps))), 0);
  const cellsNeeded = serving + settings.spareCells;
  const activeCells = cells.filter((c) => c.state === 'active').length;
  const biggestTarget = Math.max(0, ...cells.map((c) => c.targetRps));
  const largeTenants = cells
    .flatMap((c) =>
      c.topTenants
        .filter((t) => peakOf(t) > settings.largeTenantShare * biggestTarget)
        .map((t) => ({
          tenant: t.tenant,
          cell: c.cell,
          peakRps: peakOf(t),
          shareOfTarget: biggestTarget > 0 ? peakOf(t) / biggestTarget : Infinity,
        })),
    )
    .sort((a, b) => b.peakRps - a.peakRps);
  return {
    cells,
    settings,
    peakRps: cells.reduce((n, c) => n + c.peakRps, 0),
    cellsNeeded,
    activeCells,
    cellsToAdd: Math.max(0, cellsNeeded - activeCells),
    largeTenants,
  };
}

/** 60000 / 7000 * 7000 is not always exactly 60000 in floating point: do not count a rounding error as a cell. */
function roundUp(x: number): number {
  return Math.abs(x - Math.round(x)) < 1e-9 ? Math.round(x) : x;
}
