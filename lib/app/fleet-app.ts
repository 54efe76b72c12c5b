import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CellStack } from '../cell';
import { Fleet } from '../fleet';

export interface FleetStacks {
  /** One per cell, in config order. */
  readonly cells: readonly CellStack[];
}

/**
 * Stamps the fleet into `app`: one CellStack per cell (stack id = cell id). AwsSolutions checks
 * run as a validation plugin, so `app.synth()` fails on any unacknowledged finding.
 */
export function addFleet(app: App, fleet: Fleet, options: { audit?: boolean } = {}): FleetStacks {
  const cells = fleet.cells.map((cell) => new CellStack(app, `cell-${cell.id}`, { cell, fleet }));
  if (options.audit ?? true) {
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  }
  return { cells };
}
