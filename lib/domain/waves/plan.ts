import { Fleet } from '../fleet';
import { bakeSegments } from './bake-segments';

export type WaveKind = 'canary' | 'single' | 'group';

/** Cells deployed together, then watched for `bakeSeconds` before the next wave starts. */
export interface Wave {
  /** 1-based position among the cell waves. */
  readonly index: number;
  /** Stage name: `wave-<index>-<kind>`. */
  readonly name: string;
  readonly kind: WaveKind;
  readonly cells: readonly string[];
  readonly regions: readonly string[];
  readonly bakeSeconds: number;
  /** Cells that have the change once this wave is done. */
  readonly cumulativeCells: number;
  /** `cumulativeCells` over all cells, 0 … 1. */
  readonly cumulativeShare: number;
}

/**
 * Router stacks deploy after the cells (they link every cell's endpoint service), region by region,
 * two waves per region: the region's router stack with its canary group's stack
 * (`routers-<region>-canary-group`), baked on the canary group's alarms, then the stack of its
 * other groups (`routers-<region>`), baked on every group's alarms before the next region.
 */
export interface RouterWave {
  readonly name: string;
  readonly region: string;
  /** `canary`: the region's router stack and its canary group; `rest`: the region's other groups. */
  readonly part: 'canary' | 'rest';
  /**
   * Watched after the wave deploys: the canary bake for the first region's canary group (the first
   * routers anywhere to take a change), the single-wave bake for every other router wave.
   */
  readonly bakeSeconds: number;
}

export interface WavePlan {
  readonly routerWaves: readonly RouterWave[];
  readonly waves: readonly Wave[];
  /** Sum of the bakes: the rollout takes at least this long, plus deployment time. */
  readonly minimumRolloutSeconds: number;
}

/**
 * CodePipeline allows 50 actions per stage: one deploy action per cell, the step before the deploys
 * that clears a failed first create, and the wave's bake action(s).
 */
export const MAX_ACTIONS_PER_STAGE = 50;
/** Actions of a stage besides its deploys and bakes: the failed-create step (lib/constructs/pipeline/failed-create.ts). */
export const PRE_DEPLOY_ACTIONS = 1;
/** The most cells a stage holds with a bake of one action; a bake over 7 h takes more (see bakeSegments). */
export const MAX_CELLS_PER_STAGE = MAX_ACTIONS_PER_STAGE - PRE_DEPLOY_ACTIONS - 1;
/** CodePipeline allows 50 stages per pipeline. */
export const MAX_PIPELINE_STAGES = 50;
/** Stages every pipeline has before the waves: Source, Build, UpdatePipeline, Assets. */
export const FIXED_STAGES = 4;

/** The fleet cannot be rolled out by one pipeline as configured. */
export class WavePlanError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WavePlanError';
  }
}

/**
 * The rollout order, a pure function of the fleet: canary cell(s) → single-cell waves → groups
 * growing by the growth factor up to the cap. Every cell is in exactly one wave; the first cell of
 * every region goes alone (or is the canary) before any group touches that region, adding single
 * waves beyond `singleCellWaves` when regions need them; cells keep config order otherwise, so a
 * cell appended to the config lands in the last wave. Router stacks get their own waves, one region
 * at a time, after the cells: a router stack links every cell, so the cells must exist first.
 * Waves declared on the cells (`wave: N` on every cell) replace the cut: they are the waves.
 */
export function planWaves(fleet: Pick<Fleet, 'cells' | 'waves'>): WavePlan {
  const policy = fleet.waves;
  // A bake longer than one CodeBuild action may run is chained over several actions of the stage.
  const cap = Math.min(policy.maxCellsPerWave, MAX_ACTIONS_PER_STAGE - PRE_DEPLOY_ACTIONS - bakeSegments(policy.bakeSeconds.group).length);
  const canaries = fleet.cells.filter((c) => c.canary);
  if (canaries.length === 0) throw new WavePlanError('the fleet has no canary cell; mark one `canary: true`');
  const rest = fleet.cells.filter((c) => !c.canary);

  // Singles: the first cell of each region the canary does not cover, then more up to singleCellWaves.
  const covered = new Set(canaries.map((c) => c.region));
  const single = new Set<string>();
  for (const cell of rest) {
    if (!covered.has(cell.region)) {
      covered.add(cell.region);
      single.add(cell.id);
    }
  }
  for (const cell of rest) {
    if (single.size >= policy.singleCellWaves) break;
    single.add(cell.id);
  }
  const singles = rest.filter((c) => single.has(c.id));
  const grouped = rest.filter((c) => !single.has(c.id));

  const byId = new Map(fleet.cells.map((c) => [c.id, c]));
  const total = fleet.cells.length;
  const waves: Wave[] = [];
  let exposed = 0;
  const push = (kind: WaveKind, cells: string[]) => {
    exposed += cells.length;
    const index = waves.length + 1;
    waves.push({
      index,
      name: `wave-${index}-${kind}`,
      kind,
      cells,
      regions: [...new Set(cells.map((id) => byId.get(id)!.region))],
      bakeSeconds: policy.bakeSeconds[kind],
      cumulativeCells: exposed,
      cumulativeShare: exposed / total,
    });
  };
  if (fleet.cells.every((c) => c.wave !== undefined)) {
    // Declared on the cells (validated: wave 1 the canaries, no gap, within the cap): exactly those,
    // each in config order; a wave of one cell bakes as a single, a larger one as a group.
    const numbers = [...new Set(fleet.cells.map((c) => c.wave!))].sort((a, b) => a - b);
    for (const n of numbers) {
      const cells = fleet.cells.filter((c) => c.wave === n).map((c) => c.id);
      if (cells.length > cap) throw new WavePlanError(`wave ${n} holds ${cells.length} cells; a stage holds at most ${cap} with this bake`);
      push(n === 1 ? 'canary' : cells.length === 1 ? 'single' : 'group', cells);
    }
  } else {
    push(
      'canary',
      canaries.map((c) => c.id),
    );
    for (const cell of singles) push('single', [cell.id]);
    let size = 1;
    for (let next = 0; next < grouped.length; next += size) {
      size = Math.min(cap, Math.max(size + 1, Math.ceil(size * policy.growthFactor)));
      push(
        'group',
        grouped.slice(next, next + size).map((c) => c.id),
      );
    }
  }

  const regions = [...new Set(fleet.cells.map((c) => c.region))];
  // The canary cell's region first: its routers take a router change before any other region's.
  const first = canaries[0].region;
  const routerWaves = [first, ...regions.filter((r) => r !== first)].flatMap((region, i): RouterWave[] => [
    { name: `routers-${region}-canary-group`, region, part: 'canary', bakeSeconds: i === 0 ? policy.bakeSeconds.canary : policy.bakeSeconds.single },
    { name: `routers-${region}`, region, part: 'rest', bakeSeconds: policy.bakeSeconds.single },
  ]);
  const stages = FIXED_STAGES + routerWaves.length + waves.length;
  if (stages > MAX_PIPELINE_STAGES) {
    throw new WavePlanError(
      `the fleet needs ${stages} pipeline stages (${waves.length} cell waves, ${routerWaves.length} router waves (two per region), ${FIXED_STAGES} fixed) but a pipeline holds ${MAX_PIPELINE_STAGES}; ` +
        'raise waves.maxCellsPerWave or waves.growthFactor, lower waves.singleCellWaves, or split the fleet across pipelines',
    );
  }
  const bakes = [...waves, ...routerWaves].reduce((sum, w) => sum + w.bakeSeconds, 0);
  return { routerWaves, waves, minimumRolloutSeconds: bakes };
}
