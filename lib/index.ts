/**
 * The package's entry point (`import { ... } from 'cell-factory'`): the constructs, the adapter from
 * a fleet file to them, and the fleet file's types. Everything else under lib/ (the CLI, the router
 * agent, the move engine, the audit runner, the local fleet) is internal: reachable by its compiled
 * path, with no promise that it stays where it is or keeps its shape.
 */

// The fleet file: define it, load and validate it (every problem listed before any construct is built).
export { defineFleet, loadFleet, resolveFleet, fleetProblems, FleetConfigError } from './domain/fleet';
export type * from './domain/fleet/types';

// The adapter: the fleet file made into the constructs' props, a whole fleet stamped into an app,
// the audit gate and AWS limit checks.
export {
  addFleet,
  addPipeline,
  addAuditGate,
  auditSummary,
  cellPropsOf,
  cellStackPropsOf,
  cellStacksOf,
  formatAuditSummary,
  isolationChecksPropsOf,
  pipelineRoutersOf,
  pipelineStackPropsOf,
  routerGroupsStackPropsOf,
  routerStackPropsOf,
} from './app';
export type { FleetStacks, PackSummary } from './app';

// A cell with props of its own, and its building blocks.
export { Cell, CellStack, CellAlarms, CellCompute, CellDashboard, CellData, CellEntry, CellKey, CellNetwork, CellQueues } from './constructs/cell';
export type {
  CellProps,
  CellStackProps,
  CellNetworkOptions,
  CellComputeOptions,
  CellWorkloadOptions,
  CellDatabaseOptions,
  CellRoutingOptions,
  CellTestedLimits,
  CellAlarmSettings,
  CellAlarmOptions,
  CellBuildingBlocks,
  CellExtension,
} from './constructs/cell';

// The router: one stack per region, its groups, the mapping bucket they read.
export { RouterStack, RouterGroupsStack, RouterGroup, MappingBucket } from './constructs/router';
export type { RouterStackProps, RouterGroupsStackProps, RouterGroupProps, MappingBucketProps } from './constructs/router';

// The pipeline: cell waves, then the routers region by region.
export { PipelineStack, CellStage, CellZeroStage, RouterStage, pipelinePropsProblems } from './constructs/pipeline';
export type {
  PipelineStackProps,
  PipelineWavePlan,
  PipelineCellWave,
  PipelineRouterWave,
  PipelineCellZero,
  PipelineDeploymentWindow,
  RouterStageStacks,
} from './constructs/pipeline';
export { planWaves, WavePlanError } from './domain/waves';
export type { Wave, WaveKind, WavePlan, RouterWave } from './domain/waves';

// The cell-isolation rules as a cdk-nag pack.
export { CellIsolationChecks } from './constructs/isolation';
export type { CellIsolationChecksProps } from './constructs/isolation';
