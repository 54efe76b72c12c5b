import { keyProblem } from '../mapping/key';
import { homeBucketOf } from '../mapping/homes';
import { MoveError, MoveSubject, Range } from './types';

/**
 * Parses `"12"`, `"0-15,40-47"` into sorted, merged ranges, checked against the bucket count.
 */
export function parseRanges(text: string, bucketCount: number): Range[] {
  const ranges: Range[] = [];
  for (const part of text.split(',').map((p) => p.trim())) {
    const match = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(part);
    if (!match) throw new MoveError(`bucket range "${part}": write N or N-M (for example 0-15,40)`);
    const from = Number(match[1]);
    const to = match[2] === undefined ? from : Number(match[2]);
    if (from > to) throw new MoveError(`bucket range "${part}": ${from} is greater than ${to}`);
    if (to >= bucketCount) throw new MoveError(`bucket range "${part}": buckets go from 0 to ${bucketCount - 1}`);
    ranges.push({ from, to });
  }
  return mergeRanges(ranges);
}

export function mergeRanges(ranges: readonly Range[]): Range[] {
  const sorted = [...ranges].sort((a, b) => a.from - b.from);
  const merged: Range[] = [];
  for (const r of sorted) {
    const last = merged[merged.length - 1];
    if (last && r.from <= last.to + 1) merged[merged.length - 1] = { from: last.from, to: Math.max(last.to, r.to) };
    else merged.push({ ...r });
  }
  return merged;
}

export function formatRanges(ranges: readonly Range[]): string {
  return ranges.map((r) => (r.from === r.to ? `${r.from}` : `${r.from}-${r.to}`)).join(',');
}

export function tenantSubject(tenant: string): MoveSubject {
  const problem = keyProblem(tenant);
  if (problem) throw new MoveError(`tenant ${JSON.stringify(tenant)}: ${problem}`);
  return { kind: 'tenant', tenant };
}

export function describeSubject(subject: MoveSubject): string {
  return subject.kind === 'tenant' ? `tenant ${subject.tenant}` : `buckets ${formatRanges(subject.ranges)}`;
}

function bucketsOverlap(a: readonly Range[], b: readonly Range[]): boolean {
  return a.some((x) => b.some((y) => x.from <= y.to && y.from <= x.to));
}

const inRanges = (bucket: number, ranges: readonly Range[]) => ranges.some((r) => bucket >= r.from && bucket <= r.to);

/**
 * True when the two subjects can share a tenant: same tenant, overlapping buckets, or a tenant
 * whose bucket is in the other's ranges. Two such moves may not run at once.
 */
export function subjectsOverlap(a: MoveSubject, b: MoveSubject, bucketCount: number): boolean {
  if (a.kind === 'tenant' && b.kind === 'tenant') return a.tenant === b.tenant;
  if (a.kind === 'buckets' && b.kind === 'buckets') return bucketsOverlap(a.ranges, b.ranges);
  const [tenant, buckets] =
    a.kind === 'tenant' ? [a, b as Extract<MoveSubject, { kind: 'buckets' }>] : [b as Extract<MoveSubject, { kind: 'tenant' }>, a];
  return inRanges(homeBucketOf(tenant.tenant, bucketCount, buckets.homes ?? tenant.homes), buckets.ranges);
}

/** Buckets a subject covers (a tenant: its own bucket), in the mapping's bucket space. */
export function subjectBuckets(subject: MoveSubject, bucketCount: number): number[] {
  if (subject.kind === 'tenant') return [homeBucketOf(subject.tenant, bucketCount, subject.homes)];
  const buckets: number[] = [];
  for (const r of subject.ranges) for (let b = r.from; b <= r.to; b++) buckets.push(b);
  return buckets;
}
