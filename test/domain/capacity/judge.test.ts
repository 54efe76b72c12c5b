import { CellLimits, computeReadingOf, judgeCell, judgeFleet, place, signalPeakText } from '../../../lib/domain/capacity';
import { SETTINGS } from './fixture';

const shape = (cell: string, testedRps = 10_000): CellLimits => ({
  cell,
  region: 'eu-west-1',
  shape: 'large',
  state: 'active',
  testedRps,
  maxTenants: 100,
  zones: 3,
});

describe("judgeFleet: the seeds' worked example", () => {
  // 60,000 req/s at peak over 400 tenants, 10,000 req/s tested per cell, 70% target, largest tenant 6,000.
  const settings = { ...SETTINGS, targetUtilisation: 0.7 };
  const limits = Array.from({ length: 10 }, (_, i) => shape(`cell-${i + 1}`));
  const loads = limits.slice(0, 9).map((l, i) => ({
    cell: l.cell,
    currentRps: 6000,
    peakRps: 60_000 / 9,
    activeTenants: 44,
    topTenants:
      i === 0
        ? [
            { tenant: 'big', rps: 5000, peakRps: 6000 },
            { tenant: 'small', rps: 100, peakRps: 150 },
          ]
        : [],
  }));
  const fleet = judgeFleet(limits, loads, settings);

  it('needs nine cells at the target plus one spare', () => {
    expect(fleet.peakRps).toBeCloseTo(60_000);
    expect(fleet.cellsNeeded).toBe(10);
    expect(fleet.activeCells).toBe(10);
    expect(fleet.cellsToAdd).toBe(0);
  });

  it('checks the largest tenant against the target: 6,000 of 7,000 leaves 1,000 for its neighbours', () => {
    const cell = fleet.cells[0];
    expect(cell.targetRps).toBeCloseTo(7000);
    expect(cell.largestTenant).toEqual({ tenant: 'big', peakRps: 6000, share: 6000 / (60_000 / 9) });
    expect(fleet.largeTenants).toEqual([{ tenant: 'big', cell: 'cell-1', peakRps: 6000, shareOfTarget: 6000 / 7000 }]);
  });

  it('with eight cells, asks for two more', () => {
    const eight = judgeFleet(
      limits.slice(0, 8),
      loads.slice(0, 8).map((l) => ({ ...l, peakRps: 7500 })),
      settings,
    );
    expect(eight.cellsNeeded).toBe(10); // 60,000 / 7,000 → 9, plus the spare
    expect(eight.cellsToAdd).toBe(2);
  });
});

describe('judgeCell', () => {
  const load = (peakRps: number, activeTenants = 10) => ({ cell: 'c', currentRps: peakRps / 2, peakRps, activeTenants, topTenants: [] });
  it.each([
    [400, 'ok'],
    [500, 'ok'],
    [501, 'hot'],
    [1000, 'hot'],
    [1001, 'full'],
  ] as const)('a cell tested at 1000 req/s with a peak of %d is %s', (peak, status) => {
    expect(judgeCell(shape('c', 1000), load(peak), SETTINGS).status).toBe(status);
  });

  it('is full above its tenants whatever its rate', () => {
    expect(judgeCell(shape('c', 1000), load(10, 101), SETTINGS).status).toBe('full');
  });

  it('reports utilisation after losing one of three zones', () => {
    const cell = judgeCell(shape('c', 1000), load(600), SETTINGS);
    expect(cell.utilisation).toBeCloseTo(0.6);
    expect(cell.zoneLossUtilisation).toBeCloseTo(0.9);
    expect(cell.currentRps).toBe(300);
  });

  it('judges a cell without a measurement as idle, not as missing', () => {
    const cell = judgeCell(shape('c', 1000), undefined, SETTINGS);
    expect(cell).toMatchObject({ peakRps: 0, currentRps: 0, activeTenants: 0, status: 'ok', utilisation: 0 });
    expect(cell.largestTenant).toBeUndefined();
  });
});

