/**
 * Buckets weighted by shape (lib/domain/mapping/changes.ts): the first mapping and add-cell give
 * each cell its shape's tested rate's share of the buckets, and add-cell moves buckets into the new
 * cell only.
 */
import { addCell, bucketCounts, initialMapping, lookup, proportionalParts } from '../../../lib/domain/mapping';

const now = { now: '2026-12-04T00:00:00.000Z' };
const cell = (id: string, weight?: number, canary = false) => ({
  id,
  endpoint: `http://${id}:8080`,
  state: 'active' as const,
  canary,
  ...(weight ? { weight } : {}),
});

it('splits a total in proportion, every part at least one, the parts adding up', () => {
  expect(proportionalParts(16384, [2000, 2000, 500])).toEqual([7282, 7282, 1820]);
  expect(proportionalParts(10, [1, 1, 1])).toEqual([4, 3, 3]);
  expect(proportionalParts(4, [1000, 1, 1, 1])).toEqual([1, 1, 1, 1]);
  expect(() => proportionalParts(2, [1, 1, 1])).toThrow('2 cannot be split into 3 parts of at least 1');
  for (const weights of [
    [3, 1],
    [7, 5, 2, 1],
    [1, 1000000],
  ])
    expect(proportionalParts(1024, weights).reduce((a, b) => a + b, 0)).toBe(1024);
});

it("gives the first mapping's cells their weight's share, the canary none", () => {
  const doc = initialMapping([cell('canary', 2000, true), cell('big-1', 2000), cell('big-2', 2000), cell('small-1', 500)], 16384, now);
  const counts = bucketCounts(doc);
  expect(counts.get('canary') ?? 0).toBe(0);
  expect(counts.get('small-1')! / 16384).toBeCloseTo(500 / 4500, 3);
  // Without weights: the even split it always was.
  const even = bucketCounts(initialMapping([cell('a'), cell('b'), cell('c')], 1024, now));
  expect([even.get('a'), even.get('b'), even.get('c')]).toEqual([342, 341, 341]);
});

it("adds a cell with its weight's share, taken from the cells holding the most for their weight, nothing else moving", () => {
  const doc = initialMapping([cell('big-1', 2000), cell('big-2', 2000)], 16384, now);
  const weights = new Map([
    ['big-1', 2000],
    ['big-2', 2000],
    ['small-1', 500],
  ]);
  const added = addCell(doc, { id: 'small-1', endpoint: 'http://small-1:8080' }, now, weights);
  const counts = bucketCounts(added);
  expect(counts.get('small-1')).toBe(Math.round((16384 * 500) / 4500));
  expect(Math.abs(counts.get('big-1')! - counts.get('big-2')!)).toBeLessThanOrEqual(1);
  // Every key either stays or moves to the new cell.
  for (let i = 0; i < 2000; i++) {
    const before = lookup(doc, `tenant-${i}`).cell;
    const after = lookup(added, `tenant-${i}`).cell;
    expect(after === before || after === 'small-1').toBe(true);
  }
  // A holder without a weight: the even share, as before.
  const evenly = bucketCounts(addCell(doc, { id: 'small-1', endpoint: 'http://small-1:8080' }, now, new Map([['small-1', 500]])));
  expect(evenly.get('small-1')).toBe(Math.floor(16384 / 3));
});
