import * as path from 'path';
import { CfnOutput, Duration, RemovalPolicy, Stack, StackProps, Stage, StageProps, Validations } from 'aws-cdk-lib';
import * as codebuild from 'aws-cdk-lib/aws-codebuild';
import * as codepipeline from 'aws-cdk-lib/aws-codepipeline';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as pipelines from 'aws-cdk-lib/pipelines';
import { Construct } from 'constructs';
import { CellStack, CellStackProps, denyGrantsExceptForAwsServices, endpointServiceFingerprint } from '../cell';
import {
  bakeWatcherRoleName,
  cellDeletionProtectorRoleName,
  cellHealthAlarmName,
  codePipelineName,
  routerBakeWatcherRoleName,
  routerDeletionProtectorRoleName,
  routerGroupsDeletionProtectorRoleName,
  routerGroupHealthAlarmName,
  stageProjectName,
} from '../../domain/names';
import { RouterGroupsStack, RouterGroupsStackProps, RouterStack, RouterStackProps } from '../router';
import { CellZeroStack, CellZeroStackProps } from '../cell-zero';
import { deploymentWindowProblems, PipelineSource } from '../../domain/fleet';
import { BAKE_ACTION_LIMIT_SECONDS, bakeSegments, FIXED_STAGES, MAX_PIPELINE_STAGES, WaveKind, WavePlanError } from '../../domain/waves';
import { acknowledgeControlTower, acknowledgePipelineFindings, assertNoOpenFindings } from './acknowledge';
import { BAKE_EXECUTION_ENV, BakeTarget, bakeVariables } from './bake';
import { fleetWideRoles, grantBootstrapRolesByPattern } from './bootstrap-grants';
import { CDK_ASSETS_VERSION, sizeAssetPublishing } from './publishing';
import { applyStageConditions } from './stage-conditions';
import { failedCreateVariables } from './failed-create';
import { ProtectTarget, protectVariables } from '../../runtime/pipeline/protect';
import { assumeInAccounts, deployRolePattern, grantStageProjectsByPattern, namePattern } from './stage-grants';
import { sourceStageScript, STAGE_SCRIPTS_DIR, writeStageScripts } from './stage-scripts';
import { SYNTH_BUILD_IMAGE, SYNTH_COMMANDS, SYNTH_INSTALL_COMMANDS, synthPartialBuildSpec } from './synth';

/** A cdk.Stage holding one cell's stack, so CDK Pipelines can deploy it into the cell's account. */
export class CellStage extends Stage {
  public readonly stack: CellStack;
  public readonly cellId: string;

  constructor(scope: Construct, id: string, props: StageProps & { cellStack: CellStackProps }) {
    const { cellStack, ...stageProps } = props;
    super(scope, id, { ...stageProps, env: cellStack.env });
    this.cellId = cellStack.cell.cellId;
    this.stack = new CellStack(this, 'Cell', cellStack);
  }
}

/**
 * A cdk.Stage of one region's routers, deployed into the router account. The `canary` part holds the
 * region's router stack (NLB, target groups, cell links, mapping bucket) and, after it, the canary
 * group's stack; the `rest` part holds the stack of the region's other groups, in a later pipeline
 * stage, so a bake on the canary group's alarms sits between the two.
 */
export class RouterStage extends Stage {
  /** The region's router stack (canary part only). */
  public readonly router?: RouterStack;
  public readonly groups: RouterGroupsStack;
  /** Every stack of the stage, in deploy order. */
  public readonly stacks: readonly Stack[];

  constructor(scope: Construct, id: string, props: StageProps & { readonly router?: RouterStackProps; readonly groups: RouterGroupsStackProps }) {
    const { router, groups, ...stageProps } = props;
    super(scope, id, { ...stageProps, env: { account: groups.account, region: groups.region } });
    if (router) this.router = new RouterStack(this, 'Router', router);
    this.groups = new RouterGroupsStack(this, 'Groups', groups);
    // No reference between the two (the group stack reads SSM parameters): the order is explicit.
    if (this.router) this.groups.addStackDependency(this.router);
    this.stacks = this.router ? [this.router, this.groups] : [this.groups];
  }
}

