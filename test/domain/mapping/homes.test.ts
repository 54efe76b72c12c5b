import { FleetConfigError, FleetInput, resolveFleet, seedMapping } from '../../../lib/domain/fleet';
import {
  addCell,
  bucketCounts,
  convertToHomes,
  diffMappings,
  drainCell,
  lookupMany,
  MappingChangeError,
  MappingDocument,
  rehomeTable,
  tableView,
  validateMapping,
} from '../../../lib/domain/mapping';
import { validInput as exampleInput } from '../../support/fleet';

const NOW = '2026-12-06T06:00:00.000Z';
const EU = 'eu-west-1';
const US = 'us-east-1';

/** The example fleet (two regions) with home regions: `eu-` keys live in the EU, every other key in the US. */
function homesInput(input: FleetInput = exampleInput()): FleetInput {
  return { ...input, homes: { defaultRegion: US, prefixes: { 'eu-': EU } } };
}

const problemsOf = (input: FleetInput): string[] => {
  try {
    resolveFleet(input);
    return [];
  } catch (error) {
    if (error instanceof FleetConfigError) return [...error.problems];
    throw error;
  }
};

/** n keys a new tenant of a region could have: random ids, `eu-` for the EU. */
const keys = (prefix: string, n: number, seed: string) => Array.from({ length: n }, (_, i) => `${prefix}${seed}${(i * 7919).toString(36)}x${i}`);

describe('home regions in the fleet file', () => {
  const fleet = resolveFleet(homesInput());
  const regionOf = new Map(fleet.cells.map((c) => [c.id, c.region]));

  it("resolves to one table per region, the default region's first, with each region's prefixes", () => {
    expect(fleet.homes).toEqual({
      tables: [
        { regions: [US], prefixes: [] },
        { regions: [EU], prefixes: ['eu-'] },
      ],
    });
  });

  it('refuses, one line each: unknown regions, prefixes that start one another, a region with no cell to hold its buckets, a lonely group', () => {
    const input = exampleInput();
    expect(
      problemsOf({
        ...input,
        homes: { defaultRegion: 'ap-south-1', prefixes: { 'eu-': EU, 'eu-x': 'eu-central-1' }, groups: [[US]] },
      }),
    ).toEqual([
      expect.stringContaining('homes.defaultRegion: `ap-south-1` is not a region of the fleet'),
      expect.stringContaining('homes.prefixes.eu-x: `eu-central-1` is not a region of the fleet'),
      expect.stringContaining('`eu-x` starts with `eu-`'),
      expect.stringContaining('homes.groups[0]: a group has at least two regions'),
    ]);
    const noUsCell = {
      ...input,
      cells: input.cells.filter((c) => c.region !== US || c.id === 'us-1').map((c) => (c.id === 'us-1' ? { ...c, tier: 'gold' } : c)),
    };
    expect(problemsOf(homesInput(noUsCell))).toEqual([
      expect.stringContaining(`homes: no active regular cell of the default tier \`general\` in ${US}`),
    ]);
    // Grouped, the two regions share one table: the EU's cells then hold the US's tenants too.
    expect(problemsOf({ ...homesInput(noUsCell), homes: { defaultRegion: US, groups: [[US, EU]] } })).toEqual([]);
  });

  it('the first mapping: 1,000 new keys of each region land only on cells of that region, each cell within 2% of its shape share', () => {
    const doc = seedMapping(fleet);
    expect(validateMapping(doc)).toEqual([]);
    expect(doc.schemaVersion).toBe(2);
    for (const [region, prefix] of [
      [EU, 'eu-'],
      [US, ''],
    ] as const) {
      const routed = lookupMany(doc, keys(prefix, 1000, region));
      expect(new Set(routed.map((r) => regionOf.get(r.cell)))).toEqual(new Set([region]));
      // Each table's buckets, by the tested rate of each cell's shape (the canary holds none).
      const table = region === US ? 0 : 1;
      const counts = bucketCounts(tableView(doc, table));
      const holders = fleet.cells.filter((c) => c.region === region && !c.canary);
      const capacity = holders.reduce((n, c) => n + c.shape.limits.requestsPerSecond, 0);
      for (const cell of holders) {
        const share = (counts.get(cell.id) ?? 0) / doc.bucketCount;
        expect(Math.abs(share - cell.shape.limits.requestsPerSecond / capacity)).toBeLessThan(0.02);
      }
    }
  });

  it('add-cell takes only its own region table’s buckets; drain keeps a table’s buckets in its region', () => {
    const doc = seedMapping(fleet);
    const sample = [...keys('eu-', 2000, 'a'), ...keys('', 2000, 'b')];
    const before = lookupMany(doc, sample);
    const added = addCell(doc, { id: 'eu-4', endpoint: 'http://eu-4.orders.cells.internal', region: EU }, { now: NOW });
    expect(validateMapping(added)).toEqual([]);
    const after = lookupMany(added, sample);
    const moved = sample.filter((_, i) => before[i].cell !== after[i].cell);
    expect(moved.length).toBeGreaterThan(0);
    expect(moved.every((k) => k.startsWith('eu-'))).toBe(true); // no US tenant moves
    expect(new Set(moved.map((k) => after[sample.indexOf(k)].cell))).toEqual(new Set(['eu-4']));
    expect(() => addCell(doc, { id: 'ap-1', endpoint: 'http://ap-1.x', region: 'ap-south-1' }, { now: NOW })).toThrow(MappingChangeError);

    const drained = drainCell(doc, 'us-2', { now: NOW });
    expect(validateMapping(drained)).toEqual([]);
    const afterDrain = lookupMany(drained, sample);
    expect(afterDrain.every((r) => regionOf.get(r.cell) === (r.key.startsWith('eu-') ? EU : US))).toBe(true);
    expect(afterDrain.some((r) => r.cell === 'us-2')).toBe(false);
    // The last cell of a region holding its table cannot be drained: its tenants would leave the region.
    const oneEu = drainCell(drainCell(doc, 'eu-1', { now: NOW }), 'eu-2', { now: NOW });
    expect(() => drainCell(oneEu, 'eu-3', { now: NOW })).toThrow(/home table of eu-west-1/);
  });

  it('validates a schema-2 document: its homes, each cell’s region, buckets covering every table', () => {
    const doc = seedMapping(fleet) as MappingDocument & Record<string, unknown>;
    const bad = {
      ...doc,
      homes: {
        tables: [
          { regions: [US], prefixes: ['eu'] },
          { regions: [EU, US], prefixes: ['eu-'] },
        ],
      },
      cells: { ...doc.cells, 'us-1': { ...doc.cells['us-1'], region: undefined } },
      buckets: doc.buckets.slice(0, -1),
    };
    expect(validateMapping(bad).map((p) => p.path)).toEqual(
      expect.arrayContaining(['$.homes.tables[1].regions[1]', '$.homes.tables[1].prefixes[0]', '$.cells.us-1.region', '$.buckets']),
    );
    expect(validateMapping({ ...doc, schemaVersion: 1 }).map((p) => p.path)).toEqual(expect.arrayContaining(['$.homes', '$.cells.us-1.region']));
  });
});

