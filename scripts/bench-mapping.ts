/**
 * npm run bench:mapping: lookups per second and the timings of the mapping operations.
 * Targets: lookup >= 1M keys/s in one process (one thread: `lookupMany`, SIMD-hashed, and
 * `lookup` key by key, both reported); add-cell on 65536 buckets < 50 ms;
 * parse + validate 65536 buckets with 100,000 exact overrides < 200 ms.
 */
import { addCell, compileMapping, initialMapping, InitialCell, MappingDocument, parseMapping, pinKey } from '../lib/domain/mapping';

const NOW = { now: new Date().toISOString() };
const cells = (n: number): InitialCell[] => [
  { id: 'canary', endpoint: 'https://canary.example', state: 'active', canary: true },
  ...Array.from({ length: n }, (_, i) => ({ id: `cell-${i + 1}`, endpoint: `https://cell-${i + 1}.example`, state: 'active' as const })),
];

function time<T>(run: () => T): { result: T; ms: number } {
  const started = process.hrtime.bigint();
  const result = run();
  return { result, ms: Number(process.hrtime.bigint() - started) / 1e6 };
}

/** Median of `runs` timings, after one warm-up run. */
function median(runs: number, run: () => unknown): number {
  run();
  const times = Array.from({ length: runs }, () => time(run).ms).sort((a, b) => a - b);
  return times[Math.floor(runs / 2)];
}

// Lookups: 16384 buckets, 1,000 exact overrides, 3 prefixes; 1M distinct tenant-style keys.
let doc: MappingDocument = initialMapping(cells(8), 16384, NOW);
for (let i = 0; i < 1000; i++) doc = pinKey(doc, `vip-${i}`, 'cell-1', NOW);
doc = { ...doc, overrides: { ...doc.overrides, prefix: { ...doc.overrides.prefix, 'acme-': 'cell-2', 'acme-eu-': 'cell-3' } } };
const keys = Array.from({ length: 1_000_000 }, (_, i) => `tenant-${i.toString(36)}-${(i * 2654435761) >>> 0}`);
const compiled = compileMapping(doc);
let sink = 0;
for (let i = 0; i < 100_000; i++) sink += compiled.lookup(keys[i]).bucket; // warm-up
const lookups = time(() => {
  for (const key of keys) sink += compiled.lookup(key).bucket;
});
const perSecond = Math.round(keys.length / (lookups.ms / 1000));
compiled.lookupMany(keys.slice(0, 100_000)); // warm-up
const many = time(() => compiled.lookupMany(keys));
for (const r of many.result) sink += r.bucket;
const manyPerSecond = Math.round(keys.length / (many.ms / 1000));

// add-cell on 65536 buckets over 16 cells.
const big = initialMapping(cells(16), 65536, NOW);
const addMs = median(11, () => addCell(big, { id: 'cell-new', endpoint: 'https://new.example' }, NOW));

// parse + validate: 65536 buckets (fragmented by several add-cells) and 100,000 exact overrides.
let fragmented = big;
for (let i = 0; i < 8; i++) fragmented = addCell(fragmented, { id: `grown-${i}`, endpoint: 'https://grown.example' }, NOW);
const exact: Record<string, string> = {};
for (let i = 0; i < 100_000; i++) exact[`tenant-${i}`] = `cell-${(i % 16) + 1}`;
const text = JSON.stringify({ ...fragmented, overrides: { exact, prefix: fragmented.overrides.prefix } });
const parseMs = median(7, () => {
  const parsed = parseMapping(text);
  if (!parsed.ok) throw new Error(parsed.problems[0].message);
});

const rows = [
  [
    'lookupMany, 1M keys in one call (compiled, 16384 buckets, 1,000 pins, 3 prefixes)',
    `${manyPerSecond.toLocaleString('en')} keys/s`,
    '>= 1,000,000 keys/s',
  ],
  ['lookup, key by key (same document and keys)', `${perSecond.toLocaleString('en')} keys/s`, '>= 1,000,000 keys/s'],
  ['add-cell, 65536 buckets, 16 -> 17 cells (median of 11)', `${addMs.toFixed(1)} ms`, '< 50 ms'],
  [
    `parse + validate, 65536 buckets in ${fragmented.buckets.length} ranges + 100,000 pins (${(text.length / 2 ** 20).toFixed(1)} MiB, median of 7)`,
    `${parseMs.toFixed(1)} ms`,
    '< 200 ms',
  ],
];
process.stdout.write('| operation | result | target |\n|---|---|---|\n');
for (const r of rows) process.stdout.write(`| ${r.join(' | ')} |\n`);
process.stdout.write(`node ${process.version}; checksum ${sink % 1000}\n`);
