import { createHash } from 'crypto';
import fc from 'fast-check';
import { bucketOf, createKeyHasher, keyHash } from '../../lib/mapping';

const reference = (key: string) => createHash('sha256').update(key, 'utf8').digest().readUInt32BE(0);

describe('keyHash', () => {
  it('matches SHA-256 for every length across the block boundaries', () => {
    const hash = createKeyHasher();
    for (let n = 0; n <= 200; n++) {
      const key = Array.from({ length: n }, (_, i) => String.fromCharCode(33 + ((i * 7) % 94))).join('');
      expect([n, hash(key)]).toEqual([n, reference(key)]);
    }
  });

  it('matches SHA-256 on random ASCII and non-ASCII strings', () => {
    const hash = createKeyHasher();
    fc.assert(fc.property(fc.string({ maxLength: 300 }), (key) => hash(key) === reference(key)), { numRuns: 2000 });
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (key) => keyHash(key) === reference(key)), { numRuns: 500 });
  });

  it('is the DESIGN.md bucket: first 4 bytes big-endian mod bucketCount', () => {
    const digest = createHash('sha256').update('tenant-42').digest();
    expect(bucketOf('tenant-42', 16384)).toBe(digest.readUInt32BE(0) % 16384);
    expect(bucketOf('tenant-42', 1024)).toBe(digest.readUInt32BE(0) & 1023);
  });
});
