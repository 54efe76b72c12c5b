import { createKeyHasher } from '../mapping/hash';

/**
 * Shuffle sharding over router lanes (docs/lanes.md). A lane is an independent router unit of a
 * region (its own NLB, target group and service); a shard is `perTenant` lanes; any two shards in
 * use share at most `maxOverlap` lanes, so a tenant whose requests take down its shard's lanes fully
 * affects only the tenants of that exact shard, and every other tenant keeps a lane.
 */
export interface LaneSettings {
  /** Lanes per region, numbered 1..count. */
  readonly count: number;
  /** Lanes in each tenant's shard. */
  readonly perTenant: number;
  /** Lanes any two shards in use may share. */
  readonly maxOverlap: number;
}

/** A shard: its lanes, ascending, 1-based. */
export type Shard = readonly number[];

/** The most lanes a region may have: each is an NLB (50 per region by default) and a service. */
export const MAX_LANES = 32;
/** Shards a generated set holds at most: enough for 1/2000 blast radius, small enough to scan per lookup. */
export const MAX_SHARDS = 2000;

/** `1-4-7`: how a shard is named in files, DNS names (`shard-1-4-7`) and the CLI. */
export const shardId = (shard: Shard): string => shard.join('-');

/**
 * Every problem with the settings, one line each, with the field and the fix. `name` spells a field
 * the way the caller's user wrote it (`router.lanes.count` in the fleet file, `--lanes` on the CLI).
 */
export function laneSettingsProblems(settings: LaneSettings, name: (field: keyof LaneSettings) => string = (f) => `router.lanes.${f}`): string[] {
  const problems: string[] = [];
  const { count, perTenant, maxOverlap } = settings;
  const int = (field: keyof LaneSettings, value: unknown, min: number, max: number) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name(field)} must be an integer from ${min} to ${max}; got ${JSON.stringify(value)}`);
      return false;
    }
    return true;
  };
  const okCount = int('count', count, 2, MAX_LANES);
  const okPer = int('perTenant', perTenant, 1, MAX_LANES);
  const okOverlap = int('maxOverlap', maxOverlap, 0, MAX_LANES);
  if (okCount && okPer && perTenant >= count)
    problems.push(
      `${name('perTenant')} (${perTenant}) must be below ${name('count')} (${count}): a shard of every lane is no shard; lower it or add lanes`,
    );
  if (okPer && okOverlap && maxOverlap >= perTenant)
    problems.push(
      `${name('maxOverlap')} (${maxOverlap}) must be below ${name('perTenant')} (${perTenant}): shards sharing every lane are one shard; ` +
        `use ${Math.max(0, perTenant - 1)} or less`,
    );
  if (okPer && perTenant < 2 && problems.length === 0)
    problems.push(`${name('perTenant')} must be at least 2: with one lane a tenant has no lane to retry on when its lane fails`);
  return problems;
}

/** How the CLI spells each setting (`--lanes 8 --per-tenant 2 --max-overlap 1`). */
export const laneFlagName = (field: keyof LaneSettings): string =>
  ({ count: '--lanes', perTenant: '--per-tenant', maxOverlap: '--max-overlap' })[field];

/** Lanes two shards share. Both are ascending. */
export function overlap(a: Shard, b: Shard): number {
  let i = 0;
  let j = 0;
  let shared = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      shared++;
      i++;
      j++;
    } else if (a[i] < b[j]) i++;
    else j++;
  }
  return shared;
}

/** Every `size`-subset of 1..count in lexicographic order, lazily. */
function* combinations(count: number, size: number): Generator<number[]> {
  const c = Array.from({ length: size }, (_, i) => i + 1);
  for (;;) {
    yield [...c];
    let i = size - 1;
    while (i >= 0 && c[i] === count - size + i + 1) i--;
    if (i < 0) return;
    c[i]++;
    for (let j = i + 1; j < size; j++) c[j] = c[j - 1] + 1;
  }
}

/**
 * Adds to `existing` every shard of `settings` that keeps the overlap bound with all shards so far,
 * scanning candidates in lexicographic order (a greedy lexicode: for 8 lanes, 2 per tenant, overlap
 * 1, every one of the 28 pairs; for 16, 4, 2, the 140 blocks of a Steiner quadruple system).
 * When that would pass MAX_SHARDS, candidates are taken in a fixed pseudo-random order instead, so
 * the capped set still spreads evenly over the lanes (lexicographic order would put lane 1 in all).
 * Existing shards are kept as they are and first: adding lanes adds shards and moves no shard.
 */
export function extendShards(settings: LaneSettings, existing: readonly Shard[] = []): Shard[] {
  const lexical = greedy(settings, existing, combinations(settings.count, settings.perTenant));
  if (lexical.length < MAX_SHARDS) return lexical;
  const hash = createKeyHasher();
  const all = [...combinations(settings.count, settings.perTenant)]
    .map((c) => ({ c, rank: hash(`order/${shardId(c)}`) }))
    .sort((a, b) => a.rank - b.rank || shardId(a.c).localeCompare(shardId(b.c)))
    .map(({ c }) => c);
  return greedy(settings, existing, all);
}

function greedy(settings: LaneSettings, existing: readonly Shard[], candidates: Iterable<number[]>): Shard[] {
  const shards: Shard[] = existing.map((s) => [...s]);
  const seen = new Set(shards.map(shardId));
  for (const candidate of candidates) {
    if (shards.length >= MAX_SHARDS) break;
    if (seen.has(shardId(candidate))) continue;
    if (shards.every((s) => overlap(s, candidate) <= settings.maxOverlap)) {
      shards.push(candidate);
      seen.add(shardId(candidate));
    }
  }
  return shards;
}

/** Every problem with a stored shard set against the settings, one line each. */
export function shardSetProblems(settings: LaneSettings, shards: readonly Shard[], where = 'shards'): string[] {
  const problems: string[] = [];
  if (shards.length === 0) problems.push(`${where} is empty; run \`cellctl lanes init\` to generate it`);
  const seen = new Map<string, number>();
  shards.forEach((shard, i) => {
    const at = `${where}[${i}]`;
    if (!Array.isArray(shard) || shard.some((l) => !Number.isInteger(l))) {
      problems.push(`${at} must be a list of lane numbers, got ${JSON.stringify(shard)}`);
      return;
    }
    if (shard.length !== settings.perTenant) problems.push(`${at} (${shardId(shard)}) has ${shard.length} lanes; perTenant is ${settings.perTenant}`);
    if (shard.some((l) => l < 1 || l > settings.count)) problems.push(`${at} (${shardId(shard)}) names a lane outside 1..${settings.count}`);
    if (shard.some((l, k) => k > 0 && l <= shard[k - 1])) problems.push(`${at} (${shardId(shard)}) must list distinct lanes in ascending order`);
    const id = shardId(shard);
    const first = seen.get(id);
    if (first !== undefined) problems.push(`${at} repeats ${where}[${first}] (${id})`);
    else seen.set(id, i);
  });
  if (problems.length > 0) return problems;
  for (let i = 0; i < shards.length; i++)
    for (let j = i + 1; j < shards.length; j++) {
      const shared = overlap(shards[i], shards[j]);
      if (shared > settings.maxOverlap) {
        problems.push(
          `${where}[${i}] (${shardId(shards[i])}) and ${where}[${j}] (${shardId(shards[j])}) share ${shared} lanes; maxOverlap is ${settings.maxOverlap}`,
        );
        if (problems.length >= 10) return problems;
      }
    }
  return problems;
}

