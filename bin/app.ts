#!/usr/bin/env node
import { synthFleet } from '../lib/app';

process.exitCode = synthFleet({
  config: process.env.CELLS_CONFIG,
  err: (text) => process.stderr.write(text),
  debug: Boolean(process.env.CELLS_DEBUG),
});
