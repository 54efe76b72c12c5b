/**
 * Source of the WebAssembly kernel that hashes four keys at once (`npm run build:wasm` compiles it
 * into `sha256-simd-wasm.ts`; a test checks that the committed binary is this source compiled).
 *
 * SHA-256 of one padded 64-byte block per lane of an i32x4 vector: four keys per pass through the
 * 64 rounds, which is what takes batch lookups past what one scalar hash per key can do. Fully
 * unrolled; the working variables are renamed by the generator instead of moved, so each round is
 * straight-line vector arithmetic. Only the first output word is computed and stored: a bucket
 * needs no more.
 *
 * Memory: group g (four keys) reads its 16 message words, lane-interleaved (word i of lane l at
 * byte g*256 + i*16 + l*4, as 32-bit integers), and writes the four first words at byte
 * OUTPUT_OFFSET + g*16. One call hashes `groups` consecutive groups.
 */
import { SHA256_IV as IV, SHA256_K as K } from './hash';

export const GROUPS_PER_CALL = 256;
export const OUTPUT_OFFSET = GROUPS_PER_CALL * 256;

const hex = (n: number) => `0x${(n >>> 0).toString(16)}`;
const splat = (n: number) => `(v128.const i32x4 ${hex(n)} ${hex(n)} ${hex(n)} ${hex(n)})`;
const get = (name: string) => `(local.get $${name})`;
const rotr = (x: string, n: number) => `(v128.or (i32x4.shr_u ${x} (i32.const ${n})) (i32x4.shl ${x} (i32.const ${32 - n})))`;
const xor3 = (a: string, b: string, c: string) => `(v128.xor (v128.xor ${a} ${b}) ${c})`;
const add = (...terms: string[]) => terms.reduce((sum, t) => `(i32x4.add ${sum} ${t})`);

export function sha256SimdWat(): string {
  const w = Array.from({ length: 16 }, (_, i) => `w${i}`);
  const body: string[] = [];
  for (let i = 0; i < 16; i++) body.push(`(local.set $${w[i]} (v128.load offset=${i * 16} (local.get $in)))`);
  // s[0..7] name the locals currently holding a … h.
  let s = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
  s.forEach((name, i) => body.push(`(local.set $${name} ${splat(IV[i])})`));
  for (let i = 0; i < 64; i++) {
    const wi = w[i % 16];
    if (i >= 16) {
      const x15 = get(w[(i - 15) % 16]);
      const x2 = get(w[(i - 2) % 16]);
      const sigma0 = xor3(rotr(x15, 7), rotr(x15, 18), `(i32x4.shr_u ${x15} (i32.const 3))`);
      const sigma1 = xor3(rotr(x2, 17), rotr(x2, 19), `(i32x4.shr_u ${x2} (i32.const 10))`);
      body.push(`(local.set $${wi} ${add(get(wi), sigma0, get(w[(i - 7) % 16]), sigma1)})`);
    }
    const [a, b, c, d, e, f, g, h] = s.map(get);
    const bigSigma1 = xor3(rotr(e, 6), rotr(e, 11), rotr(e, 25));
    const ch = `(v128.bitselect ${f} ${g} ${e})`;
    body.push(`(local.set $t1 ${add(h, bigSigma1, ch, splat(K[i]), get(wi))})`);
    const bigSigma0 = xor3(rotr(a, 2), rotr(a, 13), rotr(a, 22));
    // Maj(a, b, c): where a and b differ the majority is c, elsewhere it is a.
    const maj = `(v128.bitselect ${c} ${a} (v128.xor ${a} ${b}))`;
    // The new e goes where d was, the new a where h was; then rename.
    body.push(`(local.set $${s[3]} (i32x4.add ${d} (local.get $t1)))`);
    body.push(`(local.set $${s[7]} (i32x4.add (local.get $t1) ${add(bigSigma0, maj)}))`);
    s = [s[7], s[0], s[1], s[2], s[3], s[4], s[5], s[6]];
  }
  body.push(`(v128.store offset=${OUTPUT_OFFSET} (local.get $out) (i32x4.add ${get(s[0])} ${splat(IV[0])}))`);
  const locals = [...'abcdefgh'.split(''), 't1', ...w].map((name) => `(local $${name} v128)`).join(' ');
  return `(module
  (memory (export "memory") ${Math.ceil((OUTPUT_OFFSET + GROUPS_PER_CALL * 16) / 65536)})
  (func (export "hash") (param $groups i32)
    (local $group i32) (local $in i32) (local $out i32) ${locals}
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $group) (local.get $groups)))
        (local.set $in (i32.shl (local.get $group) (i32.const 8)))
        (local.set $out (i32.shl (local.get $group) (i32.const 4)))
        ${body.join('\n        ')}
        (local.set $group (i32.add (local.get $group) (i32.const 1)))
        (br $next))))
)
`;
}
