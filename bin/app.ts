#!/usr/bin/env node
import { App } from 'aws-cdk-lib';
import { addFleet, addPipeline, auditSummary, formatAuditSummary } from '../lib/app';
import { FleetConfigError, loadFleet } from '../lib/fleet';

let fleet;
try {
  fleet = loadFleet(process.env.CELLS_CONFIG ?? 'cells.config.ts');
} catch (error) {
  // A config problem is the operator's to fix: the list of problems, never a stack trace.
  if (!(error instanceof FleetConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}
// With a `pipeline` section the cells are deployed by the pipeline's waves; without it, directly.
const app = new App();
if (fleet.pipeline) addPipeline(app, fleet);
else addFleet(app, fleet);
// Synthesize here (not at exit) to end with the audit summary: what the gate checked and let pass.
app.synth();
process.stderr.write(`${formatAuditSummary(auditSummary(app))}\n`);
