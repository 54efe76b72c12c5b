/**
 * npm run bench:cli: how long `cellctl` takes to start and answer, from the project folder.
 * Target: under 0.5 s for `cellctl --help` and `cellctl mapping where KEY --mapping FILE` as the docs
 * run it, `node bin/cellctl.js` (the compiled JavaScript in dist). For comparison, the same
 * commands from the TypeScript sources through tsx (CELLCTL_FROM_SOURCE=1), `npm run` of a script
 * running the same file, and `npx cellctl`.
 * Wall-clock, median and slowest of the runs after one warm-up, each in a fresh process.
 */
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const ROOT = path.join(__dirname, '..');
const BIN = path.join(ROOT, 'bin', 'cellctl.js');
const RUNS = Number(process.env.BENCH_RUNS ?? 9);

function timeOnce(argv: readonly string[], env: NodeJS.ProcessEnv): number {
  const started = process.hrtime.bigint();
  const result = spawnSync(argv[0], argv.slice(1), { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new Error(`${argv.join(' ')} exited ${result.status}: ${result.stderr}`);
  return ms;
}

function measure(argv: readonly string[], env: NodeJS.ProcessEnv, runs = RUNS): { median: number; max: number } {
  timeOnce(argv, env);
  const times = Array.from({ length: runs }, () => timeOnce(argv, env)).sort((a, b) => a - b);
  return { median: times[Math.floor(runs / 2)], max: times[times.length - 1] };
}

const sourcesFile = path.join(ROOT, 'dist', 'sources.json');
if (!fs.existsSync(sourcesFile)) throw new Error('dist is missing: run `npm run compile` (npm ci does it) first');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cli-'));
try {
  const mapping = path.join(dir, 'mapping.json');
  execFileSync(process.execPath, [BIN, 'mapping', 'init', '--out', mapping], { cwd: ROOT, stdio: 'ignore' });
  const compiled = { ...process.env, CELLCTL_FROM_SOURCE: '' };
  const source = { ...process.env, CELLCTL_FROM_SOURCE: '1' };
  const commands: [string, string[]][] = [
    ['cellctl --help', ['--help']],
    ['cellctl mapping where tenant-42 --mapping FILE', ['mapping', 'where', 'tenant-42', '--mapping', mapping]],
  ];
  // Node's own start-up, to tell the CLI's cost from a busy machine's.
  const bare = measure([process.execPath, '-e', '0'], process.env);
  const row = (name: string, how: string, t: { median: number; max: number }, target = '') => [
    name,
    how,
    t.median.toFixed(0),
    t.max.toFixed(0),
    (t.median - bare.median).toFixed(0),
    target,
  ];
  const rows: string[][] = [];
  for (const [name, args] of commands) {
    const fast = measure([process.execPath, BIN, ...args], compiled);
    const slow = measure([process.execPath, BIN, ...args], source, 5);
    rows.push(row(name, 'node bin/cellctl.js, compiled', fast, fast.median < 500 ? 'yes' : 'NO'));
    rows.push(row(name, 'from source (tsx)', slow));
  }
  // npm run: npm's own start-up on top; without -s it also prints a banner on stdout, which breaks `--json | jq`.
  // The script exists only in this copy of package.json (`npm run --prefix` reads it from the temporary folder).
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: 'bench-cli', private: true, scripts: { cellctl: `node ${JSON.stringify(BIN)}` } }),
  );
  rows.push(
    row('cellctl --help', 'npm run -s cellctl -- (compiled)', measure(['npm', 'run', '-s', '--prefix', dir, 'cellctl', '--', '--help'], compiled, 5)),
  );
  rows.push(row('cellctl --help', 'npx cellctl (compiled)', measure(['npx', '--no-install', 'cellctl', '--help'], compiled, 3)));
  rows.push(row('node -e 0', 'Node alone', bare));
  console.log('| command | how | median (ms) | slowest (ms) | median above Node alone (ms) | under 500 ms |');
  console.log('|---|---|---|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  console.log(
    `runs: ${RUNS} after one warm-up (npx: 3, from source and npm run: 5); node ${process.version}; ${os.cpus().length} cores; load average ${os.loadavg()[0].toFixed(1)}`,
  );
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
