/**
 * Tiers and dedicated cells in the fleet file (lib/domain/fleet/placement.ts, validate.ts): what is
 * refused with one line each, what the seed mapping gives them (no bucket; the dedicated tenant
 * pinned), and what a mapping may not do to them.
 */
import { CellConfig, fleetProblems, FleetInput, holdsBuckets, mappingPlacementProblems, resolveFleet, seedMapping } from '../../../lib/domain/fleet';
import { bucketCounts, lookup, pinKey } from '../../../lib/domain/mapping';
import { validInput } from '../../support/fleet';

const now = { now: '2026-12-05T00:00:00.000Z' };

/** The example fleet with edits to some of its cells. */
function withCells(edit: Record<string, Partial<CellConfig>>, rest: Partial<FleetInput> = {}): FleetInput {
  const input = validInput();
  return { ...input, ...rest, cells: input.cells.map((c) => ({ ...c, ...edit[c.id] })) };
}

describe('the fleet file', () => {
  it('resolves a tier and a dedicated cell, the default tier for the others', () => {
    const fleet = resolveFleet(withCells({ 'eu-2': { tier: 'premium' }, 'us-3': { dedicatedTo: 'acme-corp' } }));
    const byId = new Map(fleet.cells.map((c) => [c.id, c]));
    expect(fleet.capacity.defaultTier).toBe('general');
    expect(byId.get('eu-1')!.tier).toBe('general');
    expect(byId.get('eu-2')!.tier).toBe('premium');
    expect(byId.get('us-3')!.dedicatedTo).toBe('acme-corp');
    expect(fleet.cells.filter((c) => holdsBuckets(fleet, c)).map((c) => c.id)).toEqual(['eu-1', 'eu-3', 'us-1', 'us-2', 'us-4']);
  });

  it('refuses each misuse with one line that says what to do', () => {
    const problems = fleetProblems(
      withCells({
        'canary-eu': { dedicatedTo: 'acme' },
        'eu-1': { dedicatedTo: 'big co' },
        'eu-2': { dedicatedTo: 'globex', tier: 'premium' },
        'us-1': { dedicatedTo: 'initech' },
        'us-2': { dedicatedTo: 'initech' },
        'us-3': { tier: 'Gold!' },
      }),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^cell `canary-eu`: a canary cell .* cannot be dedicated to `acme` \(dedicate another cell\)$/),
      expect.stringMatching(/^cell `eu-1`: dedicatedTo "big co": /),
      expect.stringMatching(/^cell `eu-2`: dedicatedTo and tier are both set; .*\(delete tier\)$/),
      expect.stringMatching(/^cell `us-2`: tenant `initech` already has cell `us-1` dedicated to it; /),
      expect.stringMatching(/^cell `us-3`: tier `Gold!` is not a tier name; /),
    ]);
  });

  it('refuses a fleet whose default tier has no cell to hold the buckets', () => {
    const everyCellPremium = Object.fromEntries(
      validInput()
        .cells.filter((c) => !c.canary)
        .map((c) => [c.id, { tier: 'premium' }]),
    );
    expect(fleetProblems(withCells(everyCellPremium))).toEqual([
      "cells: no active regular cell of the default tier `general` to hold the mapping's buckets (tenants nobody placed land there); leave one cell's tier unset, or set capacity.defaultTier to one of the cells' tiers",
    ]);
    // Naming that tier the default is the fix.
    expect(fleetProblems(withCells(everyCellPremium, { capacity: { defaultTier: 'premium' } }))).toEqual([]);
    expect(fleetProblems(withCells({}, { capacity: { defaultTier: 'No' } }))).toEqual([
      expect.stringMatching(/^capacity.defaultTier: `No` is not a tier name/),
    ]);
  });
});

describe('the seed mapping', () => {
  const fleet = resolveFleet(withCells({ 'eu-2': { tier: 'premium' }, 'us-3': { dedicatedTo: 'acme-corp' } }));
  const doc = seedMapping(fleet);

  it('gives buckets only to the default tier, pins the dedicated tenant, and lists every cell', () => {
    const counts = bucketCounts(doc);
    expect(counts.get('eu-2') ?? 0).toBe(0);
    expect(counts.get('us-3') ?? 0).toBe(0);
    expect(Object.keys(doc.cells)).toEqual(fleet.cells.map((c) => c.id));
    expect(doc.overrides.exact).toEqual({ 'acme-corp': 'us-3' });
    expect(lookup(doc, 'acme-corp').cell).toBe('us-3');
    expect(mappingPlacementProblems(fleet, doc)).toEqual([]);
  });

  it('lands 1,000 tenants nobody placed on the default tier only, never on the tier or dedicated cell', () => {
    const cells = new Set(Array.from({ length: 1000 }, (_, i) => lookup(doc, `new-${i}`).cell));
    expect(cells.has('eu-2')).toBe(false);
    expect(cells.has('us-3')).toBe(false);
    expect([...cells].sort()).toEqual(['eu-1', 'eu-3', 'us-1', 'us-2', 'us-4']);
  });

  it('names what a document does against them: another tenant pinned to the dedicated cell, buckets on either', () => {
    const pinned = pinKey(doc, 'someone-else', 'us-3', now);
    expect(mappingPlacementProblems(fleet, pinned)).toEqual([
      'cell `us-3` is dedicated to `acme-corp`; tenant `someone-else` is pinned to it too (pin it to a cell of its tier)',
    ]);
    const buckets = { ...doc, buckets: doc.buckets.map((r, i) => (i === 0 ? { ...r, cell: 'us-3' } : i === 1 ? { ...r, cell: 'eu-2' } : r)) };
    expect(mappingPlacementProblems(fleet, buckets)).toEqual([
      expect.stringMatching(/^cell `eu-2` is of tier `premium` but holds \d+ buckets; only cells of the default tier `general` hold buckets/),
      expect.stringMatching(/^cell `us-3` is dedicated to `acme-corp` but holds \d+ buckets; /),
    ]);
    const prefix = { ...doc, overrides: { ...doc.overrides, prefix: { ...doc.overrides.prefix, 'acme-': 'us-3' } } };
    expect(mappingPlacementProblems(fleet, prefix)).toEqual(['cell `us-3` is dedicated to `acme-corp`; prefix `acme-` routes other tenants to it']);
  });
});
