import { createKeyHasher } from './hash';
import { SHA256_SIMD_WASM } from './sha256-simd-wasm';
import { GROUPS_PER_CALL, OUTPUT_OFFSET } from './sha256-simd-wat';

/** Longest key that fits one SHA-256 block with its padding (55 bytes + 0x80 + 8-byte length). */
const ONE_BLOCK = 55;
const KEYS_PER_CALL = GROUPS_PER_CALL * 4;

interface Kernel {
  hash(groups: number): void;
  memory: { buffer: ArrayBuffer };
}
// The WebAssembly global, typed for the two calls made here (the project's TypeScript lib has no DOM types).
const wasm = (
  globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => object; Instance: new (module: object) => { exports: Kernel } } }
).WebAssembly;

let kernel: Kernel | undefined;

function loadKernel(): Kernel {
  kernel ??= new wasm.Instance(new wasm.Module(Buffer.from(SHA256_SIMD_WASM, 'base64'))).exports;
  return kernel;
}

/**
 * Hashes many keys at once: `keyHash` of every key, written to `out[i]`. Keys of one block (up
 * to 55 ASCII characters, which is nearly every real key) go four at a time through the SIMD
 * kernel; longer or non-ASCII keys through the scalar hasher. Same results as `keyHash`, checked
 * by tests on random keys of every length.
 */
export function createBatchHasher(): (keys: readonly string[], out: Uint32Array) => void {
  const { hash, memory } = loadKernel();
  const words = new Int32Array(memory.buffer, 0, OUTPUT_OFFSET / 4);
  const results = new Uint32Array(memory.buffer, OUTPUT_OFFSET, KEYS_PER_CALL);
  const scalar = createKeyHasher();
  const lane = new Int32Array(KEYS_PER_CALL); // slot in the kernel of each key of a chunk, or -1
  return (keys, out) => {
    if (out.length < keys.length) throw new RangeError(`out holds ${out.length} results for ${keys.length} keys`);
    for (let start = 0; start < keys.length; start += KEYS_PER_CALL) {
      const end = Math.min(keys.length, start + KEYS_PER_CALL);
      let slots = 0;
      for (let k = start; k < end; k++) {
        const key = keys[k];
        const length = key.length;
        if (length > ONE_BLOCK) {
          lane[k - start] = -1;
          continue;
        }
        // Word i of slot s sits at (s >> 2) * 64 + i * 4 + (s & 3).
        const base = ((slots >> 2) << 6) + (slots & 3);
        for (let i = 0; i < 16; i++) words[base + (i << 2)] = 0;
        let high = 0;
        for (let j = 0; j < length; j++) {
          const c = key.charCodeAt(j);
          high |= c;
          words[base + ((j >> 2) << 2)] |= c << (24 - ((j & 3) << 3));
        }
        if (high > 0x7f) {
          lane[k - start] = -1;
          continue;
        }
        words[base + ((length >> 2) << 2)] |= 0x80 << (24 - ((length & 3) << 3));
        words[base + 60] = length * 8;
        lane[k - start] = slots++;
      }
      if (slots > 0) hash((slots + 3) >> 2);
      for (let k = start; k < end; k++) {
        const slot = lane[k - start];
        out[k] = slot >= 0 ? results[slot] : scalar(keys[k]);
      }
    }
  };
}