describe("converting today's document", () => {
  const plain = resolveFleet(exampleInput());
  const fleet = resolveFleet(homesInput());
  const regionOf = (id: string) => fleet.cells.find((c) => c.id === id)?.region;
  const today = seedMapping(plain);
  const converted = convertToHomes(today, fleet.homes!, regionOf, { now: NOW });
  const sample = [...keys('eu-', 5000, 'c'), ...keys('', 5000, 'd'), ...keys('internal-', 50, 'e')];

  it('moves 0 tenants: every key reaches the cell it reached, and the diff counts no bucket', () => {
    expect(validateMapping(converted, { previousVersion: today.version })).toEqual([]);
    expect(converted.schemaVersion).toBe(2);
    const before = lookupMany(today, sample);
    const after = lookupMany(converted, sample);
    expect(sample.filter((_, i) => before[i].cell !== after[i].cell)).toEqual([]);
    expect(diffMappings(today, converted).bucketsMoved).toBe(0);
  });

  it('rehome brings one region’s table to its cells: only that region’s tenants move, and then land only in it', () => {
    const rehomed = rehomeTable(converted, EU, { now: NOW }, () => true, new Map(fleet.cells.map((c) => [c.id, c.shape.limits.requestsPerSecond])));
    expect(validateMapping(rehomed, { previousVersion: converted.version })).toEqual([]);
    const before = lookupMany(converted, sample);
    const after = lookupMany(rehomed, sample);
    const moved = sample.filter((_, i) => before[i].cell !== after[i].cell);
    expect(moved.length).toBeGreaterThan(0);
    expect(moved.every((k) => k.startsWith('eu-'))).toBe(true);
    expect(after.filter((r) => r.key.startsWith('eu-')).every((r) => regionOf(r.cell) === EU)).toBe(true);
    // The diff counts the table's buckets that left other regions' cells, and nothing else.
    const diff = diffMappings(converted, rehomed);
    expect(diff.moves.every((m) => regionOf(m.from) === US && regionOf(m.to) === EU)).toBe(true);
    const us = rehomeTable(rehomed, US, { now: NOW });
    expect(lookupMany(us, sample).every((r) => r.via !== 'bucket' || regionOf(r.cell) === (r.key.startsWith('eu-') ? EU : US))).toBe(true);
  });

  it('adds a table for a new region after the others, moving no tenant; refuses a published table changed, or cells the fleet does not know', () => {
    const AP = 'ap-south-1';
    const more = { tables: [...fleet.homes!.tables, { regions: [AP], prefixes: ['ap-'] }] };
    const extended = convertToHomes(converted, more, regionOf, { now: NOW });
    expect(validateMapping(extended, { previousVersion: converted.version })).toEqual([]);
    const all = [...sample, ...keys('ap-', 3000, 'f')];
    const before = lookupMany(converted, all);
    expect(lookupMany(extended, all).filter((r, i) => r.cell !== before[i].cell)).toEqual([]);
    expect(diffMappings(converted, extended).bucketsMoved).toBe(0);
    expect(() => convertToHomes(converted, fleet.homes!, regionOf, { now: NOW })).toThrow(/already has the fleet file's home tables/);
    const reordered = { tables: [more.tables[0], more.tables[2], more.tables[1]] };
    expect(() => convertToHomes(converted, reordered, regionOf, { now: NOW })).toThrow(
      /home table 1 \(eu-west-1, prefixes eu-\) is not the fleet's table 1/,
    );
    expect(() => convertToHomes(today, fleet.homes!, () => undefined, { now: NOW })).toThrow(/not in the fleet file/);
  });
});
