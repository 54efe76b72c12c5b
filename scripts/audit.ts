/**
 * npm run audit [-- --json]: AwsSolutions (the gate) and NIST 800-53 rev 5 (advisory) over every
 * stack of the fleet; prints findings per rule, open vs acknowledged. Exits 1 on any open
 * AwsSolutions finding, as synth does.
 */
import { App, Stack } from 'aws-cdk-lib';
import { AwsSolutionsChecks, NIST80053R5Checks } from 'cdk-nag';
import { addFleet, addPipeline, cdkJsonContext } from '../lib/app';
import { auditStacks, formatAudit } from '../lib/audit';
import { FleetConfigError, loadFleet } from '../lib/fleet';
import { CellStage } from '../lib/pipeline';

function main(): number {
  const fleet = loadFleet(process.env.CELLS_CONFIG ?? 'cells.config.ts');
  const app = new App({ context: cdkJsonContext() });
  // The same app `cdk synth` builds: behind the pipeline when the fleet has one.
  let stacks: Stack[];
  let cellCount = 0;
  if (fleet.pipeline) {
    const pipeline = addPipeline(app, fleet, { audit: false });
    const support = Object.values(pipeline.pipeline.pipeline.crossRegionSupport).map((s) => s.stack);
    // The pack walks into the pipeline's stages, so the cell stacks are audited through it.
    stacks = [pipeline, ...support];
    cellCount = pipeline.node.children.filter((c) => c instanceof CellStage).length;
  } else {
    stacks = [...addFleet(app, fleet, { audit: false }).cells];
    cellCount = stacks.length;
  }
  const rows = [...auditStacks(new AwsSolutionsChecks(), stacks), ...auditStacks(new NIST80053R5Checks(), stacks)];
  if (process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify({ stacks: stacks.length, cellStacks: cellCount, rules: rows }, null, 2)}\n`);
  } else {
    process.stdout.write(`Audited ${stacks.length} top-level stack(s), ${cellCount} cell stack(s).\n${formatAudit(rows)}\n`);
  }
  const gate = rows.filter((r) => r.pack === 'AwsSolutions' && r.open > 0);
  if (gate.length > 0) {
    process.stderr.write(`Open AwsSolutions findings: ${gate.map((r) => r.rule).join(', ')}; fix them or acknowledge them on the narrowest construct.\n`);
    return 1;
  }
  return 0;
}

try {
  process.exitCode = main();
} catch (error) {
  if (error instanceof FleetConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exitCode = 1;
  } else {
    throw error;
  }
}
