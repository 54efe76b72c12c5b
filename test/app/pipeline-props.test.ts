import { pipelineStackPropsOf } from '../../lib/app';
import { resolveFleet } from '../../lib/domain/fleet';
import { planWaves } from '../../lib/domain/waves';
import { CELL_ZERO_ACCOUNT, cellZeroInput } from '../support/cell-zero';
import { exampleFleet } from '../support/fleet';

describe('pipelineStackPropsOf', () => {
  it("reads the example fleet's pipeline section, wave plan, cells and routers into the pipeline's props", () => {
    const fleet = exampleFleet();
    const props = pipelineStackPropsOf(fleet);
    expect(props).toMatchObject({
      app: 'orders',
      toolingAccount: fleet.accounts.tooling,
      region: fleet.pipeline!.region,
      stackName: 'orders-pipeline',
      source: fleet.pipeline!.source,
      manualApproval: true,
      deploymentWindow: fleet.pipeline!.deploymentWindow,
    });
    expect(props.plan).toEqual(planWaves(fleet));
    expect(Object.keys(props.cellStacks)).toEqual(fleet.cells.map((c) => c.id));
    expect(Object.keys(props.routers)).toEqual(Object.keys(fleet.regions));
    expect(props.cellZero).toBeUndefined();
    expect(props.organizationId).toBe('o-a1b2c3d4e5');
  });

  it('gives cell zero its adoption stack and the canary bake', () => {
    const fleet = resolveFleet(cellZeroInput());
    const { cellZero } = pipelineStackPropsOf(fleet);
    expect(cellZero).toMatchObject({ stack: { cellId: 'zero', account: CELL_ZERO_ACCOUNT }, bakeSeconds: fleet.waves.bakeSeconds.canary });
  });

  it('refuses a fleet without a pipeline section, saying what to do instead', () => {
    const fleet = exampleFleet();
    expect(() => pipelineStackPropsOf({ ...fleet, pipeline: undefined })).toThrow(
      'fleet `orders` has no `pipeline` section; add one (docs/pipeline.md) or stamp the stacks without a pipeline (addFleet)',
    );
  });
});
