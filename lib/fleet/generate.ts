import { FleetInput } from './types';

/**
 * A synthetic fleet of `count` cells over two regions, used by the synth benchmark and tests:
 * same shapes and policies as a real fleet, distinct /20 CIDRs and accounts per cell.
 */
export function generateFleet(base: FleetInput, count: number): FleetInput {
  if (!Number.isInteger(count) || count < 2 || count > 4000) {
    throw new Error(`generateFleet: count ${count} must be an integer from 2 to 4000`);
  }
  const regions = Object.keys(base.regions);
  const shape = Object.keys(base.shapes)[0];
  const cells = Array.from({ length: count }, (_, i) => ({
    id: `cell-${i}`,
    region: regions[i % regions.length],
    // 10.0.0.0/8 holds 4096 /20 blocks.
    cidr: `10.${Math.floor(i / 16)}.${(i % 16) * 16}.0/20`,
    shape,
    canary: i === 0,
    account: String(100_000_000_000 + i),
  }));
  return { ...base, cells };
}
