#!/usr/bin/env node
// Entry point for `npx cellctl`: runs the TypeScript sources through tsx, so the fleet config
// (cells.config.ts) loads the same way it does for the CDK app.
require('tsx/cjs');
require('./cellctl.ts');
