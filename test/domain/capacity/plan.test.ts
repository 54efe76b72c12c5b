import fc from 'fast-check';
import { CellLimits, judgeFleet, movePlanOf, planCapacity, TenantLoad } from '../../../lib/domain/capacity';
import { compileMapping, pinKey } from '../../../lib/domain/mapping';
import { cellsAndMapping, judged, loadsOf, NOW, SETTINGS, tenantsOn } from './fixture';

describe('planCapacity', () => {
  it('moves the one tenant that brings a hot cell under its target, as its bucket', () => {
    const { limits, mapping } = cellsAndMapping(3);
    // cell-1: one tenant at 400 and five at 40 = 600 > 500; the others at 100.
    const [heavy, ...light] = tenantsOn(mapping, 'cell-1', 6);
    const tenants: TenantLoad[] = [
      { tenant: heavy, rps: 400 },
      ...light.map((tenant) => ({ tenant, rps: 40 })),
      ...tenantsOn(mapping, 'cell-2', 2).map((tenant) => ({ tenant, rps: 50 })),
      ...tenantsOn(mapping, 'cell-3', 1).map((tenant) => ({ tenant, rps: 300 })),
    ];
    const plan = planCapacity(judged(limits, mapping, tenants), mapping);
    // 100 over: one light tenant is not enough, two are; the heavy one alone is: the fewest tenants.
    expect(plan.moves).toHaveLength(1);
    expect(plan.moves[0]).toMatchObject({
      tenant: heavy,
      from: 'cell-1',
      to: 'cell-2',
      peakRps: 400,
      bucket: compileMapping(mapping).lookup(heavy).bucket,
    });
    expect(plan.unresolved).toEqual([]);
    expect(plan.cells.find((c) => c.cell === 'cell-1')).toMatchObject({ peakRpsBefore: 600, peakRpsAfter: 200, tenantsAfter: 5 });
    expect(plan.cells.find((c) => c.cell === 'cell-2')).toMatchObject({ peakRpsAfter: 500 });
    expect(movePlanOf(plan).moves).toEqual([{ buckets: String(plan.moves[0].bucket), from: 'cell-1', to: 'cell-2', bucketCount: 1 }]);
  });

  it('prefers the smallest tenant that covers the excess alone', () => {
    const { limits, mapping } = cellsAndMapping(2);
    const [a, b, c] = tenantsOn(mapping, 'cell-1', 3);
    const plan = planCapacity(
      judged(limits, mapping, [
        { tenant: a, rps: 300 },
        { tenant: b, rps: 150 },
        { tenant: c, rps: 100 },
      ]),
      mapping,
    );
    expect(plan.moves.map((m) => m.tenant)).toEqual([c]);
  });

  it('moves a pinned tenant as a tenant, and a bucket only when the report lists every active tenant', () => {
    const { limits, mapping } = cellsAndMapping(2);
    const [pinned] = tenantsOn(mapping, 'cell-2', 1, 'p');
    const pinnedDoc = pinKey(mapping, pinned, 'cell-1', NOW);
    const [other] = tenantsOn(mapping, 'cell-1', 1);
    const full = planCapacity(
      judged(limits, pinnedDoc, [
        { tenant: pinned, rps: 450 },
        { tenant: other, rps: 100 },
      ]),
      pinnedDoc,
    );
    expect(full.moves).toEqual([{ tenant: other, bucket: expect.any(Number), from: 'cell-1', to: 'cell-2', peakRps: 100 }]);
    const alone = planCapacity(
      judged(limits, pinnedDoc, [
        { tenant: pinned, rps: 100 },
        { tenant: other, rps: 450 },
      ]),
      pinnedDoc,
    );
    expect(alone.moves).toEqual([{ tenant: pinned, from: 'cell-1', to: 'cell-2', peakRps: 100 }]);
    expect(movePlanOf(alone).moves).toEqual([{ tenant: pinned, from: 'cell-1', to: 'cell-2' }]);

    // The router listed only the top tenant of 40 active ones: its bucket may hold unlisted tenants.
    const loads = loadsOf(pinnedDoc, [{ tenant: other, rps: 450 }]).map((l) => ({ ...l, peakRps: 600, activeTenants: 40 }));
    const partial = planCapacity(judgeFleet(limits, loads, SETTINGS), pinnedDoc);
    expect(partial.moves).toEqual([{ tenant: other, from: 'cell-1', to: 'cell-2', peakRps: 450 }]);
  });

  it('adds cells when moves cannot do it, and names a tenant too big for any cell', () => {
    const { limits, mapping } = cellsAndMapping(2);
    const [giant, x] = tenantsOn(mapping, 'cell-1', 2);
    const [y] = tenantsOn(mapping, 'cell-2', 1);
    const plan = planCapacity(
      judged(limits, mapping, [
        { tenant: giant, rps: 700 },
        { tenant: x, rps: 200 },
        { tenant: y, rps: 480 },
      ]),
      mapping,
    );
    expect(plan.moves).toEqual([]);
    expect(plan.tooBig).toEqual([{ tenant: giant, cell: 'cell-1', peakRps: 700, targetRps: 500 }]);
    expect(plan.unresolved).toEqual([{ cell: 'cell-1', excessRps: 400 }]);
    expect(plan.cellsToAdd).toEqual([{ region: 'eu-west-1', shape: 'standard', count: 1 }]);
  });

  it('never sends a tenant to the canary cell', () => {
    const { limits, mapping } = cellsAndMapping(2);
    const [a, b] = tenantsOn(mapping, 'cell-1', 2);
    const plan = planCapacity(
      judged(
        limits.map((l) => (l.cell === 'cell-2' ? { ...l, canary: true } : l)),
        mapping,
        [
          { tenant: a, rps: 300 },
          { tenant: b, rps: 300 },
        ],
      ),
      mapping,
    );
    expect(plan.moves).toEqual([]);
    expect(plan.cellsToAdd).toEqual([{ region: 'eu-west-1', shape: 'standard', count: 1 }]);
  });

  it('never sends a tenant to a dedicated cell, nor to another tier; a hot dedicated cell needs a larger shape, not a move', () => {
    const { limits, mapping } = cellsAndMapping(4);
    const [a, b] = tenantsOn(mapping, 'cell-1', 2);
    const [own] = tenantsOn(mapping, 'cell-4', 1);
    const plan = planCapacity(
      judged(
        limits.map((l) =>
          l.cell === 'cell-2'
            ? { ...l, dedicatedTo: 'acme' }
            : l.cell === 'cell-3'
              ? { ...l, tier: 'premium' }
              : l.cell === 'cell-4'
                ? { ...l, dedicatedTo: own }
                : l,
        ),
        mapping,
        [
          { tenant: a, rps: 300 },
          { tenant: b, rps: 300 },
          { tenant: own, rps: 700 },
        ],
      ),
      mapping,
    );
    // cell-2 (acme's) and cell-3 (premium) are empty and have room; neither receives a general tenant.
    expect(plan.moves).toEqual([]);
    expect(plan.tooBig).toEqual([{ tenant: own, cell: 'cell-4', peakRps: 700, targetRps: 500 }]);
    expect(plan.unresolved).toEqual([
      { cell: 'cell-1', excessRps: 100 },
      { cell: 'cell-4', excessRps: 200 },
    ]);
    expect(plan.cellsToAdd).toEqual([{ region: 'eu-west-1', shape: 'standard', count: 1 }]);
  });

  it("moves a tier's tenants among that tier's cells, and asks for a cell of that tier", () => {
    const { limits, mapping } = cellsAndMapping(3);
    const [a, b] = tenantsOn(mapping, 'cell-1', 2);
    const premium = limits.map((l) => (l.cell === 'cell-1' || l.cell === 'cell-2' ? { ...l, tier: 'premium' } : l));
    const moved = planCapacity(
      judged(premium, mapping, [
        { tenant: a, rps: 300 },
        { tenant: b, rps: 300 },
      ]),
      mapping,
    );
    expect(moved.moves.map((m) => [m.from, m.to])).toEqual([['cell-1', 'cell-2']]);
    const full = planCapacity(
      judged(premium, mapping, [
        { tenant: a, rps: 300 },
        { tenant: b, rps: 300 },
        ...tenantsOn(mapping, 'cell-2', 1).map((tenant) => ({ tenant, rps: 450 })),
      ]),
      mapping,
    );
    // cell-3 (the default tier) has room but is not premium's.
    expect(full.moves).toEqual([]);
    expect(full.cellsToAdd).toEqual([{ region: 'eu-west-1', shape: 'standard', tier: 'premium', count: 1 }]);
  });

  it('never sends a tenant to a cell hot by its database or compute CPU, though its rate has room', () => {
    const { limits, mapping } = cellsAndMapping(3);
    const [a, b] = tenantsOn(mapping, 'cell-1', 2);
    const loads = loadsOf(mapping, [
      { tenant: a, rps: 300 },
      { tenant: b, rps: 300 },
    ]);
    const cpu = (cell: string, peak: number) => ({
      cell,
      currentRps: 0,
      peakRps: 0,
      activeTenants: 0,
      topTenants: [],
      signals: { databaseCpu: { current: peak, peak, missingPeriods: 0 } },
    });
    const plan = planCapacity(judgeFleet(limits, [...loads, cpu('cell-2', 80), cpu('cell-3', 40)], SETTINGS), mapping);
    expect(plan.moves).toEqual([expect.objectContaining({ from: 'cell-1', to: 'cell-3' })]);
  });

  it('never sends tenants to another region, a draining cell, or past maxTenants', () => {
    const { limits, mapping } = cellsAndMapping(4, 1000, 3);
    const where: CellLimits[] = limits.map((l) =>
      l.cell === 'cell-2' ? { ...l, region: 'us-east-1' } : l.cell === 'cell-3' ? { ...l, state: 'draining' } : l,
    );
    const hot = tenantsOn(mapping, 'cell-1', 3).map((tenant) => ({ tenant, rps: 200 }));
    const fourth = tenantsOn(mapping, 'cell-4', 3).map((tenant) => ({ tenant, rps: 10 }));
    const plan = planCapacity(judged(where, mapping, [...hot, ...fourth]), mapping);
    expect(plan.moves).toEqual([]);
    expect(plan.cellsToAdd).toEqual([{ region: 'eu-west-1', shape: 'standard', count: 1 }]);
  });
});

