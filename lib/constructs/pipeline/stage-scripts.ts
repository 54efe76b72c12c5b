import * as fs from 'fs';
import * as path from 'path';
import { bakeScript } from './bake';
import { failedCreateScript } from './failed-create';
import { protectScript } from '../../runtime/pipeline/protect';

/**
 * The folder of the cloud assembly (`cdk.out/<this>`) that holds the stage steps' scripts. The
 * pipeline's synth step publishes it as a file set of its own and every clear and bake step takes it
 * as input, so each script is in the pipeline once, not in each of two CodeBuild projects per stage
 * (about 9 KB per stage, which put a 400-cell pipeline's template over CloudFormation's 1 MB).
 */
export const STAGE_SCRIPTS_DIR = 'pipeline-scripts';

/**
 * The scripts, by file name. Each is sourced (`. ./<file>`) by a step's commands after they set the
 * script's variables (its targets, durations, CDK bootstrap qualifier), so `exit` ends the step.
 */
export function stageScripts(): Record<string, string> {
  const header = (name: string, vars: string) => [
    '# shellcheck shell=bash',
    `# ${name}: sourced by a stage step of the cells pipeline after it sets ${vars}.`,
    '# Written by the CDK app at synth (lib/constructs/pipeline); an edit here is overwritten.',
  ];
  return {
    'failed-create.sh': [
      ...header('failed-create', 'failed_create_targets, failed_create_poll, failed_create_wait and cdk_qualifier'),
      ...failedCreateScript(),
      '',
    ].join('\n'),
    'protect.sh': [...header('protect', 'protect_targets and cdk_qualifier'), ...protectScript(), ''].join('\n'),
    'bake.sh': [...header('bake', 'bake_targets, bake_seconds and bake_label'), ...bakeScript(), ''].join('\n'),
  };
}

/** Writes `stageScripts()` into `dir` (created if missing); the same content twice writes the same files. */
export function writeStageScripts(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(stageScripts())) fs.writeFileSync(path.join(dir, name), content, { mode: 0o644 });
}

/** The command that runs one of `stageScripts()` from a step whose input is the scripts' file set. */
export const sourceStageScript = (name: 'failed-create.sh' | 'protect.sh' | 'bake.sh') => `. ./${name}`;
