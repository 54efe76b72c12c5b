import { createHash } from 'crypto';
import fc from 'fast-check';
import { bucketOf, createKeyHasher, keyHash } from '../../../lib/domain/mapping';
import { createBatchHasher } from '../../../lib/domain/mapping/hash-batch';
import { SHA256_SIMD_WASM } from '../../../lib/domain/mapping/sha256-simd-wasm';
import { compileSha256Simd } from '../../../scripts/build-wasm';

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
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (key) => hash(key) === reference(key)),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (key) => keyHash(key) === reference(key)),
      { numRuns: 500 },
    );
  });

  it('is the DESIGN.md bucket: first 4 bytes big-endian mod bucketCount', () => {
    const digest = createHash('sha256').update('tenant-42').digest();
    expect(bucketOf('tenant-42', 16384)).toBe(digest.readUInt32BE(0) % 16384);
    expect(bucketOf('tenant-42', 1024)).toBe(digest.readUInt32BE(0) & 1023);
  });
});

describe('the batch hasher (SIMD, four keys at a time)', () => {
  it('matches SHA-256 for every length, one-block keys and longer ones mixed in one batch', () => {
    const keys = Array.from({ length: 201 }, (_, n) => Array.from({ length: n }, (_, i) => String.fromCharCode(33 + ((i * 7 + n) % 94))).join(''));
    const out = new Uint32Array(keys.length);
    createBatchHasher()(keys, out);
    expect([...out].map((h, n) => [n, h])).toEqual(keys.map((key, n) => [n, reference(key)]));
  });

  it('matches SHA-256 on random batches, non-ASCII keys and batches over one kernel call included', () => {
    const hashMany = createBatchHasher();
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: 'grapheme', maxLength: 20 })), { maxLength: 2500 }), (keys) => {
        const out = new Uint32Array(keys.length);
        hashMany(keys, out);
        return keys.every((key, i) => out[i] === reference(key));
      }),
      { numRuns: 40 },
    );
  });

  it('runs the committed kernel, which is its source compiled (npm run build:wasm)', async () => {
    expect(Buffer.from(await compileSha256Simd()).toString('base64')).toBe(SHA256_SIMD_WASM);
  });
});
