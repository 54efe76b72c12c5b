import * as s3 from 'aws-cdk-lib/aws-s3';
import { addFleet } from '../../../lib/app';
import { resolveFleet } from '../../../lib/domain/fleet';
import { cellZeroInput } from '../../support/cell-zero';
import { cdkApp } from '../../support/fleet';

describe('a fleet adopting a cell zero, through the audit gate', () => {
  // Cut to its canary cell (beside cell zero) and one cell in the other region: every kind of stack
  // the gate covers (cells, the adoption stack, both regions' router and router group stacks).
  const fleetOf = () => {
    const input = cellZeroInput();
    return resolveFleet({ ...input, cells: input.cells.filter((c) => ['canary-eu', 'us-1'].includes(c.id)) });
  };

  it('synthesizes with the AwsSolutions and cell-isolation packs gating every stack, the adoption and router stacks included', () => {
    const app = cdkApp();
    const stacks = addFleet(app, fleetOf(), { audit: true });
    // Open findings make synth throw (cdk-nag 3 validation plugins).
    const assembly = app.synth();
    expect(assembly.stacks.map((s) => s.stackName)).toEqual(
      expect.arrayContaining(['orders-cell-zero-adoption', ...stacks.routers.map((r) => r.stackName)]),
    );
  });

  it('fails synth on an open finding in the adoption stack: the gate covers it', () => {
    const app = cdkApp();
    const stacks = addFleet(app, fleetOf(), { audit: true });
    new s3.Bucket(stacks.cellZero!, 'Unaudited');
    expect(() => app.synth()).toThrow(/AwsSolutions-S1|Validation failed/);
  });
});
