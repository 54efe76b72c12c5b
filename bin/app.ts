#!/usr/bin/env node
import { App } from 'aws-cdk-lib';
import { auditSummary, formatAuditSummary, stampFleet } from '../lib/app';
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
const app = new App();
try {
  // With a `pipeline` section the cells are deployed by the pipeline's waves; without it, directly.
  stampFleet(app, fleet);
  // Synthesize here (not at exit) to end with the audit summary: what the gate checked and let pass.
  app.synth();
} catch (error) {
  if (process.env.CELLS_DEBUG) throw error;
  // A failed audit gate has printed its report above; the stack trace would bury it.
  process.stderr.write(`synth failed: ${(error as Error).message.split('\n')[0]} (CELLS_DEBUG=1 shows the stack trace)\n`);
  process.exit(1);
}
process.stderr.write(`${formatAuditSummary(auditSummary(app))}\n`);