/** What a shard set buys: the figures `cellctl lanes plan` prints. */
export interface ShardPlan {
  readonly settings: LaneSettings;
  readonly shards: readonly Shard[];
  /** The most lanes two shards share. */
  readonly largestOverlap: number;
  /** Share of tenants (spread evenly over the shards) with no lane left when one lane fails: 0 with perTenant ≥ 2. */
  readonly oneLaneFullyAffected: number;
  /** Share of tenants that lose one lane of their shard (and retry on another) when the busiest lane fails. */
  readonly oneLanePartlyAffected: number;
  /**
   * Share of tenants with no lane left when every lane of one shard fails (a poison tenant's requests
   * crashing its lanes): the tenants of shards inside the failed lanes, the worst shard's figure.
   */
  readonly oneShardFullyAffected: number;
  /** Shards per lane, lowest and highest: how evenly the lanes carry tenants. */
  readonly shardsPerLane: { readonly min: number; readonly max: number };
}

/** Figures for a shard set, assuming tenants spread evenly over its shards (default shards are). */
export function planShards(settings: LaneSettings, shards: readonly Shard[]): ShardPlan {
  let largestOverlap = 0;
  for (let i = 0; i < shards.length; i++)
    for (let j = i + 1; j < shards.length; j++) largestOverlap = Math.max(largestOverlap, overlap(shards[i], shards[j]));
  const perLane = Array.from({ length: settings.count }, (_, l) => shards.filter((s) => s.includes(l + 1)).length);
  const inside = (failed: Shard) => shards.filter((s) => s.every((l) => failed.includes(l))).length;
  const worstShard = shards.reduce((worst, s) => Math.max(worst, inside(s)), 0);
  const n = shards.length || 1;
  return {
    settings,
    shards,
    largestOverlap,
    oneLaneFullyAffected: shards.filter((s) => s.length === 1).length / n,
    oneLanePartlyAffected: Math.max(0, ...perLane) / n,
    oneShardFullyAffected: worstShard / n,
    shardsPerLane: { min: Math.min(...perLane), max: Math.max(...perLane) },
  };
}

/**
 * A tenant's default shard: rendezvous (highest random weight) hashing of the key over the shard
 * set, so it needs no state, and growing the set moves only the tenants the new shards win (about
 * new/total of them) and no tenant between two old shards. The score is SHA-256's first word of
 * `<key>/<shard id>`, the mapping's hash (lib/domain/mapping/hash).
 */
export function defaultShardIndex(key: string, shards: readonly Shard[], hash: (text: string) => number = createKeyHasher()): number {
  let best = -1;
  let bestScore = -1;
  for (let i = 0; i < shards.length; i++) {
    const score = hash(`${key}/${shardId(shards[i])}`);
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  }
  return best;
}
