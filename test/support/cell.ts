import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { cellPropsOf, cellStackPropsOf } from '../../lib/app/cell-props';
import { Cell, CellStack } from '../../lib/constructs/cell';
import { Fleet } from '../../lib/domain/fleet';
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

export interface BareCell {
  /** The stack holding only the cell: the cell's account and region, nothing of CellStack's. */
  readonly stack: Stack;
  readonly cell: Cell;
  readonly template: Template;
}

/**
 * One `Cell` per named cell of `fleet` (default: the example fleet), each alone in a bare stack of
 * one app, from the props the app gives it (`cellPropsOf`). The workload is a registry image unless
 * `fleetImage`: no image asset to stage for tests that are not about the image.
 */
export function synthBareCells(
  ids: readonly string[],
  fleet: Fleet = exampleFleet(),
  o: { readonly fleetImage?: boolean } = {},
): Record<string, BareCell> {
  const app = cdkApp();
  const cells = ids.map((id) => {
    const model = fleet.cells.find((c) => c.id === id);
    if (!model) throw new Error(`no cell ${id} in the fleet`);
    const props = cellPropsOf(fleet, model);
    const workload = o.fleetImage
      ? props.workload
      : { ...props.workload, image: ecs.ContainerImage.fromRegistry('public.ecr.aws/nginx/nginx:latest') };
    const stack = new Stack(app, `cell-${id}`, { env: { account: model.account, region: model.region } });
    return { stack, cell: new Cell(stack, 'Cell', { ...props, workload }) };
  });
  // Every stack exists before the first Template.fromStack: synthesis freezes the tree.
  return Object.fromEntries(cells.map((c, i) => [ids[i], { ...c, template: Template.fromStack(c.stack) }]));
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
