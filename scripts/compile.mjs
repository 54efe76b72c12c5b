// Compiles the package (tsconfig.build.json) to JavaScript and .d.ts in dist/: the constructs
// (lib/index.ts and what it imports), `cellctl` (bin/cellctl.ts), the entry points the images bundle
// (bin/router-agent.ts, bin/mover.ts, bin/workload.ts) and the router's Lambda handlers
// (lib/**/*-handler.ts). Runs on `npm ci`, `npm install` and `npm pack` (the `prepare` script) and on
// `npm run compile`.
//
// Records the sources it compiled with their modification times: in this repository bin/cellctl.js
// runs the compiled code only while they are unchanged, and falls back to the TypeScript sources
// (tsx) otherwise, so an edit is never silently ignored. The installed package has no sources and
// always runs the compiled code.
//
// Under `npm pack` or `npm publish` (or with --strict) a failed compilation fails the command, so no
// package is made from half a build; elsewhere it leaves cellctl on its sources and `npm ci` going.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist');
const require = createRequire(import.meta.url);
const strict = process.argv.includes('--strict') || ['pack', 'publish'].includes(process.env.npm_command ?? '');
const fail = (message) => {
  process.stderr.write(`compile: ${message}\n`);
  process.exit(strict ? 1 : 0);
};

// A container build runs `npm ci` before copying the sources, and `--omit=dev` has no TypeScript:
// then cellctl runs from source through tsx, which is a production dependency.
if (!existsSync(join(root, 'bin', 'cellctl.ts'))) process.exit(0);
let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc');
} catch {
  fail('TypeScript is not installed (npm ci --omit=dev?); cellctl will run from its TypeScript sources');
}

const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit', cwd: root });
if (result.status !== 0) {
  // Without sources.json bin/cellctl.js runs the TypeScript, so a failed build never breaks `npm ci`
  // or runs half-compiled code; `npm run build` (tsc --noEmit) reports the same errors.
  rmSync(join(out, 'sources.json'), { force: true });
  fail('compiling failed (above); cellctl will run from its TypeScript sources');
}

/** Every compiled .js under dist maps back to one .ts source. */
function compiled(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = join(dir, entry.name);
    if (entry.isDirectory()) return compiled(file);
    return entry.name.endsWith('.js') ? [relative(out, file).replace(/\.js$/, '.ts')] : [];
  });
}
const sources = Object.fromEntries(
  compiled(out)
    .filter((s) => existsSync(join(root, s)))
    .sort()
    .map((s) => [s, statSync(join(root, s)).mtimeMs]),
);
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'sources.json'), `${JSON.stringify({ sources }, null, 1)}\n`);
process.stderr.write(`compile: compiled ${Object.keys(sources).length} files to ${relative(root, out)}\n`);
