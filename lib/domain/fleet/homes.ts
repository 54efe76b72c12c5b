import { Homes, MAX_HOME_TABLES, PREFIX_PATTERN } from '../mapping';
import { matchesKeyPattern } from '../mapping/key';
import { DEFAULT_CAPACITY } from './defaults';
import { FleetInput, HomesConfig } from './types';

export type { HomesConfig };

/**
 * Home regions. A tenant's home region comes from its key:
 * the prefix it starts with names the region (`eu-` → eu-west-1), and a key with none of the
 * prefixes lives in the default region. The mapping then holds one bucket table per home region
 * (or group of regions), so a tenant nobody placed lands on a cell of its own region. The prefix,
 * not a header, because a move selects a tenant's rows by its key alone (docs/capacity.md, "Home
 * regions").
 */

/** One line per problem in `homes`, or none. */
export function homesProblems(input: Pick<FleetInput, 'homes' | 'regions' | 'cellZero' | 'cells' | 'capacity'>): string[] {
  const homes = input.homes;
  if (homes === undefined) return [];
  const regions = Object.keys(input.regions ?? {});
  const known = (r: string) => regions.includes(r);
  const problems: string[] = [];
  const list = regions.join(', ');
  if (!known(homes.defaultRegion)) problems.push(`homes.defaultRegion: \`${homes.defaultRegion}\` is not a region of the fleet (${list})`);
  const prefixes = Object.entries(homes.prefixes ?? {});
  for (const [prefix, region] of prefixes) {
    if (!matchesKeyPattern(prefix, 127)) problems.push(`homes.prefixes: \`${prefix}\` is not a key prefix (it must match ${PREFIX_PATTERN.source})`);
    if (!known(region)) problems.push(`homes.prefixes.${prefix}: \`${region}\` is not a region of the fleet (${list})`);
    const other = prefixes.find(([p]) => p !== prefix && prefix.startsWith(p));
    if (other)
      problems.push(
        `homes.prefixes: \`${prefix}\` starts with \`${other[0]}\`, so its keys would have two home regions; use prefixes that do not start one another`,
      );
  }
  const grouped = new Map<string, number>();
  (homes.groups ?? []).forEach((group, g) => {
    if (group.length < 2) problems.push(`homes.groups[${g}]: a group has at least two regions (a region alone has its own table)`);
    for (const region of group) {
      if (!known(region)) problems.push(`homes.groups[${g}]: \`${region}\` is not a region of the fleet (${list})`);
      else if (grouped.has(region))
        problems.push(`homes.groups[${g}]: \`${region}\` is in group ${grouped.get(region)} too; a region is in one group`);
      else grouped.set(region, g);
    }
  });
  if (regions.length > MAX_HOME_TABLES) problems.push(`homes: ${regions.length} regions; a mapping holds at most ${MAX_HOME_TABLES} home tables`);
  // Every table needs a cell to hold its buckets: a tenant nobody placed lands there.
  const defaultTier = input.capacity?.defaultTier ?? DEFAULT_CAPACITY.defaultTier;
  const holds = (c: FleetInput['cells'][number]) =>
    !c.canary && (c.state ?? 'active') === 'active' && c.dedicatedTo === undefined && (c.tier ?? defaultTier) === defaultTier;
  if (problems.length === 0 && !input.cellZero) {
    for (const table of resolveHomes(input as Pick<FleetInput, 'homes' | 'regions'>)!.tables) {
      if (!(input.cells ?? []).some((c) => holds(c) && table.regions.includes(c.region)))
        problems.push(
          `homes: no active regular cell of the default tier \`${defaultTier}\` in ${table.regions.join(' or ')} to hold its tenants' buckets; add one, or group the region with another (homes.groups)`,
        );
    }
  }
  return problems;
}

/**
 * The mapping's `homes` for the fleet: the default region's table first (keys with no prefix), then
 * a table per group or region not in a group, in the order of `regions`, each with its regions'
 * prefixes. Undefined without `homes`: a schema-1 mapping.
 */
export function resolveHomes(input: Pick<FleetInput, 'homes' | 'regions'>): Homes | undefined {
  const homes = input.homes;
  if (homes === undefined) return undefined;
  const tables: string[][] = [];
  const order = [homes.defaultRegion, ...Object.keys(input.regions).filter((r) => r !== homes.defaultRegion)];
  for (const region of order) {
    if (tables.some((t) => t.includes(region))) continue;
    const group = homes.groups?.find((g) => g.includes(region));
    tables.push(group ? Object.keys(input.regions).filter((r) => group.includes(r)) : [region]);
  }
  const prefixes = Object.entries(homes.prefixes ?? {});
  return {
    tables: tables.map((regions) => ({
      regions,
      prefixes: prefixes
        .filter(([, r]) => regions.includes(r))
        .map(([p]) => p)
        .sort(),
    })),
  };
}