/** One region's router stacks, as its two router stages deploy them. */
export interface RouterStageStacks {
  /** The region's RouterStack, deployed with the canary group; the pipeline adds the cells' endpoint fingerprints. */
  readonly router: Omit<RouterStackProps, 'cellEndpointFingerprints'>;
  readonly canary: RouterGroupsStackProps;
  readonly rest: RouterGroupsStackProps;
}

/** A cdk.Stage holding cell zero's adoption stack (lib/constructs/cell-zero), in the existing stack's account. */
export class CellZeroStage extends Stage {
  public readonly stack: CellZeroStack;

  constructor(scope: Construct, id: string, props: StageProps & { cellZero: CellZeroStackProps }) {
    const { cellZero, ...stageProps } = props;
    super(scope, id, { ...stageProps, env: { account: cellZero.account, region: cellZero.region } });
    this.stack = new CellZeroStack(this, 'Adoption', cellZero);
  }
}

/** Cells deployed by one pipeline stage, then watched for `bakeSeconds` (a `Wave` of `planWaves` is one). */
export interface PipelineCellWave {
  /** The stage's name (`wave-<index>-<kind>`); a one-cell wave's stage is named `cell-<id>` by CDK Pipelines. */
  readonly name: string;
  /** `canary` for the first wave(s); the manual approval, when asked for, goes before the first other one. */
  readonly kind: WaveKind;
  /** The ids of the cells it deploys: each has its stack's props in `cellStacks`. */
  readonly cells: readonly string[];
  /** Seconds the stage watches its cells' health alarms after the deploys. */
  readonly bakeSeconds: number;
}

/** A region's router stage (a `RouterWave` of `planWaves` is one). */
export interface PipelineRouterWave {
  readonly name: string;
  readonly region: string;
  /** `canary`: the region's router stack and canary group's stack; `rest`: the stack of its other groups. */
  readonly part: 'canary' | 'rest';
  /** Seconds the stage watches the groups' health alarms after the deploys. */
  readonly bakeSeconds: number;
}

/** The rollout order as data: `planWaves(fleet)` returns one. */
export interface PipelineWavePlan {
  /** Cell stages, in deploy order; every cell of `cellStacks` in exactly one. */
  readonly waves: readonly PipelineCellWave[];
  /** Router stages, after every cell stage (a router stack links every cell), in deploy order. */
  readonly routerWaves: readonly PipelineRouterWave[];
}

/** Cell zero's adoption stack in the pipeline (docs/cell-zero.md). */
export interface PipelineCellZero {
  /** The adoption stack's props (`cellZeroStackProps` in lib/app). */
  readonly stack: CellZeroStackProps;
  /** Seconds its stage watches its health alarm after the deploy. */
  readonly bakeSeconds: number;
}

/** A window the stages may start in: a CodePipeline DeploymentWindow expression, not an EventBridge `cron(...)`. */
export interface PipelineDeploymentWindow {
  /** Six fields and an optional year, seconds first (`* * 8-16 ? * MON-THU *`: 08:00-16:59 Monday to Thursday). */
  readonly cron: string;
  /** IANA time zone of `cron`. @default 'UTC' */
  readonly timeZone?: string;
}

/**
 * The pipeline's own props: plain values, no fleet file. lib/app's `pipelineStackPropsOf(fleet)`
 * builds them from the fleet file; anything else may write them by hand.
 */
