import { CapacitySettings, CellLimits, CellLoad, FleetCapacity, judgeFleet, TenantLoad } from '../../../lib/domain/capacity';
import { compileMapping, initialMapping, MappingDocument } from '../../../lib/domain/mapping';

export const NOW = { now: '2026-12-01T00:00:00Z' };
export const SETTINGS: CapacitySettings = { targetUtilisation: 0.5, spareCells: 1, largeTenantShare: 0.5 };

/** `n` active cells in one region, each tested at `testedRps`, and a mapping spreading buckets over them. */
export function cellsAndMapping(n: number, testedRps = 1000, maxTenants = 1000): { limits: CellLimits[]; mapping: MappingDocument } {
  const ids = Array.from({ length: n }, (_, i) => `cell-${i + 1}`);
  const limits = ids.map((cell) => ({ cell, region: 'eu-west-1', shape: 'standard', state: 'active' as const, testedRps, maxTenants, zones: 3 }));
  const mapping = initialMapping(
    ids.map((id) => ({ id, endpoint: `http://${id}.internal`, state: 'active' as const })),
    1024,
    NOW,
  );
  return { limits, mapping };
}

/** Per-cell loads of tenants routed by `mapping` (every active tenant listed). */
export function loadsOf(mapping: MappingDocument, tenants: readonly TenantLoad[]): CellLoad[] {
  const compiled = compileMapping(mapping);
  const byCell = new Map<string, TenantLoad[]>();
  for (const t of tenants) {
    const cell = compiled.lookup(t.tenant).cell;
    byCell.set(cell, [...(byCell.get(cell) ?? []), t]);
  }
  return [...byCell].map(([cell, list]) => ({
    cell,
    currentRps: list.reduce((n, t) => n + t.rps, 0),
    peakRps: list.reduce((n, t) => n + (t.peakRps ?? t.rps), 0),
    activeTenants: list.length,
    topTenants: list,
  }));
}

export function judged(limits: CellLimits[], mapping: MappingDocument, tenants: readonly TenantLoad[], settings = SETTINGS): FleetCapacity {
  return judgeFleet(limits, loadsOf(mapping, tenants), settings);
}

/** `count` tenant names that the mapping routes to `cell`. */
export function tenantsOn(mapping: MappingDocument, cell: string, count: number, prefix = 't'): string[] {
  const compiled = compileMapping(mapping);
  const found: string[] = [];
  for (let i = 0; found.length < count; i++) if (compiled.lookup(`${prefix}${i}`).cell === cell) found.push(`${prefix}${i}`);
  return found;
}
