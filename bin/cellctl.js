#!/usr/bin/env node
// Entry point of `cellctl`. In this repository: the compiled JavaScript in dist (built by `npm ci`,
// or `npm run compile`) while its TypeScript sources are unchanged since that build; otherwise, or
// with CELLCTL_FROM_SOURCE=1, the sources themselves through tsx (slower to start, never stale).
// Installed as a package (no TypeScript sources beside this file): always the compiled JavaScript.
const fs = require('fs');
const path = require('path');

const dist = path.join(__dirname, '..', 'dist');
const installed = !fs.existsSync(path.join(__dirname, 'cellctl.ts'));

function compiledIsCurrent() {
  if (process.env.CELLCTL_FROM_SOURCE) return false;
  let recorded;
  try {
    recorded = JSON.parse(fs.readFileSync(path.join(dist, 'sources.json'), 'utf8')).sources;
  } catch {
    return false;
  }
  const root = path.join(__dirname, '..');
  return Object.entries(recorded).every(([file, mtimeMs]) => {
    try {
      return fs.statSync(path.join(root, file)).mtimeMs === mtimeMs;
    } catch {
      return false;
    }
  });
}

if (installed || compiledIsCurrent()) {
  require(path.join(dist, 'bin', 'cellctl.js'));
} else {
  if (process.stderr.isTTY && !process.env.CELLCTL_FROM_SOURCE && fs.existsSync(dist)) {
    process.stderr.write('cellctl: sources changed since the last build; running them through tsx (`npm run compile` makes it start fast again)\n');
  }
  require('tsx/cjs');
  require('./cellctl.ts');
}
