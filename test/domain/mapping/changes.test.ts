import fc from 'fast-check';
import {
  addCell,
  adoptionMapping,
  bucketCounts,
  diffMappings,
  drainCell,
  initialMapping,
  lookup,
  MappingChangeError,
  MappingDocument,
  pinKey,
  quarantineKey,
  removeCell,
  removePrefix,
  routesTo,
  setPrefix,
  unpinKey,
  validateMapping,
} from '../../../lib/domain/mapping';
import { cells, NOW, sampleMapping } from '../../support/mapping';

describe('initialMapping', () => {
  it('spreads buckets evenly as contiguous ranges over active non-canary cells', () => {
    const doc = initialMapping([...cells(3, { canary: true }), { id: 'old', endpoint: 'http://127.0.0.1:9100', state: 'draining' }], 16384, NOW);
    expect(validateMapping(doc)).toEqual([]);
    expect(doc.buckets).toEqual([
      { from: 0, to: 5461, cell: 'cell-1' },
      { from: 5462, to: 10922, cell: 'cell-2' },
      { from: 10923, to: 16383, cell: 'cell-3' },
    ]);
    expect(doc.overrides.prefix).toEqual({ 'internal-': 'canary' });
    expect(doc.version).toBe(1);
    expect(doc.cells.old.state).toBe('draining');
  });

  it('refuses a fleet with no regular cell', () => {
    expect(() => initialMapping(cells(0, { canary: true }), 16384, NOW)).toThrow(/no active non-canary cell/);
  });
});

describe('addCell', () => {
  it('gives the new cell floor or ceil of B/(n+1) buckets, moving nothing else', () => {
    const before = sampleMapping(4);
    const after = addCell(before, { id: 'cell-5', endpoint: 'http://127.0.0.1:9005' }, NOW);
    expect(validateMapping(after, { previousVersion: before.version })).toEqual([]);
    const got = bucketCounts(after).get('cell-5')!;
    expect([Math.floor(16384 / 5), Math.ceil(16384 / 5)]).toContain(got);
    const diff = diffMappings(before, after);
    expect(diff.moves.every((m) => m.to === 'cell-5')).toBe(true);
    expect(diff.moves.map((m) => m.buckets).sort()).toEqual([819, 819, 819, 819]);
    expect(after.version).toBe(2);
  });

  it('adds a quarantine cell without buckets', () => {
    const after = addCell(sampleMapping(), { id: 'quarantine', endpoint: 'http://127.0.0.1:9999', state: 'quarantine' }, NOW);
    expect(diffMappings(sampleMapping(), after).bucketsMoved).toBe(0);
    expect(after.cells.quarantine.state).toBe('quarantine');
  });

  it('refuses a duplicate or malformed id', () => {
    expect(() => addCell(sampleMapping(), { id: 'cell-1', endpoint: 'http://x' }, NOW)).toThrow(/already in the mapping/);
    expect(() => addCell(sampleMapping(), { id: 'Cell_9', endpoint: 'http://x' }, NOW)).toThrow(MappingChangeError);
  });
});

describe('drainCell', () => {
  it('spreads the cell buckets over the others, moves nothing else, marks it draining', () => {
    const before = sampleMapping(4);
    const after = drainCell(before, 'cell-2', NOW);
    expect(validateMapping(after)).toEqual([]);
    const diff = diffMappings(before, after);
    expect(diff.moves.every((m) => m.from === 'cell-2')).toBe(true);
    expect(diff.bucketsMoved).toBe(4096);
    const counts = [...bucketCounts(after).values()];
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    expect(after.cells['cell-2'].state).toBe('draining');
    expect(bucketCounts(after).has('canary')).toBe(false);
  });

  it('refuses to drain the last bucket holder or a cell that is not active', () => {
    expect(() => drainCell(sampleMapping(1), 'cell-1', NOW)).toThrow(/holds the only buckets/);
    const drained = drainCell(sampleMapping(), 'cell-1', NOW);
    expect(() => drainCell(drained, 'cell-1', NOW)).toThrow(/is draining, not active/);
    expect(() => drainCell(drained, 'ghost', NOW)).toThrow(/not in the mapping/);
  });
});

describe('a cell zero leaving the mapping', () => {
  const zero = { id: 'zero', endpoint: 'http://127.0.0.1:9999', state: 'active' as const };
  const adopted = () => setPrefix(adoptionMapping(zero, cells(3, { canary: true }), 16384, NOW), 'internal-', 'canary', NOW);

  it('drains onto the factory cells that hold no bucket yet, evenly, never onto the canary', () => {
    const after = drainCell(adopted(), 'zero', NOW);
    expect(validateMapping(after)).toEqual([]);
    expect(Object.fromEntries(bucketCounts(after))).toEqual({ 'cell-1': 5462, 'cell-2': 5461, 'cell-3': 5461 });
    expect(after.cells.zero.state).toBe('draining');
  });

  it('is removed once nothing routes to it, and refused while a bucket, a pin or a prefix does', () => {
    const drained = drainCell(adopted(), 'zero', NOW);
    // A drain keeps the cell's overrides.
    const pinned = drainCell(pinKey(adopted(), 'acme', 'zero', NOW), 'zero', NOW);
    expect(routesTo(pinned, 'zero')).toEqual({ buckets: 0, exact: ['acme'], prefix: [] });
    expect(() => removeCell(pinned, 'zero', NOW)).toThrow(
      new MappingChangeError('cell `zero` still serves: pin acme route to it; move them to other cells first'),
    );
    expect(() => removeCell(adopted(), 'zero', NOW)).toThrow(/^cell `zero` still serves: 16384 buckets route to it/);
    expect(() => removeCell(drainCell(setPrefix(adopted(), 'old-', 'zero', NOW), 'zero', NOW), 'zero', NOW)).toThrow(
      /still serves: prefix old- route to it/,
    );
    const removed = removeCell(drained, 'zero', NOW);
    expect(validateMapping(removed, { previousVersion: drained.version })).toEqual([]);
    expect(Object.keys(removed.cells)).toEqual(['canary', 'cell-1', 'cell-2', 'cell-3']);
    expect(removed.buckets).toEqual(drained.buckets);
    expect(() => removeCell(removed, 'zero', NOW)).toThrow(/`zero` is not in the mapping/);
  });
});

