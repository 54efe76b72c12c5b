import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { cellStackPropsOf } from '../../lib/app';
import { CellStack } from '../../lib/cell';
import { Fleet } from '../../lib/fleet';
import { cdkApp, exampleFleet } from './fleet';

export interface SynthesizedCell {
  readonly stack: CellStack;
  readonly template: Template;
}

/** Synthesizes the named cells of `fleet` (default: the example fleet) into one app. */
export function synthCells(ids: readonly string[], fleet: Fleet = exampleFleet()): Record<string, SynthesizedCell> {
  const app = cdkApp();
  const stacks = ids.map((id) => {
    const cell = fleet.cells.find((c) => c.id === id);
    if (!cell) throw new Error(`no cell ${id} in the fleet`);
    return new CellStack(app, `cell-${id}`, cellStackPropsOf(fleet, cell));
  });
  // Every stack exists before the first Template.fromStack: synthesis freezes the tree.
  return Object.fromEntries(stacks.map((stack, i) => [ids[i], { stack, template: Template.fromStack(stack) }]));
}

/** A stack with fixed AZs for testing one construct alone. */
export class TestStack extends Stack {
  constructor(app: App = cdkApp(), id = 'test') {
    super(app, id, { env: { account: '123456789012', region: 'eu-west-1' } });
  }
  public override get availabilityZones(): string[] {
    return ['euw1-az1', 'euw1-az2', 'euw1-az3'];
  }
}

/** In the example fleet: `canary-eu` is Fargate + Aurora, `eu-3` is EC2 + RDS PostgreSQL. */
export const FARGATE_CELL = 'canary-eu';
export const EC2_CELL = 'eu-3';
