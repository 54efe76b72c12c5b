import { Fleet } from '../domain/fleet';
import { pipelineStackName } from '../domain/names';
import { PipelineStackProps } from '../constructs/pipeline';
import { planWaves } from '../domain/waves';
import { cellStacksOf } from './cell-props';
import { cellZeroStackProps } from './cell-zero-props';
import { pipelineRoutersOf } from './router-props';

/**
 * The fleet file's `pipeline` section, wave policy and cells as the PipelineStack's props: the one
 * place the pipeline meets `Fleet`. The wave plan is computed here (`planWaves`), so a fleet that
 * needs more stages than a pipeline holds fails before any construct is built.
 */
export function pipelineStackPropsOf(fleet: Fleet): PipelineStackProps {
  const { pipeline } = fleet;
  if (!pipeline)
    throw new Error(
      `fleet \`${fleet.app}\` has no \`pipeline\` section; add one (docs/pipeline.md) or stamp the stacks without a pipeline (addFleet)`,
    );
  return {
    app: fleet.app,
    toolingAccount: fleet.accounts.tooling,
    region: pipeline.region,
    stackName: pipelineStackName(fleet.app),
    source: pipeline.source,
    plan: planWaves(fleet),
    cellStacks: cellStacksOf(fleet),
    routers: pipelineRoutersOf(fleet),
    // Cell zero is baked like the canary: it is the first cell to take a change.
    ...(fleet.cellZero ? { cellZero: { stack: cellZeroStackProps(fleet), bakeSeconds: fleet.waves.bakeSeconds.canary } } : {}),
    ...(pipeline.manualApproval !== undefined ? { manualApproval: pipeline.manualApproval } : {}),
    ...(pipeline.deploymentWindow ? { deploymentWindow: pipeline.deploymentWindow } : {}),
    ...(pipeline.organizationId ? { organizationId: pipeline.organizationId } : {}),
  };
}
