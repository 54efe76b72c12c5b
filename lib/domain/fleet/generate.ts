import { availabilityZoneIds } from './regions';
import { FleetInput } from './types';

/**
 * Regions a generated fleet adds past the base config's, in order: each supports cross-region
 * PrivateLink with every other one here (lib/domain/fleet/privatelink-regions.ts).
 */
const EXTRA_REGIONS = ['us-west-2', 'ap-northeast-1', 'us-east-2', 'ap-southeast-1', 'sa-east-1'];

export interface GenerateOptions {
  /** Regions the cells are spread over: the base config's first, then EXTRA_REGIONS. @default the base config's */
  readonly regions?: number;
  /** Cap on cells per wave; a fleet of hundreds needs more than the example's 10 to fit 50 pipeline stages. @default the base config's */
  readonly maxCellsPerWave?: number;
}

/**
 * A synthetic fleet of `count` cells, spread round-robin over the regions, used by the synth
 * benchmark and tests: same shapes and policies as a real fleet, distinct /20 CIDRs and accounts per cell.
 */
export function generateFleet(base: FleetInput, count: number, options: GenerateOptions = {}): FleetInput {
  if (!Number.isInteger(count) || count < 2 || count > 4000) {
    throw new Error(`generateFleet: count ${count} must be an integer from 2 to 4000`);
  }
  const baseRegions = Object.keys(base.regions);
  const wanted = options.regions ?? baseRegions.length;
  const names = [...baseRegions, ...EXTRA_REGIONS.filter((r) => !baseRegions.includes(r))];
  if (!Number.isInteger(wanted) || wanted < 1 || wanted > names.length) {
    throw new Error(`generateFleet: regions ${wanted} must be an integer from 1 to ${names.length}`);
  }
  const regions = Object.fromEntries(
    names.slice(0, wanted).map((r) => [r, base.regions[r] ?? { availabilityZones: availabilityZoneIds(r).slice(0, 3) }]),
  );
  const regionNames = Object.keys(regions);
  const shape = Object.keys(base.shapes)[0];
  const cells = Array.from({ length: count }, (_, i) => ({
    id: `cell-${i}`,
    region: regionNames[i % regionNames.length],
    // 10.0.0.0/8 holds 4096 /20 blocks.
    cidr: `10.${Math.floor(i / 16)}.${(i % 16) * 16}.0/20`,
    shape,
    canary: i === 0,
    account: String(100_000_000_000 + i),
  }));
  const waves = options.maxCellsPerWave === undefined ? base.waves : { ...base.waves, maxCellsPerWave: options.maxCellsPerWave };
  return { ...base, regions, cells, waves };
}

/**
 * The fleet the scale test and `npm run bench:synth -- --cells N --regions R` synthesize: `generateFleet`
 * with the settings a fleet of hundreds needs, each one an operator would set: 25 cells per wave (50
 * pipeline stages), and the interface-endpoint quota granted for one endpoint per cell in every
 * router VPC (`quotas.interfaceEndpointsPerVpc`, docs/limits.md).
 */
export function generateScaleFleet(base: FleetInput, count: number, regions: number): FleetInput {
  const input = generateFleet(base, count, { regions, ...(count > 200 ? { maxCellsPerWave: 25 } : {}) });
  return count > 50 ? { ...input, quotas: { interfaceEndpointsPerVpc: count } } : input;
}
