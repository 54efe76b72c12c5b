import { addCell, diffMappings, drainCell, guardChange, pinKey, prefixShare, setPrefix, unpinKey } from '../../../lib/domain/mapping';
import { NOW, sampleMapping } from '../../support/mapping';

describe('diffMappings', () => {
  it('counts buckets moved per pair and the share of the keyspace', () => {
    const before = sampleMapping(4);
    const diff = diffMappings(before, drainCell(before, 'cell-4', NOW));
    expect(diff.bucketsMoved).toBe(4096);
    expect(diff.movedShare).toBe(0.25);
    expect(diff.moves.map((m) => `${m.from}->${m.to}`).sort()).toEqual(['cell-4->cell-1', 'cell-4->cell-2', 'cell-4->cell-3']);
    expect(diff.stateChanges).toEqual([{ cell: 'cell-4', before: 'active', after: 'draining' }]);
  });

  it('lists override changes', () => {
    const a = pinKey(setPrefix(sampleMapping(), 'acme-', 'cell-1', NOW), 'tenant-1', 'cell-1', NOW);
    const b = setPrefix(unpinKey(pinKey(a, 'tenant-2', 'cell-2', NOW), 'tenant-1', NOW), 'acme-', 'cell-2', NOW);
    expect(diffMappings(a, b).overrides).toEqual([
      { kind: 'exact', key: 'tenant-1', before: 'cell-1', after: undefined },
      { kind: 'exact', key: 'tenant-2', before: undefined, after: 'cell-2' },
      { kind: 'prefix', key: 'acme-', before: 'cell-1', after: 'cell-2' },
    ]);
    expect(diffMappings(a, b).bucketsMoved).toBe(0);
  });

  it('counts what changed prefix overrides can cover as moved: one first character is 1/62 of all valid keys, each next one 67 times less', () => {
    const before = sampleMapping(4);
    expect(prefixShare('a')).toBeCloseTo(1 / 62, 12);
    expect(prefixShare('ab')).toBeCloseTo(1 / 62 / 67, 12);
    const avt = ['a', 'v', 't'].reduce((d, p) => setPrefix(d, p, 'cell-2', NOW), before);
    const diff = diffMappings(before, avt);
    expect(diff.bucketsMoved).toBe(0);
    expect(diff.prefixShare).toBeCloseTo(3 / 62, 12);
    expect(diff.movedShare).toBeCloseTo(3 / 62, 12);
    // A prefix under another changed prefix adds nothing: its keys are counted once.
    expect(diffMappings(before, setPrefix(avt, 'ab', 'cell-3', NOW)).prefixShare).toBeCloseTo(3 / 62, 12);
    // Enough of them and the 25% guard refuses the change.
    const sixteen = 'abcdefghijklmnop'.split('').reduce((d, p) => setPrefix(d, p, 'cell-2', NOW), before);
    expect(guardChange(before, sixteen)).toEqual([expect.stringMatching(/moves 25.8% of the keyspace \(limit 25.0%\)/)]);
  });

  it('refuses documents with different bucket counts', () => {
    expect(() => diffMappings(sampleMapping(4, 1024), sampleMapping(4, 2048))).toThrow(/every key would move/);
  });
});

describe('guardChange', () => {
  it('refuses a change that moves more than 25% of the keyspace', () => {
    const before = sampleMapping(2);
    expect(guardChange(before, addCell(before, { id: 'cell-3', endpoint: 'http://x.example' }, NOW))).toEqual([
      expect.stringMatching(/moves 33.3% of the keyspace \(limit 25.0%\)/),
    ]);
    expect(guardChange(before, addCell(before, { id: 'cell-3', endpoint: 'http://x.example' }, NOW), { maxMovedShare: 0.5 })).toEqual([]);
  });

  it('accepts adding a cell to a large enough fleet', () => {
    const before = sampleMapping(4);
    expect(guardChange(before, addCell(before, { id: 'cell-5', endpoint: 'http://x.example' }, NOW))).toEqual([]);
  });

  it('refuses to leave an active cell with no buckets', () => {
    const before = sampleMapping(4);
    const emptied = { ...before, version: 2, buckets: [{ from: 0, to: 16383, cell: 'cell-1' }] };
    expect(guardChange(before, emptied).filter((r) => r.includes('with no buckets'))).toHaveLength(3);
  });
});
