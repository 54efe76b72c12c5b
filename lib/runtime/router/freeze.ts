import { MappingDocument, totalBuckets } from '../../domain/mapping';

/**
 * The freeze (contract 3) costs the hot path nothing: frozen keys are routed by the maps every
 * request already looks up. A frozen tenant gets an entry in the exact map and a frozen bucket
 * range gets its own networks in the bucket map, both naming the `frozen` backend, which answers
 * 503 + Retry-After with a JSON body. A tenant pinned by an override inside a frozen bucket is not
 * frozen: it does not move with its bucket.
 */
export const FROZEN_BACKEND = 'frozen';

/** Seconds a frozen key's client should wait before retrying; a move's freeze lasts about a second. */
export const FROZEN_RETRY_AFTER_SECONDS = 1;

/**
 * Visits the exact routes: overrides, then frozen keys (a frozen key's override is replaced).
 * Undefined cell = frozen. A visitor, so a caller building map entries holds one array of them, not
 * another of routes first (100,000 pins are 100,000 pairs each).
 */
export function forEachExactRoute(doc: MappingDocument, visit: (key: string, cell: string | undefined) => void): void {
  const frozen = new Set(doc.freeze?.exact ?? []);
  const exact = doc.overrides.exact;
  for (const key in exact) if (!frozen.has(key)) visit(key, exact[key]);
  for (const key of frozen) visit(key, undefined);
}

/** The exact routes as pairs (see `forEachExactRoute`). */
export function exactRoutes(doc: MappingDocument): [string, string | undefined][] {
  const routes: [string, string | undefined][] = [];
  forEachExactRoute(doc, (key, cell) => routes.push([key, cell]));
  return routes;
}

/** The bucket table with frozen ranges carved out as their own ranges (cell undefined). */
export function bucketRoutes(doc: MappingDocument): { from: number; to: number; cell: string | undefined }[] {
  const frozen = [...(doc.freeze?.buckets ?? [])].sort((a, b) => a.from - b.from);
  if (frozen.length === 0) return doc.buckets.map((r) => ({ ...r }));
  const isFrozen = new Uint8Array(totalBuckets(doc));
  for (const f of frozen) isFrozen.fill(1, f.from, f.to + 1);
  const routes: { from: number; to: number; cell: string | undefined }[] = [];
  for (const range of doc.buckets) {
    let start = range.from;
    for (let b = range.from + 1; b <= range.to + 1; b++) {
      if (b === range.to + 1 || isFrozen[b] !== isFrozen[start]) {
        routes.push({ from: start, to: b - 1, cell: isFrozen[start] ? undefined : range.cell });
        start = b;
      }
    }
  }
  return routes;
}