export interface PipelineStackProps extends Omit<StackProps, 'env'> {
  /** The fleet's name: the pipeline's, its projects' and the roles' names start with it (lib/domain/names). */
  readonly app: string;
  /** The account the pipeline lives in: every cell and router stack trusts it (their `toolingAccount`). */
  readonly toolingAccount: string;
  /** The pipeline's region. */
  readonly region: string;
  /** Where the pipeline gets the repository from: a connection to a repository host, or a zip in S3. */
  readonly source: PipelineSource;
  /** The rollout order: cell waves, then router waves (`planWaves`). */
  readonly plan: PipelineWavePlan;
  /** The props of each cell's stack, by cell id (`cellStacksOf` in lib/app); one per cell of `plan.waves`. */
  readonly cellStacks: Readonly<Record<string, CellStackProps>>;
  /** Each region's router stacks, by region (lib/app's `pipelineRoutersOf`); one per region of `plan.routerWaves`. */
  readonly routers: Readonly<Record<string, RouterStageStacks>>;
  /**
   * Cell zero's adoption stack, deployed as a stage of its own before the cell waves (docs/cell-zero.md).
   * @default - no cell zero
   */
  readonly cellZero?: PipelineCellZero;
  /**
   * A manual approval, in a stage of its own, before the first wave that is not a canary wave.
   * @default false
   */
  readonly manualApproval?: boolean;
  /**
   * Every deploying stage (cell zero, cell waves, router waves) starts only inside this window.
   * @default - no window: stages start whenever the stage before them succeeds
   */
  readonly deploymentWindow?: PipelineDeploymentWindow;
  /**
   * AWS Organizations id (`o-…`) of every account the pipeline deploys to: its roles assume the CDK
   * bootstrap roles by name pattern in the organization, a policy of constant size (bootstrap-grants.ts).
   * @default - the roles list the accounts of `cellStacks` and `routers` (about 15 characters each)
   */
  readonly organizationId?: string;
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
  /** The rollout order it was built from. */
  public readonly plan: PipelineWavePlan;
  public readonly pipeline: pipelines.CodePipeline;
  /** Router stage names, in order (one per region), after the cell waves. */
  public readonly routerStages: readonly string[];
  /** The manual approval's own stage, before the first non-canary wave, when the config asks for one. */
  public readonly approvalStage?: string;
  /** Pipeline stage name → cells deployed by that stage, in plan order (one per wave). */
  public readonly stages: ReadonlyMap<string, readonly string[]>;
  /** The stage deploying cell zero's adoption stack, before every wave, when the fleet adopts one. */
  public readonly cellZeroStage?: string;

