import { compressBuckets, expandBuckets } from '../../domain/mapping/buckets';
import { compileMapping } from '../../domain/mapping/lookup';
import { Freeze, MappingDocument } from '../../domain/mapping/types';
import { describeSubject, mergeRanges } from '../../domain/moves/subject';
import { MoveError, MoveSubject } from '../../domain/moves/types';

/**
 * Pure mapping changes a move makes: freeze, flip, unfreeze. Each returns the document unchanged
 * (same version) when it already says what is asked, so a resumed move publishes nothing twice.
 */

const EMPTY: Freeze = { exact: [], buckets: [] };

function bump(doc: MappingDocument, now: string, patch: Partial<MappingDocument>): MappingDocument {
  const next: MappingDocument = { ...doc, ...patch, version: doc.version + 1, createdAt: now };
  if (next.freeze && next.freeze.exact.length === 0 && next.freeze.buckets.length === 0) {
    const { freeze: _drop, ...rest } = next;
    return rest;
  }
  return next;
}

export function isFrozen(doc: MappingDocument, subject: MoveSubject): boolean {
  const freeze = doc.freeze ?? EMPTY;
  if (subject.kind === 'tenant') return freeze.exact.includes(subject.tenant);
  return subject.ranges.every((r) => freeze.buckets.some((f) => f.from <= r.from && f.to >= r.to));
}

export function freezeSubject(doc: MappingDocument, subject: MoveSubject, now: string): MappingDocument {
  if (isFrozen(doc, subject)) return doc;
  const freeze = doc.freeze ?? EMPTY;
  return bump(doc, now, {
    freeze:
      subject.kind === 'tenant'
        ? { exact: [...freeze.exact, subject.tenant], buckets: freeze.buckets }
        : { exact: freeze.exact, buckets: mergeRanges([...freeze.buckets, ...subject.ranges]) },
  });
}

export function unfreezeSubject(doc: MappingDocument, subject: MoveSubject, now: string): MappingDocument {
  const freeze = doc.freeze ?? EMPTY;
  if (subject.kind === 'tenant') {
    if (!freeze.exact.includes(subject.tenant)) return doc;
    return bump(doc, now, { freeze: { exact: freeze.exact.filter((t) => t !== subject.tenant), buckets: freeze.buckets } });
  }
  const remaining: { from: number; to: number }[] = [];
  for (const f of freeze.buckets) {
    let pieces = [{ ...f }];
    for (const r of subject.ranges) {
      pieces = pieces.flatMap((p) => {
        if (r.to < p.from || r.from > p.to) return [p];
        const out = [];
        if (p.from < r.from) out.push({ from: p.from, to: r.from - 1 });
        if (p.to > r.to) out.push({ from: r.to + 1, to: p.to });
        return out;
      });
    }
    remaining.push(...pieces);
  }
  if (remaining.length === freeze.buckets.length && remaining.every((r, i) => r.from === freeze.buckets[i].from && r.to === freeze.buckets[i].to))
    return doc;
  return bump(doc, now, { freeze: { exact: freeze.exact, buckets: remaining } });
}

/** The one cell that serves the subject now; throws when its buckets are split over cells. */
export function currentCell(doc: MappingDocument, subject: MoveSubject): string {
  if (subject.kind === 'tenant') return compileMapping(doc).lookup(subject.tenant).cell;
  const { cells, owner } = expandBuckets(doc);
  const found = new Set<string>();
  for (const r of subject.ranges) for (let b = r.from; b <= r.to; b++) found.add(cells[owner[b]]);
  if (found.size !== 1) {
    throw new MoveError(`${describeSubject(subject)} are served by ${[...found].join(', ')}: move the buckets of one cell at a time`);
  }
  return [...found][0];
}

/**
 * Routes the subject to `target`: a tenant gets an exact pin (or loses its pin when the target is
 * where it would go without one, as when it moves back); buckets are reassigned.
 */
export function flipSubject(doc: MappingDocument, subject: MoveSubject, target: string, now: string): MappingDocument {
  if (!doc.cells[target]) throw new MoveError(`cell ${target} is not in mapping v${doc.version}`);
  if (currentCell(doc, subject) === target) return doc;
  if (subject.kind === 'tenant') {
    const { [subject.tenant]: _pin, ...exact } = doc.overrides.exact;
    const unpinned: MappingDocument = { ...doc, overrides: { ...doc.overrides, exact } };
    const withoutPin = compileMapping(unpinned).lookup(subject.tenant).cell;
    return bump(doc, now, { overrides: { ...doc.overrides, exact: withoutPin === target ? exact : { ...exact, [subject.tenant]: target } } });
  }
  const expanded = expandBuckets(doc);
  const index = expanded.cells.indexOf(target);
  const owner = Int32Array.from(expanded.owner);
  for (const r of subject.ranges) owner.fill(index, r.from, r.to + 1);
  return bump(doc, now, { buckets: compressBuckets({ cells: expanded.cells, owner }) });
}

/** The flip and the end of the freeze in one new version (or none when both are already so). */
export function flipAndUnfreeze(doc: MappingDocument, subject: MoveSubject, target: string, now: string): MappingDocument {
  const flipped = flipSubject(doc, subject, target, now);
  const thawed = unfreezeSubject(flipped, subject, now);
  if (thawed === doc) return doc;
  return { ...thawed, version: doc.version + 1 };
}
