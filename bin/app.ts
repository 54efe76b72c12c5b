#!/usr/bin/env node
import { synthFleet } from '../lib/app';
import { progressOn } from '../lib/domain/files';

process.exitCode = synthFleet({
  config: process.env.CELLS_CONFIG,
  err: (text) => process.stderr.write(text),
  debug: Boolean(process.env.CELLS_DEBUG),
  // Shown on a terminal only: `cdk synth` pipes the app's stderr, so there it stays off.
  progress: progressOn(process.stderr),
});
