import { App, Validations } from 'aws-cdk-lib';
import { AuditReport, runAudit } from './audit';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CellStack, endpointServiceFingerprint } from '../constructs/cell';
import { CellZeroStack } from '../constructs/cell-zero';
import { cellZeroStackProps } from './cell-zero-props';
import { Fleet } from '../domain/fleet';
import { Progress } from '../domain/files';
import { pipelineStackName } from '../domain/names';
import { CellIsolationChecks } from '../constructs/isolation';
import { PipelineStack } from '../constructs/pipeline';
import { RouterGroupsStack, RouterStack } from '../constructs/router';
import { countAcknowledged } from './audit-summary';
import { cellStackPropsOf } from './cell-props';
import { pipelineStackPropsOf } from './pipeline-props';
import { isolationChecksPropsOf } from './isolation-props';
import { cliSynthContext } from './context';
import { routerGroupsStackPropsOf, routerStackPropsOf } from './router-props';
import { addLimitChecks } from './limit-checks';

export interface FleetStacks {
  /** One per cell, in config order. */
  readonly cells: readonly CellStack[];
  /** One per region, in config order. */
  readonly routers: readonly RouterStack[];
  /** Two per region (the canary group, then the other groups), each after its region's router stack. */
  readonly routerGroups: readonly RouterGroupsStack[];
  /** Cell zero's adoption stack (`cell-<id>-adoption`), when the fleet adopts an existing stack. */
  readonly cellZero?: CellZeroStack;
}

/**
 * The fleet behind its delivery pipeline: one PipelineStack in the tooling account whose waves
 * deploy every cell's stack. AwsSolutions and cell-isolation checks run over the whole app, cell stages included,
 * and every written template is checked against AWS's limits (lib/domain/limits).
 */
export function addPipeline(app: App, fleet: Fleet, options: { audit?: boolean } = {}): PipelineStack {
  const stack = new PipelineStack(app, pipelineStackName(fleet.app), pipelineStackPropsOf(fleet));
  addLimitChecks(app, fleet.quotas);
  if (options.audit ?? true) addAuditGate(app, fleet);
  return stack;
}

/**
 * Stamps the fleet into `app`: per region a RouterStack (`router-<region>`) and its two
 * RouterGroupsStacks (`router-<region>-canary-group`, `router-<region>-groups`), and one CellStack
 * per cell (`cell-<id>`). AwsSolutions and cell-isolation checks run as validation plugins, so
 * `app.synth()` fails on any unacknowledged finding.
 */
export function addFleet(app: App, fleet: Fleet, options: { audit?: boolean } = {}): FleetStacks {
  // Cells first: each router stack carries their endpoint-service fingerprints (it reads a cell's service name again when its changes).
  const cells = fleet.cells.map((cell) => new CellStack(app, `cell-${cell.id}`, cellStackPropsOf(fleet, cell)));
  // Cell zero (docs/cell-zero.md): its adoption stack, before the routers that link it, like a cell.
  const cellZero = fleet.cellZero ? new CellZeroStack(app, `cell-${fleet.cellZero.id}-adoption`, cellZeroStackProps(fleet)) : undefined;
  const cellEndpointFingerprints = Object.fromEntries([
    ...fleet.cells.map((cell, i) => [cell.id, endpointServiceFingerprint(cells[i].cell.entry)]),
    ...(cellZero ? [[fleet.cellZero!.id, endpointServiceFingerprint(cellZero.entry)]] : []),
  ]);
  const routers = Object.keys(fleet.regions).map(
    (region) => new RouterStack(app, `router-${region}`, routerStackPropsOf(fleet, region, cellEndpointFingerprints)),
  );
  // Without a pipeline (`cdk deploy --all`) the order is the same: router stack, canary group, other groups.
  const routerGroups = routers.flatMap((router) => {
    const canary = new RouterGroupsStack(app, `router-${router.region}-canary-group`, routerGroupsStackPropsOf(fleet, router.region, 'canary'));
    const rest = new RouterGroupsStack(app, `router-${router.region}-groups`, routerGroupsStackPropsOf(fleet, router.region, 'rest'));
    canary.addStackDependency(router);
    rest.addStackDependency(canary);
    return [canary, rest];
  });
  addLimitChecks(app, fleet.quotas);
  if (options.audit ?? true) addAuditGate(app, fleet);
  return { cells, routers, routerGroups, ...(cellZero ? { cellZero } : {}) };
}

/** The fleet as `cdk synth` builds it: behind its delivery pipeline when it has one, else its stacks directly. */
export function stampFleet(app: App, fleet: Fleet, options: { audit?: boolean } = {}): void {
  if (fleet.pipeline) addPipeline(app, fleet, options);
  else addFleet(app, fleet, options);
}

/** `npm run audit`: every pack over the app `cdk synth` builds (lib/app/audit), synthesized once without the synth gate. */
export function auditFleet(fleet: Fleet, options: { now?: Date; progress?: Progress } = {}): AuditReport {
  const build = (outdir: string) => {
    const app = new App({ outdir, context: cliSynthContext() });
    stampFleet(app, fleet, { audit: false });
    return app;
  };
  return runAudit({ app: fleet.app, build, isolation: isolationChecksPropsOf(fleet) }, options);
}

/**
 * The packs that gate synth: AwsSolutions and the fleet's own cell-isolation pack, both cdk-nag 3
 * validation plugins that walk the whole construct tree (pipeline stages included), so any open
 * finding fails `cdk synth`. Control Tower and NIST 800-53 run in `npm run audit` (docs/audit.md).
 */
export function addAuditGate(app: App, fleet: Fleet): void {
  Validations.of(app).addPlugins(
    countAcknowledged(app, new AwsSolutionsChecks(app)),
    countAcknowledged(app, new CellIsolationChecks(app, isolationChecksPropsOf(fleet))),
  );
}
