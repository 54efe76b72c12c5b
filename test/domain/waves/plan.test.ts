import fc from 'fast-check';
import { Fleet, generateFleet, resolveFleet } from '../../../lib/domain/fleet';
import { MAX_CELLS_PER_STAGE, planWaves, WavePlanError } from '../../../lib/domain/waves';
import { exampleFleet, exampleInput } from '../../support/fleet';

function fleetOf(count: number, waves: Partial<Fleet['waves']> = {}, regions = 2): Fleet {
  const input = generateFleet(exampleInput(), count);
  const regionNames = Object.keys(input.regions).slice(0, regions);
  return resolveFleet({
    ...input,
    quotas: { interfaceEndpointsPerVpc: Math.max(50, count) },
    regions: Object.fromEntries(regionNames.map((r) => [r, input.regions[r]])),
    cells: input.cells.map((c, i) => ({ ...c, region: regionNames[i % regionNames.length] })),
    waves: { ...input.waves, ...waves },
  });
}

describe('planWaves', () => {
  it('plans the example fleet: canary, one single per region, then growing groups', () => {
    const plan = planWaves(exampleFleet());
    expect(plan.waves.map((w) => [w.name, w.cells])).toEqual([
      ['wave-1-canary', ['canary-eu']],
      ['wave-2-single', ['eu-1']],
      ['wave-3-single', ['us-1']],
      ['wave-4-group', ['eu-2', 'eu-3']],
      ['wave-5-group', ['us-2', 'us-3', 'us-4']],
    ]);
    expect(plan.waves.map((w) => w.bakeSeconds)).toEqual([3600, 1800, 1800, 900, 900]);
    expect(plan.waves.map((w) => w.cumulativeShare)).toEqual([1 / 8, 2 / 8, 3 / 8, 5 / 8, 1]);
    // Routers after the cells, the canary cell's region first; in each region the canary group is
    // deployed and baked before the other groups, and the region is baked before the next.
    expect(plan.routerWaves).toEqual([
      { name: 'routers-eu-west-1-canary-group', region: 'eu-west-1', part: 'canary', bakeSeconds: 3600 },
      { name: 'routers-eu-west-1', region: 'eu-west-1', part: 'rest', bakeSeconds: 1800 },
      { name: 'routers-us-east-1-canary-group', region: 'us-east-1', part: 'canary', bakeSeconds: 1800 },
      { name: 'routers-us-east-1', region: 'us-east-1', part: 'rest', bakeSeconds: 1800 },
    ]);
    expect(plan.minimumRolloutSeconds).toBe(9000 + 3600 + 3 * 1800);
  });

  it("takes the routers of the canary cell's region first", () => {
    const base = fleetOf(10, {});
    const canaryInUs = { ...base, cells: base.cells.map((c) => ({ ...c, canary: c.id === base.cells.find((x) => x.region === 'us-east-1')!.id })) };
    expect(planWaves(canaryInUs).routerWaves.map((w) => w.region)).toEqual(['us-east-1', 'us-east-1', 'eu-west-1', 'eu-west-1']);
  });

  it('adds single waves when regions need a first cell alone', () => {
    const plan = planWaves(fleetOf(10, { singleCellWaves: 0 }));
    expect(plan.waves.filter((w) => w.kind === 'single').map((w) => w.regions)).toEqual([['us-east-1']]);
  });

  it('puts a cell appended to the config in the last wave', () => {
    const fleet = exampleFleet();
    const grown = { ...fleet, cells: [...fleet.cells, { ...fleet.cells[7], id: 'us-5', cidr: '10.1.64.0/20' }] };
    const plan = planWaves(grown);
    expect(plan.waves[plan.waves.length - 1].cells).toContain('us-5');
  });

  it('fails clearly when the fleet needs more stages than a pipeline holds', () => {
    expect(() => planWaves(fleetOf(200, { maxCellsPerWave: 2, growthFactor: 1.01 }))).toThrow(WavePlanError);
    expect(() => planWaves(fleetOf(200, { maxCellsPerWave: 2, growthFactor: 1.01 }))).toThrow(
      /needs \d+ pipeline stages .* but a pipeline holds 50; raise waves.maxCellsPerWave/,
    );
  });

  it('keeps every invariant on random fleets and policies', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 300 }),
        fc.integer({ min: 0, max: 5 }),
        fc.double({ min: 1.1, max: 4, noNaN: true }),
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: 2 }),
        (count, singleCellWaves, growthFactor, maxCellsPerWave, regions) => {
          const fleet = fleetOf(count, { singleCellWaves, growthFactor, maxCellsPerWave }, regions);
          let plan;
          try {
            plan = planWaves(fleet);
          } catch (error) {
            expect(error).toBeInstanceOf(WavePlanError);
            return;
          }
          const ids = plan.waves.flatMap((w) => w.cells);
          // Every cell exactly once; canary first.
          expect([...ids].sort()).toEqual(fleet.cells.map((c) => c.id).sort());
          expect(plan.waves[0].kind).toBe('canary');
          expect(plan.waves[0].cells).toEqual(fleet.cells.filter((c) => c.canary).map((c) => c.id));
          const cap = Math.min(maxCellsPerWave, MAX_CELLS_PER_STAGE);
          const groups = plan.waves.filter((w) => w.kind === 'group');
          for (const [i, g] of groups.entries()) {
            // The cap holds; sizes never shrink, except the last wave, which takes what is left.
            expect(g.cells.length).toBeLessThanOrEqual(cap);
            if (i > 0 && i < groups.length - 1) expect(g.cells.length).toBeGreaterThanOrEqual(groups[i - 1].cells.length);
          }
          // Kinds in order: canary, singles, groups.
          const kinds = plan.waves.map((w) => w.kind).join(',');
          expect(kinds).toMatch(/^canary(,single)*(,group)*$/);
          // A region's first cell goes alone before any group touches the region.
          for (const g of groups) {
            for (const region of g.regions) {
              const earlier = plan.waves.filter((w) => w.index < g.index && w.cells.length === 1 && w.regions[0] === region);
              expect([g.name, region, earlier.length > 0]).toEqual([g.name, region, true]);
            }
          }
          // Deterministic.
          expect(planWaves(fleet)).toEqual(plan);
        },
      ),
      { numRuns: 150 },
    );
  });
});
