import * as codepipeline from 'aws-cdk-lib/aws-codepipeline';
import { deploymentWindowProblems } from '../../domain/fleet';

/** What a wave stage needs beyond what CDK Pipelines renders. */
export interface WaveStageConditions {
  readonly stageName: string;
  /** Roll the stage back when any action fails (a deploy, or the bake finding an alarm). */
  readonly rollbackOnFailure: boolean;
  /** Enter the stage only inside this window: a DeploymentWindow expression (see deployment-window.ts), not an EventBridge cron(...). */
  readonly deploymentWindow?: { readonly cron: string; readonly timeZone?: string };
}

/**
 * CDK Pipelines exposes no CodePipeline V2 stage conditions, so this is the one place that writes
 * them, as property overrides on the built pipeline: `OnFailure: ROLLBACK` and a `BeforeEntry`
 * DeploymentWindow rule. Call after `buildPipeline()`. Throws if a stage is missing, so a renamed
 * wave can never silently lose its rollback.
 */
export function applyStageConditions(pipeline: codepipeline.Pipeline, conditions: readonly WaveStageConditions[]): void {
  const cfn = pipeline.node.defaultChild as codepipeline.CfnPipeline;
  const names = pipeline.stages.map((s) => s.stageName);
  for (const condition of conditions) {
    const index = names.indexOf(condition.stageName);
    if (index < 0) throw new Error(`applyStageConditions: no stage \`${condition.stageName}\` in the pipeline (stages: ${names.join(', ')})`);
    if (condition.rollbackOnFailure) {
      cfn.addPropertyOverride(`Stages.${index}.OnFailure`, { Result: 'ROLLBACK' });
    }
    if (condition.deploymentWindow) {
      const problems = deploymentWindowProblems(condition.deploymentWindow.cron);
      if (problems.length > 0) throw new Error(`applyStageConditions: stage \`${condition.stageName}\`: ${problems.join('; ')}`);
      cfn.addPropertyOverride(`Stages.${index}.BeforeEntry`, {
        Conditions: [
          {
            Result: 'FAIL',
            Rules: [
              {
                Name: `${condition.stageName}-window`.slice(0, 100),
                RuleTypeId: { Category: 'Rule', Owner: 'AWS', Provider: 'DeploymentWindow', Version: '1' },
                Configuration: { Cron: condition.deploymentWindow.cron, TimeZone: condition.deploymentWindow.timeZone ?? 'UTC' },
              },
            ],
          },
        ],
      });
    }
  }
}
