import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CellStack } from '../cell';
import { Fleet } from '../fleet';
import { CellIsolationChecks } from '../isolation';
import { PipelineStack } from '../pipeline';
import { addPolicySizeLimit } from '../pipeline/policy-limits';
import { RouterStack } from '../router-stack';
import { countAcknowledged } from './audit-summary';
import { addTemplateSizeLimit } from './template-size';

export interface FleetStacks {
  /** One per cell, in config order. */
  readonly cells: readonly CellStack[];
  /** One per region, in config order. */
  readonly routers: readonly RouterStack[];
}

/**
 * The fleet behind its delivery pipeline: one PipelineStack in the tooling account whose waves
 * deploy every cell's stack. AwsSolutions and cell-isolation checks run over the whole app, cell stages included.
 */
export function addPipeline(app: App, fleet: Fleet, options: { audit?: boolean; policyLimits?: boolean } = {}): PipelineStack {
  const stack = new PipelineStack(app, `${fleet.app}-pipeline`, { fleet, stackName: `${fleet.app}-pipeline` });
  addTemplateSizeLimit(app);
  // Off only for benchmarks that synthesize fleets past what one pipeline can deploy.
  if (options.policyLimits ?? true) addPolicySizeLimit(app);
  if (options.audit ?? true) addAuditGate(app, fleet);
  return stack;
}

/**
 * Stamps the fleet into `app`: one RouterStack per region (`router-<region>`) and one CellStack
 * per cell (`cell-<id>`). AwsSolutions and cell-isolation checks run as validation plugins, so
 * `app.synth()` fails on any unacknowledged finding.
 */
export function addFleet(app: App, fleet: Fleet, options: { audit?: boolean } = {}): FleetStacks {
  const routers = Object.keys(fleet.regions).map((region) => new RouterStack(app, `router-${region}`, { fleet, region }));
  const cells = fleet.cells.map((cell) => new CellStack(app, `cell-${cell.id}`, { cell, fleet }));
  addTemplateSizeLimit(app);
  if (options.audit ?? true) addAuditGate(app, fleet);
  return { cells, routers };
}

/**
 * The packs that gate synth: AwsSolutions and the fleet's own cell-isolation pack, both cdk-nag 3
 * validation plugins that walk the whole construct tree (pipeline stages included), so any open
 * finding fails `cdk synth`. Control Tower and NIST 800-53 run in `npm run audit` (see README).
 */
export function addAuditGate(app: App, fleet: Fleet): void {
  Validations.of(app).addPlugins(countAcknowledged(app, new AwsSolutionsChecks(app)), countAcknowledged(app, new CellIsolationChecks(app, { fleet })));
}
