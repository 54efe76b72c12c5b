import { BAKE_ACTION_MAX_SECONDS, bakeSegments } from '../../../lib/domain/waves';

describe('bakeSegments (CodePipeline times a CodeBuild action out after 8 hours)', () => {
  it('keeps a bake that fits one action in one action', () => {
    expect(bakeSegments(0)).toEqual([0]);
    expect(bakeSegments(3600)).toEqual([3600]);
    expect(bakeSegments(BAKE_ACTION_MAX_SECONDS)).toEqual([BAKE_ACTION_MAX_SECONDS]);
  });

  it('chains a longer bake over equal actions of at most 7 h that add up to the bake', () => {
    expect(bakeSegments(BAKE_ACTION_MAX_SECONDS + 1)).toEqual([12601, 12600]);
    expect(bakeSegments(86_400)).toEqual([21600, 21600, 21600, 21600]);
    for (const seconds of [25_201, 50_000, 86_399]) {
      const parts = bakeSegments(seconds);
      expect(parts.reduce((a, b) => a + b, 0)).toBe(seconds);
      expect(Math.max(...parts)).toBeLessThanOrEqual(BAKE_ACTION_MAX_SECONDS);
    }
  });
});
