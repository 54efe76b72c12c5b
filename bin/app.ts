#!/usr/bin/env node
import { App } from 'aws-cdk-lib';
import { addFleet } from '../lib/app';
import { FleetConfigError, loadFleet } from '../lib/fleet';

try {
  const fleet = loadFleet(process.env.CELLS_CONFIG ?? 'cells.config.ts');
  addFleet(new App(), fleet);
} catch (error) {
  if (error instanceof FleetConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
