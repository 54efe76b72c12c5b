import { createHash } from 'crypto';

/**
 * bucket(key) = (first 4 bytes of SHA-256(key bytes), big-endian unsigned) mod bucketCount.
 *
 * Keys are ASCII by contract, so the key's char codes are its bytes. This is a plain SHA-256 that
 * keeps only the first output word and reuses one scratch schedule per hasher, several times
 * faster than `crypto.hash` for short keys, which is what lets `lookup` pass a million keys a second.
 * Non-ASCII input falls back to Node's SHA-256 over the UTF-8 bytes. Tests check both against
 * `crypto` on random inputs of every length around the block boundaries.
 */
/** SHA-256 round constants (FIPS 180-4 §4.2.2). */
export const SHA256_K: readonly number[] = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
  0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
  0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/** SHA-256 initial hash value (FIPS 180-4 §5.3.3). */
export const SHA256_IV: readonly number[] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

const K = new Int32Array(SHA256_K);
const IV = new Int32Array(SHA256_IV);

/**
 * SHA-256 first word of an ASCII string, or -1 when the string has a non-ASCII character (the
 * caller then hashes its UTF-8 bytes with Node's SHA-256). Owns its message schedule, so a caller
 * that hashes in a loop allocates nothing per key. Rounds are unrolled by two with the working
 * variables renamed instead of shifted: the hot path of every lookup.
 */
export function createAsciiHasher(): (key: string) => number {
  const w = new Int32Array(64);
  return (key: string): number => {
    const length = key.length;
    const blocks = ((length + 8) >>> 6) + 1;
    let h0 = IV[0],
      h1 = IV[1],
      h2 = IV[2],
      h3 = IV[3],
      h4 = IV[4],
      h5 = IV[5],
      h6 = IV[6],
      h7 = IV[7];
    let high = 0;
    for (let block = 0; block < blocks; block++) {
      const base = block << 6;
      for (let i = 0; i < 16; i++) {
        const p = base + (i << 2);
        let word = 0;
        if (p + 3 < length) {
          const c0 = key.charCodeAt(p),
            c1 = key.charCodeAt(p + 1),
            c2 = key.charCodeAt(p + 2),
            c3 = key.charCodeAt(p + 3);
          high |= c0 | c1 | c2 | c3;
          word = (c0 << 24) | (c1 << 16) | (c2 << 8) | c3;
        } else {
          // Tail: the last key bytes, the 0x80 terminator, zero padding.
          for (let q = p; q < p + 4; q++) {
            const byte = q < length ? key.charCodeAt(q) : q === length ? 0x80 : 0;
            if (q < length) high |= byte;
            word = (word << 8) | byte;
          }
        }
        w[i] = word;
      }
      // Message length in bits, big-endian, in the last 64 bits (keys are far below 2^29 bytes).
      if (block === blocks - 1) w[15] = length * 8;
      for (let i = 16; i < 64; i++) {
        const a = w[i - 15],
          b = w[i - 2];
        w[i] =
          (w[i - 16] +
            (((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3)) +
            w[i - 7] +
            (((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10))) |
          0;
      }
      let a = h0,
        b = h1,
        c = h2,
        d = h3,
        e = h4,
        f = h5,
        g = h6,
        h = h7;
      for (let i = 0; i < 64; i += 2) {
        // Round i: the new a lands in d, the new e in h.
        let t1 = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + (g ^ (e & (f ^ g))) + K[i] + w[i]) | 0;
        let t2 = ((((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) | (c & (a | b)))) | 0;
        h = (d + t1) | 0;
        d = (t1 + t2) | 0;
        // Round i+1 on (d, a, b, c, h, e, f, g): the new a lands in c, the new e in g.
        t1 = (g + (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^ ((h >>> 25) | (h << 7))) + (f ^ (h & (e ^ f))) + K[i + 1] + w[i + 1]) | 0;
        t2 = ((((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^ ((d >>> 22) | (d << 10))) + ((d & a) | (b & (d | a)))) | 0;
        g = (c + t1) | 0;
        c = (t1 + t2) | 0;
        // Rename back to (a … h).
        const na = c,
          nb = d,
          nc = a,
          nd = b,
          ne = g,
          nf = h,
          ng = e,
          nh = f;
        a = na;
        b = nb;
        c = nc;
        d = nd;
        e = ne;
        f = nf;
        g = ng;
        h = nh;
      }
      h0 = (h0 + a) | 0;
      h1 = (h1 + b) | 0;
      h2 = (h2 + c) | 0;
      h3 = (h3 + d) | 0;
      h4 = (h4 + e) | 0;
      h5 = (h5 + f) | 0;
      h6 = (h6 + g) | 0;
      h7 = (h7 + h) | 0;
    }
    return high > 0x7f ? -1 : h0 >>> 0;
  };
}

/** Hashes keys for bucketing; one per caller that hashes in a loop. */
export function createKeyHasher(): (key: string) => number {
  const ascii = createAsciiHasher();
  return (key: string) => {
    const word = ascii(key);
    return word >= 0 ? word : createHash('sha256').update(key, 'utf8').digest().readUInt32BE(0);
  };
}

/** First 4 bytes of SHA-256 of the key's bytes (UTF-8; for valid keys, ASCII), as an unsigned integer. */
export function keyHash(key: string): number {
  return createKeyHasher()(key);
}

/** The bucket a key falls in: `keyHash(key) mod bucketCount`. */
export function bucketOf(key: string, bucketCount: number): number {
  return keyHash(key) % bucketCount;
}

/**
 * The DESIGN.md bucket of `column` in SQL (contract 2), for PostgreSQL's built-in `sha256()`: a move
 * selects a bucket's rows inside the cell's database with it: first 4 bytes of SHA-256, big-endian, mod n.
 */
export function bucketSql(column: string, bucketCount: number): string {
  if (!Number.isInteger(bucketCount) || bucketCount < 1) throw new Error(`bucketCount ${bucketCount} is not a positive integer`);
  return `((('x' || encode(substring(sha256(convert_to(${column}, 'UTF8')) from 1 for 4), 'hex'))::bit(32)::bigint) % ${bucketCount})`;
}
