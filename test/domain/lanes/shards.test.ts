import {
  defaultShardIndex,
  extendShards,
  laneSettingsProblems,
  MAX_SHARDS,
  overlap,
  planShards,
  shardId,
  shardSetProblems,
} from '../../../lib/domain/lanes';

describe('shard sets', () => {
  it('8 lanes, 2 per tenant, overlap 1: all 28 pairs, largest overlap 1, one failed shard fully affects 1/28', () => {
    const settings = { count: 8, perTenant: 2, maxOverlap: 1 };
    const shards = extendShards(settings);
    expect(shards).toHaveLength(28);
    expect(new Set(shards.map(shardId)).size).toBe(28);
    const plan = planShards(settings, shards);
    expect(plan.largestOverlap).toBe(1);
    expect(plan.oneShardFullyAffected).toBeCloseTo(1 / 28, 10);
    expect(plan.oneLaneFullyAffected).toBe(0);
    expect(plan.oneLanePartlyAffected).toBeCloseTo(7 / 28, 10);
    expect(plan.shardsPerLane).toEqual({ min: 7, max: 7 });
  });

  it('16 lanes, 4 per tenant, overlap at most 2: 140 shards (a Steiner quadruple system), every pair within the bound', () => {
    const settings = { count: 16, perTenant: 4, maxOverlap: 2 };
    const shards = extendShards(settings);
    expect(shards).toHaveLength(140);
    expect(shardSetProblems(settings, shards)).toEqual([]);
    const plan = planShards(settings, shards);
    expect(plan.largestOverlap).toBe(2);
    expect(plan.oneShardFullyAffected).toBeCloseTo(1 / 140, 10);
    expect(plan.shardsPerLane).toEqual({ min: 35, max: 35 });
  });

  it('a capped set still spreads over every lane', () => {
    const settings = { count: 24, perTenant: 3, maxOverlap: 2 }; // C(24,3) = 2024 candidates, all within the bound
    const shards = extendShards(settings);
    expect(shards).toHaveLength(MAX_SHARDS);
    const { shardsPerLane } = planShards(settings, shards);
    // Lexicographic order would put lane 1 in 253 shards and lane 24 in few; the capped order keeps them near 250.
    expect(shardsPerLane.max - shardsPerLane.min).toBeLessThan(60);
  });

  it('adding lanes keeps every stored shard, first and unchanged, and the new set keeps the bound', () => {
    const before = extendShards({ count: 12, perTenant: 4, maxOverlap: 2 });
    const after = extendShards({ count: 16, perTenant: 4, maxOverlap: 2 }, before);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.length).toBeGreaterThan(before.length);
    expect(shardSetProblems({ count: 16, perTenant: 4, maxOverlap: 2 }, after)).toEqual([]);
  });

  it('names a stored set that breaks the bound, repeats a shard or leaves the lanes', () => {
    const settings = { count: 8, perTenant: 3, maxOverlap: 1 };
    expect(
      shardSetProblems(settings, [
        [1, 2, 3],
        [1, 2, 4],
      ]),
    ).toEqual(['shards[0] (1-2-3) and shards[1] (1-2-4) share 2 lanes; maxOverlap is 1']);
    expect(
      shardSetProblems(settings, [
        [1, 2, 3],
        [1, 2, 3],
      ]),
    ).toEqual(['shards[1] repeats shards[0] (1-2-3)']);
    expect(shardSetProblems(settings, [[1, 2, 9]])).toEqual(['shards[0] (1-2-9) names a lane outside 1..8']);
    expect(shardSetProblems(settings, [[3, 2, 1]])).toEqual(['shards[0] (3-2-1) must list distinct lanes in ascending order']);
    expect(shardSetProblems(settings, [])).toEqual(['shards is empty; run `cellctl lanes init` to generate it']);
  });

  it('refuses settings that make no shard, one line each with the field', () => {
    expect(laneSettingsProblems({ count: 8, perTenant: 8, maxOverlap: 1 })).toEqual([
      'router.lanes.perTenant (8) must be below router.lanes.count (8): a shard of every lane is no shard; lower it or add lanes',
    ]);
    expect(laneSettingsProblems({ count: 8, perTenant: 2, maxOverlap: 2 })).toEqual([
      'router.lanes.maxOverlap (2) must be below router.lanes.perTenant (2): shards sharing every lane are one shard; use 1 or less',
    ]);
    expect(laneSettingsProblems({ count: 8, perTenant: 1, maxOverlap: 0 })).toEqual([
      'router.lanes.perTenant must be at least 2: with one lane a tenant has no lane to retry on when its lane fails',
    ]);
    expect(laneSettingsProblems({ count: 40, perTenant: 2.5, maxOverlap: 1 })).toEqual([
      'router.lanes.count must be an integer from 2 to 32; got 40',
      'router.lanes.perTenant must be an integer from 1 to 32; got 2.5',
    ]);
  });

  it('overlap counts shared lanes', () => {
    expect(overlap([1, 3, 5], [2, 3, 5])).toBe(2);
    expect(overlap([1, 2], [3, 4])).toBe(0);
  });
});

describe('default shards', () => {
  const shards = extendShards({ count: 8, perTenant: 2, maxOverlap: 1 });

  it('is a function of the key alone, and spreads tenants evenly over the shards', () => {
    expect(defaultShardIndex('acme', shards)).toBe(defaultShardIndex('acme', [...shards]));
    const counts = new Array<number>(shards.length).fill(0);
    for (let i = 0; i < 28_000; i++) counts[defaultShardIndex(`tenant-${i}`, shards)]++;
    // 1,000 expected per shard; binomial sd ≈ 31, so ±15% is about five standard deviations.
    expect(Math.min(...counts)).toBeGreaterThan(850);
    expect(Math.max(...counts)).toBeLessThan(1150);
  });

  it('growing the set moves tenants only onto new shards, about new/total of them', () => {
    const before = extendShards({ count: 6, perTenant: 2, maxOverlap: 1 }); // 15 pairs
    const after = extendShards({ count: 8, perTenant: 2, maxOverlap: 1 }, before); // 28 pairs, the 15 first
    let moved = 0;
    for (let i = 0; i < 10_000; i++) {
      const key = `tenant-${i}`;
      const a = before[defaultShardIndex(key, before)];
      const b = after[defaultShardIndex(key, after)];
      if (shardId(a) !== shardId(b)) {
        moved++;
        expect(before.map(shardId)).not.toContain(shardId(b));
      }
    }
    expect(moved / 10_000).toBeGreaterThan(13 / 28 - 0.03);
    expect(moved / 10_000).toBeLessThan(13 / 28 + 0.03);
  });
});
