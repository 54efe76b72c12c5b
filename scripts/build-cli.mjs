// Compiles `cellctl` (bin/cellctl.ts and everything it imports) to plain JavaScript in dist/cli, so
// the CLI starts without loading TypeScript through tsx (npm run bench:cli). Runs on `npm ci` and
// `npm install` (the `prepare` script) and on `npm run build:cli`. Records the sources it compiled
// with their modification times: bin/cellctl.js runs the compiled code only while they are unchanged,
// and falls back to the TypeScript sources (tsx) otherwise, so an edit is never silently ignored.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'cli');
const require = createRequire(import.meta.url);

// A container build runs `npm ci` before copying the sources, and `--omit=dev` has no TypeScript:
// then cellctl runs from source through tsx, which is a production dependency.
if (!existsSync(join(root, 'bin', 'cellctl.ts'))) process.exit(0);
let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc');
} catch {
  process.stderr.write('build-cli: TypeScript is not installed (npm ci --omit=dev?); cellctl will run from its TypeScript sources\n');
  process.exit(0);
}

const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.cli.json')], { stdio: 'inherit', cwd: root });
if (result.status !== 0) {
  // Without sources.json bin/cellctl.js runs the TypeScript, so a failed build never breaks `npm ci`
  // or runs half-compiled code; `npm run build` (tsc --noEmit) reports the same errors.
  rmSync(join(out, 'sources.json'), { force: true });
  process.stderr.write('build-cli: compiling cellctl failed (above); cellctl will run from its TypeScript sources\n');
  process.exit(0);
}

/** Every compiled .js under dist/cli maps back to one .ts source. */
function compiled(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = join(dir, entry.name);
    if (entry.isDirectory()) return compiled(file);
    return entry.name.endsWith('.js') ? [relative(out, file).replace(/\.js$/, '.ts')] : [];
  });
}
const sources = Object.fromEntries(compiled(out).filter((s) => existsSync(join(root, s))).sort().map((s) => [s, statSync(join(root, s)).mtimeMs]));
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'sources.json'), `${JSON.stringify({ sources }, null, 1)}\n`);
process.stderr.write(`build-cli: compiled ${Object.keys(sources).length} files to ${relative(root, out)}\n`);