describe('overrides', () => {
  it('pins and unpins exact keys', () => {
    const pinned = pinKey(sampleMapping(), 'tenant-7', 'cell-2', NOW);
    expect(lookup(pinned, 'tenant-7')).toMatchObject({ cell: 'cell-2', via: 'exact' });
    const unpinned = unpinKey(pinned, 'tenant-7', NOW);
    expect(unpinned.overrides.exact).toEqual({});
    expect(unpinned.version).toBe(3);
    expect(() => unpinKey(unpinned, 'tenant-7', NOW)).toThrow(/not pinned/);
  });

  it('sets and removes prefixes', () => {
    const doc = setPrefix(sampleMapping(), 'acme-', 'cell-3', NOW);
    expect(lookup(doc, 'acme-1')).toMatchObject({ cell: 'cell-3', via: 'prefix' });
    expect(removePrefix(doc, 'acme-', NOW).overrides.prefix).toEqual({ 'internal-': 'canary' });
    expect(() => removePrefix(doc, 'nope', NOW)).toThrow(/has no override/);
    expect(() => setPrefix(doc, 'bad prefix', 'cell-1', NOW)).toThrow(/must match/);
  });

  it('refuses to pin to an unknown or draining cell, or an invalid key', () => {
    expect(() => pinKey(sampleMapping(), 'tenant-1', 'ghost', NOW)).toThrow(/not in the mapping/);
    expect(() => pinKey(drainCell(sampleMapping(), 'cell-1', NOW), 't', 'cell-1', NOW)).toThrow(/is draining/);
    expect(() => pinKey(sampleMapping(), 'bad key', 'cell-1', NOW)).toThrow(/must match/);
  });

  it('quarantines a key on the quarantine cell', () => {
    expect(() => quarantineKey(sampleMapping(), 'tenant-9', NOW)).toThrow(/no quarantine cell; add one/);
    const doc = addCell(sampleMapping(), { id: 'quarantine', endpoint: 'http://127.0.0.1:9999', state: 'quarantine' }, NOW);
    expect(lookup(quarantineKey(doc, 'tenant-9', NOW), 'tenant-9')).toMatchObject({ cell: 'quarantine', via: 'exact' });
    expect(() => quarantineKey(doc, 'tenant-9', { ...NOW, cell: 'cell-1' })).toThrow(/not a quarantine cell/);
  });
});

describe('random change sequences', () => {
  type Op =
    { kind: 'add' } | { kind: 'drain'; pick: number } | { kind: 'pin'; key: string; pick: number } | { kind: 'prefix'; prefix: string; pick: number };
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.constant<Op>({ kind: 'add' }),
    fc.record({ kind: fc.constant('drain' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('pin' as const), key: fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/), pick: fc.nat() }),
    fc.record({ kind: fc.constant('prefix' as const), prefix: fc.stringMatching(/^[a-z][a-z-]{0,8}$/), pick: fc.nat() }),
  );

  it('keep every invariant: valid, version+1, minimal churn, balanced adds', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.constantFrom(1024, 4096, 16384), fc.array(opArb, { maxLength: 12 }), (n, bucketCount, ops) => {
        let doc: MappingDocument = initialMapping(cells(n, { canary: true }), bucketCount, NOW);
        let added = 0;
        for (const op of ops) {
          const active = Object.keys(doc.cells).filter((id) => doc.cells[id].state === 'active');
          const holders = [...bucketCounts(doc).keys()];
          let next: MappingDocument;
          if (op.kind === 'add') {
            next = addCell(doc, { id: `new-${++added}`, endpoint: `http://127.0.0.1:${9500 + added}` }, NOW);
            const diff = diffMappings(doc, next);
            expect(diff.moves.every((m) => m.to === `new-${added}`)).toBe(true);
            const got = bucketCounts(next).get(`new-${added}`)!;
            expect(got).toBe(Math.floor(bucketCount / (holders.length + 1)));
          } else if (op.kind === 'drain') {
            if (holders.length < 2) continue;
            const victim = holders[op.pick % holders.length];
            next = drainCell(doc, victim, NOW);
            const diff = diffMappings(doc, next);
            expect(diff.moves.every((m) => m.from === victim)).toBe(true);
            expect(bucketCounts(next).has(victim)).toBe(false);
          } else if (op.kind === 'pin') {
            next = pinKey(doc, op.key, active[op.pick % active.length], NOW);
            expect(diffMappings(doc, next).bucketsMoved).toBe(0);
          } else {
            next = setPrefix(doc, op.prefix, active[op.pick % active.length], NOW);
            expect(diffMappings(doc, next).bucketsMoved).toBe(0);
          }
          expect(validateMapping(next, { previousVersion: doc.version })).toEqual([]);
          expect(next.version).toBe(doc.version + 1);
          doc = next;
        }
      }),
      { numRuns: 150 },
    );
  });
});