  constructor(scope: Construct, id: string, props: PipelineStackProps) {
    const {
      app,
      toolingAccount,
      region,
      source,
      plan,
      cellStacks,
      routers,
      cellZero: zero,
      manualApproval,
      deploymentWindow,
      organizationId,
      ...stackProps
    } = props;
    const problems = pipelinePropsProblems(props);
    if (problems.length > 0) throw new Error(`PipelineStack ${id}: ${problems.join('; ')}`);
    // Compact JSON: one deploy action per cell, so the template grows with the fleet (docs/performance.md).
    super(scope, id, { suppressTemplateIndentation: true, ...stackProps, env: { account: toolingAccount, region } });
    this.plan = plan;
    const input =
      source.kind === 'connection'
        ? pipelines.CodePipelineSource.connection(source.repository, source.branch, { connectionArn: source.connectionArn })
        : pipelines.CodePipelineSource.s3(s3.Bucket.fromBucketName(this, 'SourceBucket', source.bucketName), source.objectKey);

    const pipelineName = codePipelineName(app);
    // Every CodeBuild project (synth, self-mutation, assets, bakes) logs here for a year, so a failed
    // bake or deploy can be read after the fact (Control Tower CT.CODEBUILD.PR.3). Kept when the stack
    // goes, so it has no fixed name: a re-created pipeline stack (or a retried failed create) makes a
    // new one instead of failing on "already exists"; the stack's BuildLogs output names it.
    const buildLogs = new logs.LogGroup(this, 'BuildLogs', {
      retention: logs.RetentionDays.ONE_YEAR,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(buildLogs).acknowledge({
      id: 'ControlTower::CT.CLOUDWATCH.PR.3',
      reason:
        'Build output of the pipeline (commands, test and synth output; no cell data, no credentials: the build roles assume bootstrap roles at run time); CloudWatch Logs encrypts it at rest with its own key.',
    });
    new CfnOutput(this, 'BuildLogGroup', {
      description: 'CloudWatch Logs group of every CodeBuild step of the pipeline',
      value: buildLogs.logGroupName,
    });
    const synth = new pipelines.CodeBuildStep('Synth', {
      input,
      // What a build runs, unprivileged: install, checks, unit tests, synth with the audit gate, cfn-lint (synth.ts).
      installCommands: [...SYNTH_INSTALL_COMMANDS],
      commands: [...SYNTH_COMMANDS],
      // About 10 minutes on 2 cores (the unit tests, the synth, cfn-lint); a hang fails well before an hour.
      timeout: Duration.hours(1),
      // Two jest workers synthesizing fleets want more than the default small build's 3 GB.
      buildEnvironment: { computeType: codebuild.ComputeType.MEDIUM },
    });
    // The clear, protect and bake scripts, written into the assembly by this synth and published by
    // the synth step as a small file set of their own: every stage step sources them from it
    // instead of carrying them in its buildspec (stage-scripts.ts).
    writeStageScripts(path.join(Stage.of(this)!.outdir, STAGE_SCRIPTS_DIR));
    const scripts = synth.addOutputDirectory(`cdk.out/${STAGE_SCRIPTS_DIR}`);
    this.pipeline = new pipelines.CodePipeline(this, 'Pipeline', {
      pipelineName,
      pipelineType: codepipeline.PipelineType.V2,
      crossAccountKeys: true,
      enableKeyRotation: true,
      selfMutation: true,
      cdkAssetsCliVersion: CDK_ASSETS_VERSION,
      // One action per stack instead of two: a stage holds up to 48 cells plus the failed-create and bake steps.
      useChangeSets: false,
      // Every CodeBuild step (synth, self-mutation, assets, bakes) on the same image and pinned Node.js.
      codeBuildDefaults: {
        buildEnvironment: { buildImage: SYNTH_BUILD_IMAGE },
        partialBuildSpec: synthPartialBuildSpec(),
        logging: { cloudWatch: { logGroup: buildLogs } },
      },
      synth,
    });

    const stages = new Map<string, readonly string[]>();
    // The cells' endpoint-service fingerprints: a router stack reads a cell's service name again when its changes.
    const fingerprints: Record<string, string> = {};
    const firstRegular = plan.waves.find((w) => w.kind !== 'canary');
    // Cell zero first, a wave of its own baked on its health alarm: the routers link it like a cell.
    if (zero) {
      const adoption = zero.stack;
      const stage = new CellZeroStage(this, `cell-${adoption.cellId}-adoption`, { cellZero: adoption });
      fingerprints[adoption.cellId] = endpointServiceFingerprint(stage.stack.entry);
      assertNoOpenFindings(stage.stack);
      const protect = [{ stackName: stage.stack.stackName, account: adoption.account, region: adoption.region }];
      const targets = [
        {
          cell: adoption.cellId,
          account: adoption.account,
          region: adoption.region,
          alarmName: cellHealthAlarmName(app, adoption.cellId),
          roleName: adoption.names.bakeWatcherRole,
        },
      ];
      const name = `cell-${adoption.cellId}-adoption`;
      this.pipeline.addStage(stage, {
        pre: [failedCreateStep(`clear-${name}`, protect, app, scripts)],
        post: bakeSteps(this, `bake-${name}`, targets, zero.bakeSeconds, protect, app, pipelineName, scripts),
      });
      this.cellZeroStage = name;
    }
    for (const wave of plan.waves) {
      const cellStages = wave.cells.map((cellId) => new CellStage(this, `cell-${cellId}`, { cellStack: cellStacks[cellId] }));
      const targets = cellStages.map(({ cellId, stack }) => ({
        cell: cellId,
        account: stack.account,
        region: stack.region,
        alarmName: cellHealthAlarmName(app, cellId),
        roleName: bakeWatcherRoleName(app, cellId),
      }));
      for (const stage of cellStages) fingerprints[stage.cellId] = endpointServiceFingerprint(stage.stack.cell.entry);
      for (const stage of cellStages) assertNoOpenFindings(stage.stack);
      // CodePipeline's CloudFormation action ignores terminationProtection: the first bake action
      // protects the wave's stacks before it watches them (see protect.ts).
      const protect = cellStages.map((stage) => ({
        stackName: stage.stack.stackName,
        account: stage.stack.account,
        region: stage.stack.region,
        deletionProtectorRole: cellDeletionProtectorRoleName(app, stage.cellId),
      }));
      const bakes = bakeSteps(this, `bake-${wave.name}`, targets, wave.bakeSeconds, protect, app, pipelineName, scripts);
      // The approval is a stage of its own before the wave: given outside the deployment window, the
      // wave still waits for its window; a rejection or timeout stops the pipeline without a rollback.
      if (manualApproval && wave === firstRegular) {
        const name = `approve-${wave.name}`;
        this.pipeline.addWave(name, {
          post: [new pipelines.ManualApprovalStep(name, { comment: 'The canary wave deployed and baked; approve rolling out to the other cells' })],
        });
        this.approvalStage = name;
      }
      // Before the deploys: a stack whose first create failed is deleted so the deploy creates it again.
      const stageWave = this.pipeline.addWave(wave.name, { pre: [failedCreateStep(`clear-${wave.name}`, protect, app, scripts)], post: bakes });
      for (const stage of cellStages) stageWave.addStage(stage);
      // CDK Pipelines names a one-stage wave after its stage rather than the wave.
      stages.set(wave.cells.length === 1 ? `cell-${wave.cells[0]}` : wave.name, wave.cells);
    }
    this.stages = stages;
    // Routers after the cells, region by region: every cell's endpoint service exists before a
    // router stack links it, and the mapping the router stack seeds resolves (see RouterStack). In
    // each region the first stage deploys the router stack and the canary group's stack, then bakes on
    // the canary group's alarms; the second deploys the other groups and bakes on every group's
    // alarms before the next region's routers change.
    const routerStages: string[] = [];
    for (const wave of plan.routerWaves) {
      const stacks = routers[wave.region];
      const stage = new RouterStage(
        this,
        wave.name,
        wave.part === 'canary'
          ? { router: { ...stacks.router, cellEndpointFingerprints: fingerprints }, groups: stacks.canary }
          : { groups: stacks.rest },
      );
      for (const stack of stage.stacks) assertNoOpenFindings(stack);
      const watcherRole = routerBakeWatcherRoleName(app, wave.region);
      // The canary part watches its group; the rest watches every group of the region, the canary's too.
      const watched =
        wave.part === 'canary'
          ? stage.groups.groupHealthAlarms
          : [...stacks.canary.groups, ...stacks.rest.groups].map((g) => ({
              group: g.name,
              alarmName: routerGroupHealthAlarmName(app, wave.region, g.name),
            }));
      const targets = watched.map(({ group, alarmName }) => ({
        cell: `router-${group}`,
        account: stage.groups.account,
        region: wave.region,
        alarmName,
        roleName: watcherRole,
      }));
      const protect = stage.stacks.map((stack) => ({
        stackName: stack.stackName,
        account: stack.account,
        region: stack.region,
        // The NLB's protector: the router stack's, or with lanes (no NLB there) each group stack's.
        ...(stack === stage.router
          ? stage.router.loadBalancer
            ? { deletionProtectorRole: routerDeletionProtectorRoleName(app, wave.region) }
            : {}
          : stage.groups.laneLoadBalancers.length > 0
            ? { deletionProtectorRole: routerGroupsDeletionProtectorRoleName(app, wave.region, wave.part) }
            : {}),
      }));
      this.pipeline.addStage(stage, {
        pre: [failedCreateStep(`clear-${wave.name}`, protect, app, scripts)],
        post: bakeSteps(this, `bake-${wave.name}`, targets, wave.bakeSeconds, protect, app, pipelineName, scripts),
      });
      routerStages.push(wave.name);
    }
    this.routerStages = routerStages;

    this.pipeline.buildPipeline();
    // The pipeline and asset roles assume every environment's bootstrap roles: by pattern, in the
    // organization (or the fleet's accounts), not one ARN per environment (bootstrap-grants.ts).
    grantBootstrapRolesByPattern(fleetWideRoles(this.pipeline), { organizationId });
    // The CodeBuild action role starts the stage steps' projects by one name pattern (stage-grants.ts).
    grantStageProjectsByPattern(this.pipeline, app);
    // One asset to hundreds of accounts: compact parallel publish commands, timeouts sized from the fleet.
    sizeAssetPublishing(this.pipeline);
    const stageCount = this.pipeline.pipeline.stages.length;
    if (stageCount > MAX_PIPELINE_STAGES) {
      throw new WavePlanError(
        `the pipeline has ${stageCount} stages (waves, router waves, the approval and ${FIXED_STAGES} fixed) but CodePipeline allows ${MAX_PIPELINE_STAGES}; ` +
          'put more cells in each wave of plan.waves (in the fleet file: raise waves.maxCellsPerWave or waves.growthFactor, lower waves.singleCellWaves), or split the fleet across pipelines',
      );
    }
    applyStageConditions(
      this.pipeline.pipeline,
      [...(this.cellZeroStage ? [this.cellZeroStage] : []), ...stages.keys(), ...routerStages].map((stageName) => ({
        stageName,
        rollbackOnFailure: true,
        deploymentWindow,
      })),
    );
    if (source.kind === 'connection') grantCodeConnection(this, source.connectionArn);
    const supportStacks = Object.values(this.pipeline.pipeline.crossRegionSupport).map((support) => support.stack);
    // CodePipeline's cross-region replication bucket has a name fixed by its stack's name and is kept
    // when the stack goes: kept except on create, so a support stack whose first create failed is
    // created again under the same name (it holds only pipeline artifacts, empty on a failed create).
    for (const bucket of supportStacks.flatMap((support) => support.node.findAll()).filter((c): c is s3.CfnBucket => c instanceof s3.CfnBucket)) {
      bucket.applyRemovalPolicy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE);
    }
    acknowledgePipelineFindings([this, ...supportStacks]);
    acknowledgeControlTower(this.pipeline.pipeline, denyGrantsExceptForAwsServices);
  }
}

/**
 * What is wrong with `props`, each naming the prop and the fix; empty when they describe a pipeline:
 * every wave's cell has its stack's props and is in one wave only, every cell given is deployed,
 * every router wave's region has its stacks, the deployment window is a DeploymentWindow expression.
 */
export function pipelinePropsProblems(props: PipelineStackProps): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const wave of props.plan.waves) {
    if (wave.cells.length === 0) problems.push(`plan.waves: wave \`${wave.name}\` has no cells; drop it or give it one`);
    for (const cellId of wave.cells) {
      const earlier = seen.get(cellId);
      if (earlier) problems.push(`plan.waves: cell \`${cellId}\` is in \`${earlier}\` and \`${wave.name}\`; put each cell in one wave`);
      seen.set(cellId, wave.name);
      const stack = props.cellStacks[cellId];
      if (!stack) problems.push(`cellStacks has no props for cell \`${cellId}\` of \`${wave.name}\`; give every cell's (cellStackPropsOf)`);
      else if (stack.cell.cellId !== cellId)
        problems.push(`cellStacks[\`${cellId}\`] holds cell \`${stack.cell.cellId}\`; key each cell's props by its own id`);
    }
  }
  const unplanned = Object.keys(props.cellStacks).filter((cellId) => !seen.has(cellId));
  if (unplanned.length > 0)
    problems.push(
      `cellStacks has cell ${unplanned.map((c) => `\`${c}\``).join(', ')} that no wave of plan.waves deploys; add it to a wave or drop its props`,
    );
  for (const region of new Set(props.plan.routerWaves.map((w) => w.region))) {
    if (!props.routers[region])
      problems.push(`routers has no stacks for ${region}, a region of plan.routerWaves; give one entry per region (pipelineRoutersOf)`);
  }
  if (props.deploymentWindow) problems.push(...deploymentWindowProblems(props.deploymentWindow.cron).map((p) => `deploymentWindow.cron: ${p}`));
  return problems;
}

/**
 * CDK's source action grants `codestar-connections:UseConnection`. A connection created since the
 * CodeStar Connections → CodeConnections rename has a `codeconnections` ARN, and "when specifying a
 * resource in the IAM policy, the service prefix needs to match that of the resource" (Developer
 * Tools console User Guide, "Connections rename - Summary of changes",
 * https://docs.aws.amazon.com/dtconsole/latest/userguide/rename.html): such an ARN also needs
 * `codeconnections:UseConnection`, granted here on the source action's role.
 */
function grantCodeConnection(scope: PipelineStack, connectionArn: string): void {
  if (!/^arn:[^:]+:codeconnections:/.test(connectionArn)) return;
  const role = scope.node.findAll().find((c): c is iam.Role => c instanceof iam.Role && /\/Source\/[^/]+\/CodePipelineActionRole$/.test(c.node.path));
  if (!role) throw new Error('PipelineStack: no source action role found to grant codeconnections:UseConnection on');
  role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['codeconnections:UseConnection'], resources: [connectionArn] }));
}

/**
 * The step before a stage's deploys that deletes any of its stacks left in `ROLLBACK_COMPLETE` by a
 * first create that failed (see failed-create.ts), through their environments' deploy roles: the
 * pipeline's CloudFormation action refuses such a stack, so without it every retry failed.
 */
function failedCreateStep(id: string, stacks: readonly ProtectTarget[], app: string, scripts: pipelines.FileSet): pipelines.CodeBuildStep {
  return new pipelines.CodeBuildStep(id, {
    projectName: stageProjectName(app, id),
    input: scripts,
    commands: [[...failedCreateVariables(stacks), sourceStageScript('failed-create.sh')].join('\n')],
    // Deleting a stack and waiting for it takes minutes; FAILED_CREATE_WAIT_SECONDS bounds each stack.
    timeout: Duration.hours(2),
    // The deploy roles of the stage's accounts only (stage-grants.ts).
    rolePolicyStatements: [
      assumeInAccounts(
        stacks.map((t) => deployRolePattern(t.region)),
        stacks.map((t) => t.account),
      ),
    ],
  });
}

/**
 * The bake after a stage: the first action protects the stage's stacks (CodePipeline's CloudFormation
 * action ignores terminationProtection, see protect.ts), then the alarms of `targets` are watched for
 * `seconds`; a bake longer than one CodeBuild action may run (8 h) is chained over several actions.
 */
function bakeSteps(
  scope: Stack,
  id: string,
  targets: readonly BakeTarget[],
  bakeSeconds: number,
  protect: readonly ProtectTarget[],
  app: string,
  pipelineName: string,
  scripts: pipelines.FileSet,
): pipelines.CodeBuildStep[] {
  const segments = bakeSegments(bakeSeconds);
  const protectors = protect.flatMap((t) => (t.deletionProtectorRole ? [t.deletionProtectorRole] : []));
  return chain(
    segments.map((seconds, i) => {
      const stepId = segments.length === 1 ? id : `${id}-${i + 1}`;
      // The stage's bake-watcher roles and, for the protecting action, its deploy and protector roles:
      // by name pattern, in the stage's accounts only (stage-grants.ts).
      const roles = [
        namePattern(targets.map((t) => t.roleName)),
        ...(i === 0 ? [...protect.map((t) => deployRolePattern(t.region)), ...(protectors.length > 0 ? [namePattern(protectors)] : [])] : []),
      ];
      return new pipelines.CodeBuildStep(stepId, {
        projectName: stageProjectName(app, stepId),
        input: scripts,
        commands: [
          [
            ...(i === 0 && protect.length > 0 ? [...protectVariables(protect), sourceStageScript('protect.sh')] : []),
            ...bakeVariables(targets, seconds, { index: i + 1, of: segments.length }),
            sourceStageScript('bake.sh'),
          ].join('\n'),
        ],
        // CodePipeline resolves the execution id when the action starts: the bake tells a rollback from a rollout.
        env: { [BAKE_EXECUTION_ENV.executionId]: codepipeline.GlobalVariables.executionId, [BAKE_EXECUTION_ENV.pipelineName]: pipelineName },
        timeout: Duration.seconds(Math.min(seconds + 1800, BAKE_ACTION_LIMIT_SECONDS)),
        rolePolicyStatements: [
          assumeInAccounts(roles, [...targets.map((t) => t.account), ...(i === 0 ? protect.map((t) => t.account) : [])]),
          new iam.PolicyStatement({
            actions: ['codepipeline:GetPipelineExecution'],
            resources: [scope.formatArn({ service: 'codepipeline', resource: pipelineName })],
          }),
        ],
      });
    }),
  );
}

/** `steps`, each depending on the one before. */
function chain(steps: pipelines.CodeBuildStep[]): pipelines.CodeBuildStep[] {
  steps.forEach((step, i) => {
    if (i > 0) step.addStepDependency(steps[i - 1]);
  });
  return steps;
}