describe('planCapacity, for any fleet and load (fast-check)', () => {
  const tenantArb = fc.record({ tenant: fc.stringMatching(/^[a-z][a-z0-9]{0,11}$/), rps: fc.integer({ min: 1, max: 900 }) });
  const fleetArb = fc.record({
    cells: fc.integer({ min: 1, max: 6 }),
    tenants: fc.uniqueArray(tenantArb, { minLength: 0, maxLength: 60, selector: (t) => t.tenant }),
    target: fc.double({ min: 0.2, max: 0.9, noNaN: true }),
    maxTenants: fc.integer({ min: 1, max: 30 }),
  });

  it('never overfills a cell, never moves a tenant twice, and moves only from where a tenant is', () => {
    fc.assert(
      fc.property(fleetArb, ({ cells, tenants, target, maxTenants }) => {
        const { limits, mapping } = cellsAndMapping(cells, 1000, maxTenants);
        const fleet = judged(limits, mapping, tenants, { ...SETTINGS, targetUtilisation: target });
        const plan = planCapacity(fleet, mapping);
        const compiled = compileMapping(mapping);
        const names = plan.moves.map((m) => m.tenant);
        expect(new Set(names).size).toBe(names.length);
        const load = new Map(fleet.cells.map((c) => [c.cell, c.peakRps]));
        const count = new Map(fleet.cells.map((c) => [c.cell, c.activeTenants]));
        for (const m of plan.moves) {
          expect(compiled.lookup(m.tenant).cell).toBe(m.from);
          expect(m.to).not.toBe(m.from);
          expect(m.peakRps).toBe(tenants.find((t) => t.tenant === m.tenant)!.rps);
          load.set(m.from, load.get(m.from)! - m.peakRps);
          load.set(m.to, load.get(m.to)! + m.peakRps);
          count.set(m.to, count.get(m.to)! + 1);
          count.set(m.from, count.get(m.from)! - 1);
        }
        for (const c of fleet.cells) {
          const after = plan.cells.find((x) => x.cell === c.cell)!;
          expect(after.peakRpsAfter).toBeCloseTo(load.get(c.cell)!, 6);
          // A cell that receives a tenant stays under its target and its tenant limit.
          if (plan.moves.some((m) => m.to === c.cell)) {
            expect(load.get(c.cell)!).toBeLessThanOrEqual(c.targetRps + 1e-9);
            expect(count.get(c.cell)!).toBeLessThanOrEqual(c.maxTenants);
            expect(plan.moves.some((m) => m.from === c.cell)).toBe(false);
          }
          // A cell left above its target is reported, with cells to add.
          const over = load.get(c.cell)! > c.targetRps;
          expect(plan.unresolved.some((u) => u.cell === c.cell)).toBe(over);
        }
        if (plan.unresolved.length > 0) expect(plan.cellsToAdd.reduce((n, a) => n + a.count, 0)).toBeGreaterThan(0);
      }),
      { numRuns: 300 },
    );
  });

  it('moves no tenant when every cell is already under its target', () => {
    fc.assert(
      fc.property(fleetArb, ({ cells, tenants }) => {
        const { limits, mapping } = cellsAndMapping(cells, 1000);
        const fleet = judged(limits, mapping, tenants, { ...SETTINGS, targetUtilisation: 0.5 });
        fc.pre(fleet.cells.every((c) => c.peakRps <= c.targetRps));
        expect(planCapacity(fleet, mapping).moves).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });

  it('when one tenant alone could fix a hot cell, moves exactly one', () => {
    fc.assert(
      fc.property(fleetArb, ({ cells, tenants }) => {
        fc.pre(cells >= 2);
        const { limits, mapping } = cellsAndMapping(cells, 1000);
        const fleet = judged(limits, mapping, tenants);
        const hot = fleet.cells.filter((c) => c.peakRps > c.targetRps);
        fc.pre(hot.length === 1);
        const h = hot[0];
        const roomiest = Math.max(...fleet.cells.filter((c) => c.cell !== h.cell).map((c) => c.targetRps - c.peakRps));
        fc.pre(h.topTenants.some((t) => t.rps >= h.peakRps - h.targetRps && t.rps <= roomiest));
        expect(planCapacity(fleet, mapping).moves).toHaveLength(1);
      }),
      { numRuns: 200 },
    );
  });
});
