#!/usr/bin/env node
import { App } from 'aws-cdk-lib';
import { addFleet, addPipeline } from '../lib/app';
import { FleetConfigError, loadFleet } from '../lib/fleet';

try {
  const fleet = loadFleet(process.env.CELLS_CONFIG ?? 'cells.config.ts');
  // With a `pipeline` section the cells are deployed by the pipeline's waves; without it, directly.
  const app = new App();
  if (fleet.pipeline) addPipeline(app, fleet);
  else addFleet(app, fleet);
} catch (error) {
  if (error instanceof FleetConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
