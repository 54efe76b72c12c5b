import * as fs from 'fs';
import * as path from 'path';
import { pipelineStackName } from '../names';
import { WavePlan } from './plan';

/** A cell that a new plan puts in another wave than the pipeline as last synthesized. */
export interface WaveChange {
  readonly cell: string;
  readonly from: number;
  readonly to: number;
}

interface PipelineTemplate {
  readonly Resources?: Record<
    string,
    {
      readonly Type: string;
      readonly Properties?: { readonly Stages?: readonly { readonly Name: string; readonly Actions: readonly { readonly Name: string }[] }[] };
    }
  >;
}

/**
 * Each cell's wave in a synthesized pipeline template: a wave's stage holds its `clear-wave-<n>-<kind>`
 * action and one `<app>-cell-<id>.Deploy` action per cell (prefixed by the cell's stage in a group).
 */
export function wavesOfPipeline(template: PipelineTemplate, app: string): Map<string, number> {
  const waves = new Map<string, number>();
  const deploy = new RegExp(`(?:^|\\.)${app.replace(/[-]/g, '\\-')}-cell-([a-z0-9-]+)\\.Deploy$`);
  for (const r of Object.values(template.Resources ?? {})) {
    if (r.Type !== 'AWS::CodePipeline::Pipeline') continue;
    for (const stage of r.Properties?.Stages ?? []) {
      const n = stage.Actions.map((a) => /^clear-wave-(\d+)-/.exec(a.Name)?.[1]).find((x) => x !== undefined);
      if (n === undefined) continue;
      for (const a of stage.Actions) {
        const id = deploy.exec(a.Name)?.[1];
        if (id && !id.endsWith('-adoption')) waves.set(id, Number(n));
      }
    }
  }
  return waves;
}

/** The waves of the pipeline last written to `assemblyDir` (cdk.out), or undefined when it holds none. */
export function lastSynthesizedWaves(assemblyDir: string, app: string): Map<string, number> | undefined {
  const file = path.join(assemblyDir, `${pipelineStackName(app)}.template.json`);
  if (!fs.existsSync(file)) return undefined;
  return wavesOfPipeline(JSON.parse(fs.readFileSync(file, 'utf8')) as PipelineTemplate, app);
}

/** The cells of both that `plan` moves to another wave, in the new plan's order. */
export function waveChanges(before: ReadonlyMap<string, number>, plan: WavePlan): WaveChange[] {
  return plan.waves.flatMap((w) =>
    w.cells.filter((c) => before.has(c) && before.get(c) !== w.index).map((cell) => ({ cell, from: before.get(cell)!, to: w.index })),
  );
}
