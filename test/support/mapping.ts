import { initialMapping, InitialCell, MappingDocument } from '../../lib/domain/mapping';

export const NOW = { now: '2026-11-29T16:00:00.000Z' };

export function cells(n: number, options: { canary?: boolean } = {}): InitialCell[] {
  const list: InitialCell[] = Array.from({ length: n }, (_, i) => ({
    id: `cell-${i + 1}`,
    endpoint: `http://127.0.0.1:${9001 + i}`,
    state: 'active' as const,
  }));
  return options.canary ? [{ id: 'canary', endpoint: 'http://127.0.0.1:9000', state: 'active', canary: true }, ...list] : list;
}

/** A valid document: `n` regular cells over `bucketCount` buckets, a canary with `internal-`. */
export function sampleMapping(n = 4, bucketCount = 16384): MappingDocument {
  return initialMapping(cells(n, { canary: true }), bucketCount, NOW);
}