describe("judgeCell with the cell's own signals (AWS)", () => {
  const quiet = { cell: 'c', currentRps: 100, peakRps: 200, activeTenants: 10, topTenants: [] };
  const reading = (peak: number | undefined, missingPeriods = 0) =>
    peak === undefined ? { missingPeriods } : { current: peak, peak, missingPeriods };

  /** Ten minutes of a compute with `running` of `maximum` tasks at `cpu` percent, the peak at minute 5. */
  const compute = (running: number, cpu: number, maximum = 10) => {
    const minutes = Array.from({ length: 10 }, (_, i) => i * 60_000);
    return computeReadingOf(
      minutes.map((t, i) => [t, i === 5 ? cpu : 20]),
      minutes.map((t) => [t, running]),
      maximum,
      'tasks',
      10,
    );
  };

  it('is hot when its database CPU peaks above the target, though its rate is under it, and says which signal', () => {
    const cell = judgeCell(shape('c', 1000), { ...quiet, signals: { databaseCpu: reading(81), computeCpu: compute(2, 60) } }, SETTINGS);
    expect(cell).toMatchObject({ status: 'hot', statusBy: ['databaseCpu'], utilisation: 0.2 });
    expect(cell.signals!.databaseCpu).toEqual({ current: 81, peak: 81, missingPeriods: 0 });
  });

  it('judges the compute by the share of its maximum in use: 2 of 10 tasks at 60% CPU is ok, 9 of 10 at 70% is hot', () => {
    // The tasks scale out at 60%: their average sits there under load whatever room the cell has left.
    const light = judgeCell(shape('c', 1000), { ...quiet, signals: { computeCpu: compute(2, 60) } }, SETTINGS);
    expect(light).toMatchObject({ status: 'ok', statusBy: [] });
    expect(light.signals!.computeCpu).toEqual({
      current: 4,
      peak: 12,
      missingPeriods: 0,
      maximum: 10,
      unit: 'tasks',
      peakRunning: 2,
      peakCpu: 60,
      currentRunning: 2,
      currentCpu: 20,
    });
    expect(signalPeakText('computeCpu', light.signals!.computeCpu)).toBe('12% of max (2 of 10 tasks at 60% CPU)');
    const busy = judgeCell(shape('c', 1000), { ...quiet, signals: { computeCpu: compute(9, 70) } }, SETTINGS);
    expect(busy).toMatchObject({ status: 'hot', statusBy: ['computeCpu'] });
    expect(busy.signals!.computeCpu!.peak).toBeCloseTo(63);
    // At its maximum the average CPU is the share: 10 of 10 at 50.5% is just over the target.
    expect(judgeCell(shape('c', 1000), { ...quiet, signals: { computeCpu: compute(10, 50.5) } }, SETTINGS).statusBy).toEqual(['computeCpu']);
    expect(
      judgeCell(shape('c', 1000), { ...quiet, peakRps: 700, signals: { computeCpu: compute(10, 90), databaseCpu: reading(60) } }, SETTINGS).statusBy,
    ).toEqual(['rate', 'computeCpu', 'databaseCpu']);
  });

  it('takes the compute as missing without its running count: never 0, never a guess from the CPU alone', () => {
    const minutes = Array.from({ length: 10 }, (_, i) => i * 60_000);
    const noCount = computeReadingOf(
      minutes.map((t) => [t, 95]),
      [],
      10,
      'tasks',
      10,
    );
    expect(noCount).toEqual({ missingPeriods: 10, maximum: 10, unit: 'tasks' });
    const cell = judgeCell(shape('c', 1000), { ...quiet, signals: { computeCpu: noCount } }, SETTINGS);
    expect(cell).toMatchObject({ status: 'ok', statusBy: [] });
    expect(signalPeakText('computeCpu', cell.signals!.computeCpu)).toBeUndefined();
    // Periods with a CPU point but no count (or a count but no CPU) are missing; the others count.
    const partial = computeReadingOf(
      minutes.map((t) => [t, 95]),
      minutes.slice(0, 3).map((t) => [t, 8]),
      10,
      'instances',
      10,
    );
    expect(partial).toMatchObject({ peak: 76, current: 76, missingPeriods: 7, peakRunning: 8, unit: 'instances' });
    expect(signalPeakText('computeCpu', partial)).toBe('76% of max (8 of 10 instances at 95% CPU)');
  });

  it('stays ok at the target exactly, and is full only by rate or tenants (CPU never makes a cell full)', () => {
    expect(judgeCell(shape('c', 1000), { ...quiet, signals: { databaseCpu: reading(50) } }, SETTINGS)).toMatchObject({ status: 'ok', statusBy: [] });
    expect(judgeCell(shape('c', 1000), { ...quiet, peakRps: 1200, signals: { databaseCpu: reading(99) } }, SETTINGS)).toMatchObject({
      status: 'full',
      statusBy: ['rate'],
    });
  });

  it('takes a signal without data as missing, not as 0 and not as a cause', () => {
    const cell = judgeCell(
      shape('c', 1000),
      { ...quiet, signals: { databaseCpu: reading(undefined, 60), databaseConnections: reading(undefined, 60) } },
      SETTINGS,
    );
    expect(cell).toMatchObject({ status: 'ok', statusBy: [] });
    expect(cell.signals!.databaseCpu).toEqual({ missingPeriods: 60 });
    expect(cell.signals!.databaseCpu!.peak).toBeUndefined();
  });

  it("leaves a CPU-hot cell out of placement and out of a plan's receivers", () => {
    const limits = [shape('a', 1000), shape('b', 1000), shape('c', 1000)];
    const fleet = judgeFleet(
      limits,
      [
        { cell: 'a', currentRps: 100, peakRps: 100, activeTenants: 1, topTenants: [], signals: { databaseCpu: reading(85) } },
        { cell: 'b', currentRps: 300, peakRps: 300, activeTenants: 1, topTenants: [] },
        { cell: 'c', currentRps: 400, peakRps: 400, activeTenants: 1, topTenants: [] },
      ],
      SETTINGS,
    );
    // `a` has the most room by rate, but its database is hot: the best fit among the others is `c`.
    expect(place(fleet, { tenant: 'new', expectedRps: 50 })).toMatchObject({ kind: 'fits', cell: 'c' });
    expect(place(fleet, { tenant: 'new', expectedRps: 150 })).toMatchObject({ kind: 'fits', cell: 'b' });
    expect(place(fleet, { tenant: 'new', expectedRps: 300 })).toMatchObject({ kind: 'no-room' });
  });
});
