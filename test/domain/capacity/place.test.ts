import { place } from '../../../lib/domain/capacity';
import { cellsAndMapping, judged, tenantsOn } from './fixture';

describe('place', () => {
  const { limits, mapping } = cellsAndMapping(3);
  // Target 500 req/s per cell: cell-1 at 450, cell-2 at 300, cell-3 at 100.
  const tenants = [
    ...tenantsOn(mapping, 'cell-1', 1).map((tenant) => ({ tenant, rps: 450 })),
    ...tenantsOn(mapping, 'cell-2', 1).map((tenant) => ({ tenant, rps: 300 })),
    ...tenantsOn(mapping, 'cell-3', 1).map((tenant) => ({ tenant, rps: 100 })),
  ];
  const fleet = judged(limits, mapping, tenants);

  it('takes the best fit under the target: the fullest cell that still has room', () => {
    expect(place(fleet, { tenant: 'new', expectedRps: 150 })).toEqual({
      kind: 'fits',
      cell: 'cell-2',
      peakRpsAfter: 450,
      targetRps: 500,
      utilisationAfter: 0.45,
    });
    expect(place(fleet, { tenant: 'new', expectedRps: 50 })).toMatchObject({ kind: 'fits', cell: 'cell-1', peakRpsAfter: 500 });
    expect(place(fleet, { tenant: 'new', expectedRps: 300 })).toMatchObject({ kind: 'fits', cell: 'cell-3' });
  });

  it("keeps a tenant among its home's cells (home regions), even with more room elsewhere", () => {
    const twoRegions = { ...fleet, cells: fleet.cells.map((c) => (c.cell === 'cell-3' ? { ...c, region: 'us-east-1' } : c)) };
    expect(place(twoRegions, { tenant: 'eu-new', expectedRps: 150, homeRegions: ['eu-west-1'] })).toMatchObject({ kind: 'fits', cell: 'cell-2' });
    expect(place(twoRegions, { tenant: 'eu-new', expectedRps: 300, homeRegions: ['eu-west-1'] })).toMatchObject({ kind: 'no-room' });
    expect(place(twoRegions, { tenant: 'new', expectedRps: 300, homeRegions: ['us-east-1'] })).toMatchObject({ kind: 'fits', cell: 'cell-3' });
  });

  it('never places a tenant on the canary cell', () => {
    const canary = { ...fleet, cells: fleet.cells.map((c) => (c.cell === 'cell-3' ? { ...c, canary: true } : c)) };
    expect(place(canary, { tenant: 'new', expectedRps: 300 })).toMatchObject({ kind: 'no-room' });
  });

  it('says when no cell has room but a new cell would', () => {
    expect(place(fleet, { tenant: 'new', expectedRps: 450 })).toEqual({ kind: 'no-room', shape: 'standard', targetRps: 500 });
  });

  it("says when the tenant is too big for any cell's target", () => {
    expect(place(fleet, { tenant: 'new', expectedRps: 501 })).toEqual({ kind: 'too-big', largestTargetRps: 500 });
  });

  it('only considers active cells of the region and shape asked for', () => {
    const drained = { ...fleet, cells: fleet.cells.map((c) => (c.cell === 'cell-3' ? { ...c, state: 'draining' as const } : c)) };
    expect(place(drained, { tenant: 'new', expectedRps: 300 })).toMatchObject({ kind: 'no-room' });
    expect(() => place(fleet, { tenant: 'new', expectedRps: 10, region: 'us-east-1' })).toThrow('no cell of region us-east-1 in the fleet');
  });

  describe('tiers and dedicated cells', () => {
    // cell-1 is dedicated to `acme`, cell-2 serves the `premium` tier; cell-3 is the default tier's.
    const tiered = {
      ...fleet,
      cells: fleet.cells.map((c) =>
        c.cell === 'cell-1' ? { ...c, peakRps: 0, dedicatedTo: 'acme' } : c.cell === 'cell-2' ? { ...c, tier: 'premium' } : c,
      ),
    };

    it('sends a tenant with a dedicated cell there, whatever tier or rate was asked', () => {
      expect(place(tiered, { tenant: 'acme', expectedRps: 100 })).toEqual({
        kind: 'fits',
        cell: 'cell-1',
        peakRpsAfter: 100,
        targetRps: 500,
        utilisationAfter: 0.1,
        dedicated: true,
      });
      expect(place(tiered, { tenant: 'acme', expectedRps: 100, tier: 'premium' })).toMatchObject({ cell: 'cell-1', dedicated: true });
    });

    it("never places another tenant on a dedicated cell, even the emptiest, nor outside the tenant's tier", () => {
      // cell-1 is empty and would be the only fit for 450; it is acme's, so there is no room.
      expect(place(tiered, { tenant: 'new', expectedRps: 450 })).toMatchObject({ kind: 'no-room' });
      expect(place(tiered, { tenant: 'new', expectedRps: 100 })).toMatchObject({ kind: 'fits', cell: 'cell-3' });
      expect(place(tiered, { tenant: 'new', expectedRps: 100, tier: 'premium' })).toMatchObject({ kind: 'fits', cell: 'cell-2' });
      expect(place(tiered, { tenant: 'new', expectedRps: 300, tier: 'premium' })).toMatchObject({ kind: 'no-room' });
      for (let i = 0; i < 200; i++) {
        const answer = place(tiered, { tenant: `t-${i}`, expectedRps: i % 400, ...(i % 2 ? { tier: 'premium' } : {}) });
        if (answer.kind === 'fits') expect(answer.cell).not.toBe('cell-1');
      }
    });

    it('names the tiers the fleet has when the one asked for has no cell', () => {
      expect(() => place(tiered, { tenant: 'new', expectedRps: 10, tier: 'gold' })).toThrow(
        "no cell in the fleet's tier `gold` (tiers: general, premium)",
      );
    });
  });

  it('refuses a rate that is not a number', () => {
    expect(() => place(fleet, { tenant: 'new', expectedRps: Number.NaN })).toThrow(/requests per second/);
  });
});
