import { Duration, Stack, StackProps, Stage, StageProps } from 'aws-cdk-lib';
import * as codebuild from 'aws-cdk-lib/aws-codebuild';
import * as codepipeline from 'aws-cdk-lib/aws-codepipeline';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as pipelines from 'aws-cdk-lib/pipelines';
import { Construct } from 'constructs';
import { bakeWatcherRoleName, CellStack } from '../cell';
import { RouterStack } from '../router-stack';
import { Cell, Fleet } from '../fleet';
import { planWaves, WavePlan } from '../waves';
import { acknowledgePipelineFindings, assertNoOpenFindings } from './acknowledge';
import { bakeCommands } from './bake';
import { applyStageConditions } from './stage-conditions';

/** A cdk.Stage holding one cell's stack, so CDK Pipelines can deploy it into the cell's account. */
export class CellStage extends Stage {
  public readonly stack: CellStack;

  constructor(scope: Construct, id: string, props: StageProps & { cell: Cell; fleet: Fleet }) {
    super(scope, id, { ...props, env: { account: props.cell.account, region: props.cell.region } });
    this.stack = new CellStack(this, 'Cell', { cell: props.cell, fleet: props.fleet });
  }
}

/** A cdk.Stage holding one region's router stack, deployed into the router account. */
export class RouterStage extends Stage {
  public readonly stack: RouterStack;

  constructor(scope: Construct, id: string, props: StageProps & { fleet: Fleet; region: string }) {
    super(scope, id, { ...props, env: { account: props.fleet.accounts.router, region: props.region } });
    this.stack = new RouterStack(this, 'Router', { fleet: props.fleet, region: props.region });
  }
}

export interface PipelineStackProps extends StackProps {
  readonly fleet: Fleet;
}

/**
 * The delivery pipeline, in the tooling account. CDK Pipelines rather than the CodePipeline L2:
 * it gives self-mutation (a cell added to cells.config.ts is stamped on the next run), asset
 * publishing and cross-account deployment with the bootstrap roles; what it lacks (stage
 * conditions) is added in `applyStageConditions`.
 *
 * One stage per wave of `planWaves`; each deploys its cells' stacks, then a bake step watches
 * exactly those cells' health alarms for the wave's bake time (through a read-only role in each
 * cell account, because the alarms live there). A failed deploy or an alarm during the bake fails
 * the stage, which rolls back and stops the pipeline.
 */
export class PipelineStack extends Stack {
  public readonly plan: WavePlan;
  public readonly pipeline: pipelines.CodePipeline;
  /** Router stage names, in order (one per region), before the cell waves. */
  public readonly routerStages: readonly string[];
  /** Pipeline stage name → cells deployed by that stage, in plan order (one per wave). */
  public readonly stages: ReadonlyMap<string, readonly string[]>;

  constructor(scope: Construct, id: string, props: PipelineStackProps) {
    const { fleet } = props;
    if (!fleet.pipeline) throw new Error('PipelineStack: the fleet has no `pipeline` section');
    // Compact JSON: one deploy action per cell, so the template grows with the fleet (see README).
    super(scope, id, { suppressTemplateIndentation: true, ...props, env: { account: fleet.accounts.tooling, region: fleet.pipeline.region } });
    this.plan = planWaves(fleet);
    const source = fleet.pipeline.source;
    const input = source.kind === 'connection'
      ? pipelines.CodePipelineSource.connection(source.repository, source.branch, { connectionArn: source.connectionArn })
      : pipelines.CodePipelineSource.s3(s3.Bucket.fromBucketName(this, 'SourceBucket', source.bucketName), source.objectKey);

    this.pipeline = new pipelines.CodePipeline(this, 'Pipeline', {
      pipelineName: `${fleet.app}-cells`,
      pipelineType: codepipeline.PipelineType.V2,
      crossAccountKeys: true,
      enableKeyRotation: true,
      selfMutation: true,
      // One action per stack instead of two: a stage holds up to 49 cells plus the bake step.
      useChangeSets: false,
      synth: new pipelines.ShellStep('Synth', {
        input,
        // The router tests drive a real HAProxy (CodeBuild's standard image is Ubuntu).
        installCommands: ['apt-get update -qq', 'apt-get install -y -qq haproxy'],
        commands: ['npm ci', 'npm test', 'npm run audit', 'npx cdk synth'],
      }),
    });

    const stages = new Map<string, readonly string[]>();
    // Routers first, one region per stage: a new cell's endpoint exists before any cell wave.
    const routerStages: string[] = [];
    for (const wave of this.plan.routerWaves) {
      const stage = new RouterStage(this, wave.name, { fleet, region: wave.region });
      assertNoOpenFindings(stage.stack);
      this.pipeline.addStage(stage);
      routerStages.push(wave.name);
    }
    this.routerStages = routerStages;
    const byId = new Map(fleet.cells.map((c) => [c.id, c]));
    const firstRegular = this.plan.waves.find((w) => w.kind !== 'canary');
    for (const wave of this.plan.waves) {
      const cells = wave.cells.map((id) => byId.get(id)!);
      const targets = cells.map((c) => ({
        cell: c.id, account: c.account, region: c.region, alarmName: `${fleet.app}-${c.id}-health`, roleName: bakeWatcherRoleName(fleet.app, c.id),
      }));
      const bake = new pipelines.CodeBuildStep(`bake-${wave.name}`, {
        commands: [bakeCommands(targets, wave.bakeSeconds).join('\n')],
        // bash for arrays and here-strings; the timeout leaves an hour of slack over the bake.
        partialBuildSpec: codebuild.BuildSpec.fromObject({ env: { shell: 'bash' } }),
        timeout: Duration.seconds(Math.min(wave.bakeSeconds + 3600, 36 * 3600)),
        rolePolicyStatements: [new iam.PolicyStatement({
          actions: ['sts:AssumeRole'],
          resources: targets.map((t) => `arn:aws:iam::${t.account}:role/${t.roleName}`),
        })],
      });
      const pre = fleet.pipeline.manualApproval && wave === firstRegular
        ? [new pipelines.ManualApprovalStep(`approve-${wave.name}`, { comment: 'The canary wave deployed and baked; approve rolling out to the other cells' })]
        : [];
      const stageWave = this.pipeline.addWave(wave.name, { pre, post: [bake] });
      for (const cell of cells) {
        const stage = new CellStage(this, `cell-${cell.id}`, { cell, fleet });
        assertNoOpenFindings(stage.stack);
        stageWave.addStage(stage);
      }
      // CDK Pipelines names a one-stage wave after its stage rather than the wave.
      stages.set(cells.length === 1 ? `cell-${cells[0].id}` : wave.name, wave.cells);
    }
    this.stages = stages;

    this.pipeline.buildPipeline();
    applyStageConditions(this.pipeline.pipeline, [...routerStages, ...stages.keys()].map((stageName) => ({
      stageName,
      rollbackOnFailure: true,
      deploymentWindow: fleet.pipeline!.deploymentWindow,
    })));
    const supportStacks = Object.values(this.pipeline.pipeline.crossRegionSupport).map((support) => support.stack);
    acknowledgePipelineFindings([this, ...supportStacks]);
  }
}
