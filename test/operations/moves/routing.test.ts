import { compileMapping, validateMapping } from '../../../lib/domain/mapping';
import {
  currentCell,
  flipAndUnfreeze,
  flipSubject,
  freezeSubject,
  isFrozen,
  MoveError,
  parseRanges,
  subjectsOverlap,
  unfreezeSubject,
} from '../../../lib/operations/moves';
import { sampleMapping } from '../../support/mapping';

const NOW = '2026-11-30T12:00:00.000Z';

describe('bucket ranges', () => {
  test('parse, sort and merge; bad input says how to write it', () => {
    expect(parseRanges('40-47, 0-15,16,3', 1024)).toEqual([
      { from: 0, to: 16 },
      { from: 40, to: 47 },
    ]);
    expect(() => parseRanges('5-2', 1024)).toThrow(/5 is greater than 2/);
    expect(() => parseRanges('1024', 1024)).toThrow(/from 0 to 1023/);
    expect(() => parseRanges('a-b', 1024)).toThrow(/write N or N-M/);
  });

  test('overlap between tenants and buckets', () => {
    const bucket = compileMapping(sampleMapping(4, 1024)).lookup('acme').bucket;
    expect(subjectsOverlap({ kind: 'tenant', tenant: 'acme' }, { kind: 'buckets', ranges: [{ from: bucket, to: bucket }] }, 1024)).toBe(true);
    expect(subjectsOverlap({ kind: 'tenant', tenant: 'acme' }, { kind: 'buckets', ranges: [{ from: bucket + 1, to: bucket + 5 }] }, 1024)).toBe(
      false,
    );
    expect(subjectsOverlap({ kind: 'buckets', ranges: [{ from: 0, to: 9 }] }, { kind: 'buckets', ranges: [{ from: 9, to: 20 }] }, 1024)).toBe(true);
    expect(subjectsOverlap({ kind: 'tenant', tenant: 'a' }, { kind: 'tenant', tenant: 'b' }, 1024)).toBe(false);
  });
});

describe('freeze, flip, unfreeze on the mapping', () => {
  const doc = sampleMapping(4, 1024);
  const tenant = { kind: 'tenant', tenant: 'acme' } as const;

  test('freeze is a valid new version, idempotent, and unfreeze removes the field', () => {
    const frozen = freezeSubject(doc, tenant, NOW);
    expect(frozen.version).toBe(doc.version + 1);
    expect(frozen.freeze).toEqual({ exact: ['acme'], buckets: [] });
    expect(validateMapping(frozen, { previousVersion: doc.version })).toEqual([]);
    expect(freezeSubject(frozen, tenant, NOW)).toBe(frozen);
    expect(isFrozen(frozen, tenant)).toBe(true);
    const both = freezeSubject(frozen, { kind: 'buckets', ranges: [{ from: 10, to: 20 }] }, NOW);
    const partly = unfreezeSubject(both, { kind: 'buckets', ranges: [{ from: 12, to: 13 }] }, NOW);
    expect(partly.freeze).toEqual({
      exact: ['acme'],
      buckets: [
        { from: 10, to: 11 },
        { from: 14, to: 20 },
      ],
    });
    const thawed = unfreezeSubject(
      unfreezeSubject(unfreezeSubject(partly, { kind: 'buckets', ranges: [{ from: 0, to: 1023 }] }, NOW), tenant, NOW),
      tenant,
      NOW,
    );
    expect(thawed.freeze).toBeUndefined();
    expect(validateMapping(thawed)).toEqual([]);
  });

  test('the validator rejects a malformed freeze with its path', () => {
    const problems = validateMapping({
      ...doc,
      freeze: {
        exact: ['bad key'],
        buckets: [
          { from: 5, to: 2 },
          { from: 0, to: 5000 },
        ],
        extra: 1,
      },
    });
    expect(problems.map((p) => p.path)).toEqual(['$.freeze.extra', '$.freeze.exact[0]', '$.freeze.buckets[0]', '$.freeze.buckets[1]']);
    expect(validateMapping({ ...doc, freeze: [] })[0]).toMatchObject({ path: '$.freeze' });
  });

  test('a tenant flip pins it to the target; flipping it back removes the pin', () => {
    const home = currentCell(doc, tenant);
    const target = Object.keys(doc.cells).find((c) => c !== home && c !== 'canary')!;
    const there = flipSubject(doc, tenant, target, NOW);
    expect(there.overrides.exact).toEqual({ acme: target });
    expect(flipSubject(there, tenant, target, NOW)).toBe(there);
    const back = flipSubject(there, tenant, home, NOW);
    expect(back.overrides.exact).toEqual({});
    expect(currentCell(back, tenant)).toBe(home);
  });

  test('flip and unfreeze in one version, idempotent', () => {
    const frozen = freezeSubject(doc, tenant, NOW);
    const target = Object.keys(doc.cells).find((c) => c !== currentCell(doc, tenant) && c !== 'canary')!;
    const done = flipAndUnfreeze(frozen, tenant, target, NOW);
    expect(done.version).toBe(frozen.version + 1);
    expect(done.freeze).toBeUndefined();
    expect(currentCell(done, tenant)).toBe(target);
    expect(flipAndUnfreeze(done, tenant, target, NOW)).toBe(done);
  });

  test('a bucket flip reassigns the ranges; ranges split over cells are refused', () => {
    const owner = doc.buckets[0].cell;
    const other = doc.buckets[1].cell;
    const flipped = flipSubject(doc, { kind: 'buckets', ranges: [{ from: 3, to: 5 }] }, other, NOW);
    expect(validateMapping(flipped, { previousVersion: doc.version })).toEqual([]);
    expect(currentCell(flipped, { kind: 'buckets', ranges: [{ from: 3, to: 5 }] })).toBe(other);
    expect(currentCell(flipped, { kind: 'buckets', ranges: [{ from: 0, to: 2 }] })).toBe(owner);
    expect(() => currentCell(flipped, { kind: 'buckets', ranges: [{ from: 0, to: 5 }] })).toThrow(MoveError);
  });
});
