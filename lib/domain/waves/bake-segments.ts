/**
 * CodePipeline times a CodeBuild action out after 8 hours, whatever the project's own timeout
 * (CodePipeline quotas, "Length of time before an action times out": "CodeBuild build action and
 * test action: 8 hours"; https://docs.aws.amazon.com/codepipeline/latest/userguide/limits.html).
 * One bake action therefore watches at most 7 hours, leaving the rest for queueing, provisioning
 * and the last poll; a longer bake is chained over several actions (`bakeSegments`).
 */
export const BAKE_ACTION_MAX_SECONDS = 7 * 3600;
/** The CodeBuild project timeout of a bake action: the segment plus slack, never over the 8 h action limit. */
export const BAKE_ACTION_LIMIT_SECONDS = 8 * 3600;

/**
 * Splits a wave's bake into consecutive actions of at most `BAKE_ACTION_MAX_SECONDS` each, as
 * equal as whole seconds allow (a 24 h bake is 4 × 6 h). A bake of 0 is one action that checks once.
 */
export function bakeSegments(seconds: number): number[] {
  if (!Number.isInteger(seconds) || seconds < 0) throw new Error(`bakeSegments: seconds ${seconds} must be a whole number >= 0`);
  const count = Math.max(1, Math.ceil(seconds / BAKE_ACTION_MAX_SECONDS));
  const base = Math.floor(seconds / count);
  return Array.from({ length: count }, (_, i) => base + (i < seconds - base * count ? 1 : 0));
}
