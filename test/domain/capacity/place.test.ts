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

  it('refuses a rate that is not a number', () => {
    expect(() => place(fleet, { tenant: 'new', expectedRps: Number.NaN })).toThrow(/requests per second/);
  });
});
