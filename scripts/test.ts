/**
 * npm test | npm run test:unit | npm run test:integration | npm run test:prereqs [-- JEST ARGS]
 * (tsx scripts/test.ts all|unit|integration|prereqs [JEST ARGS])
 *
 *   all (npm test)  the type check (`tsc --noEmit`, as `npm run build`), the prerequisites check,
 *                   then the unit tests, then the integration tests
 *   unit            unit and synthesis tests, in parallel workers; they need nothing installed
 *   integration     the prerequisites check, then the tests that start real servers, one at a time
 *   prereqs         the prerequisites check alone
 *
 * The check looks for what the integration tests start (test/support/prerequisites.ts). As root
 * where apt-get is, it says what is missing and installs it (TEST_INSTALL=no: never); elsewhere, or
 * with TEST_INSTALL=no, it prints one line
 * per missing program with the command that installs it, and the integration tests are not run
 * (the unit tests still are) and the exit status is 1. JEST ARGS go to each jest run; with
 * `--json --outputFile=FILE` the runs' results are merged into FILE, as one jest run would write it.
 * jest strips types without checking them (test/support/transform.js): a type error fails `npm test`
 * through the type check, which runs first and, failing, still lets the tests run and report.
 * docs/testing.md.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { installCommand, Prerequisite, PREREQUISITES } from '../test/support/prerequisites';

type Part = 'unit' | 'integration';
const ROOT = path.join(__dirname, '..');
const JEST = require.resolve('jest/bin/jest');
const TSC = require.resolve('typescript/bin/tsc');
/** Per part: unit files run in a worker per core; integration files one at a time, as they measure. */
const PART_ARGS: Record<Part, readonly string[]> = { unit: ['--maxWorkers=100%'], integration: ['--runInBand'] };

const say = (line: string) => process.stderr.write(`${line}\n`);
/** apt-get without questions; pip without its warning about running as root, which is the point here (an option older pips do not know, so set as an environment variable). */
const sh = (command: string, args: readonly string[]) =>
  spawnSync(command, args, {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive', PIP_ROOT_USER_ACTION: 'ignore' },
  }).status === 0;
const onPath = (command: string) => spawnSync('sh', ['-c', 'command -v "$1"', 'sh', command], { stdio: 'ignore' }).status === 0;

/**
 * apt-get install, waiting for the dpkg lock (a fresh machine's boot-time apt jobs); the package
 * lists are read once per run, and again before the one retry (a mirror hiccup, stale lists).
 */
let aptUpdated = false;
function aptInstall(packages: readonly string[]): boolean {
  const lock = ['-o', 'DPkg::Lock::Timeout=300'];
  for (let attempt = 1; attempt <= 2; attempt++) {
    if (!aptUpdated || attempt === 2) aptUpdated = sh('apt-get', [...lock, 'update', '-qq']);
    if (aptUpdated && sh('apt-get', [...lock, 'install', '-y', '-qq', ...packages])) return true;
    say(`test prerequisites: apt-get install ${packages.join(' ')} failed (attempt ${attempt} of 2)`);
    if (attempt === 1) spawnSync('sleep', ['15']);
  }
  return false;
}

/**
 * pip into the system Python. Debian 12 and Ubuntu 24.04 mark it externally managed (PEP 668: an
 * EXTERNALLY-MANAGED file beside the standard library) and plain pip refuses there, so the flag that
 * overrides it is given exactly there (older pips, as on Ubuntu 22.04, do not know the flag).
 */
function pipInstall(requirement: string): boolean {
  if (spawnSync('python3', ['-m', 'pip', '--version'], { stdio: 'ignore' }).status !== 0 && !aptInstall(['python3-pip'])) return false;
  const managed = spawnSync(
    'python3',
    ['-c', 'import os, sysconfig; print(os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'],
    { encoding: 'utf8' },
  );
  const flag = managed.stdout?.trim() === 'True' ? ['--break-system-packages'] : [];
  return sh('python3', ['-m', 'pip', 'install', '--quiet', ...flag, requirement]);
}

/** The prerequisites still missing after installing what can be installed here. */
function prerequisites(): Prerequisite[] {
  const missing = PREREQUISITES.filter((p) => p.check() !== undefined);
  // TEST_INSTALL=no: never install, only name what is missing and how to install it (a root shell
  // on a machine of your own, where system packages are yours to choose).
  const optedOut = process.env.TEST_INSTALL === 'no';
  const canInstall = process.getuid?.() === 0 && onPath('apt-get') && !optedOut;
  if (missing.length > 0 && optedOut) say('test prerequisites: not installing anything (TEST_INSTALL=no)');
  if (missing.length > 0 && canInstall) {
    const apt = missing.flatMap((p) => p.apt ?? []);
    const pip = missing.flatMap((p) => (p.pip ? [p.pip] : []));
    const tools = [...(apt.length > 0 ? ['apt-get'] : []), ...(pip.length > 0 ? ['pip'] : [])];
    say(`test prerequisites: installing ${[...apt, ...pip].join(' ')} (as root: ${tools.join(', ')}; TEST_INSTALL=no lists them instead)`);
    // One install per prerequisite: a package the distribution lacks leaves the others installed.
    for (const p of missing) {
      if (p.apt) aptInstall(p.apt);
      if (p.pip) pipInstall(p.pip);
    }
  }
  const still = PREREQUISITES.map((p) => ({ p, wrong: p.check() })).filter((x) => x.wrong !== undefined);
  for (const { p, wrong } of still)
    say(
      `test prerequisite missing: ${p.name} (${wrong}), for ${p.usedBy}; install it with: ${installCommand(p, process.getuid?.() === 0 ? '' : 'sudo ')}`,
    );
  if (still.length === 0) say(`test prerequisites: ${PREREQUISITES.map((p) => p.name).join(', ')} present`);
  return still.map((x) => x.p);
}

/** `--outputFile=F` or `--outputFile F` among the jest arguments, and the arguments without it. */
function splitOutputFile(args: readonly string[]): { outputFile?: string; rest: string[] } {
  const rest: string[] = [];
  let outputFile: string | undefined;
  for (let i = 0; i < args.length; i++) {
    if (args[i].startsWith('--outputFile=')) outputFile = args[i].slice('--outputFile='.length);
    else if (args[i] === '--outputFile') outputFile = args[++i];
    else rest.push(args[i]);
  }
  return { outputFile, rest };
}

interface JestResults {
  success: boolean;
  startTime: number;
  testResults: unknown[];
  [count: string]: unknown;
}

function runJest(part: Part, args: readonly string[], outputFile?: string): { status: number; results?: JestResults } {
  const out = outputFile && `${outputFile}.${part}`;
  if (out) fs.rmSync(out, { force: true });
  const run = spawnSync(process.execPath, [JEST, '--selectProjects', part, ...PART_ARGS[part], ...args, ...(out ? [`--outputFile=${out}`] : [])], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (!out) return { status: run.status ?? 1 };
  let results: JestResults | undefined;
  try {
    results = JSON.parse(fs.readFileSync(out, 'utf8')) as JestResults;
  } catch {
    say(`jest (${part}) wrote no results to ${out}`);
  }
  fs.rmSync(out, { force: true });
  return { status: run.status ?? 1, results };
}

/** One jest results document from the parts': counts added, test files listed one after another. */
function merge(parts: readonly (JestResults | undefined)[], notRun: number): JestResults {
  const merged: JestResults = { success: true, startTime: Infinity, testResults: [] };
  for (const part of parts) {
    if (!part) {
      // A part that wrote nothing counts as a test file that could not run.
      merged.success = false;
      merged.numRuntimeErrorTestSuites = Number(merged.numRuntimeErrorTestSuites ?? 0) + 1;
      continue;
    }
    for (const [key, value] of Object.entries(part)) {
      if (/^num[A-Z]/.test(key) && typeof value === 'number') merged[key] = Number(merged[key] ?? 0) + value;
      else if (!(key in merged)) merged[key] = value;
    }
    merged.success = merged.success && part.success;
    merged.startTime = Math.min(merged.startTime, part.startTime);
    merged.testResults = [...merged.testResults, ...part.testResults];
  }
  if (notRun > 0) {
    // Integration test files not run for a missing prerequisite: test files that could not run.
    merged.success = false;
    merged.numTotalTestSuites = Number(merged.numTotalTestSuites ?? 0) + notRun;
    merged.numRuntimeErrorTestSuites = Number(merged.numRuntimeErrorTestSuites ?? 0) + notRun;
  }
  return merged;
}

function integrationFileCount(): number {
  const listed = spawnSync(process.execPath, [JEST, '--selectProjects', 'integration', '--listTests'], { cwd: ROOT, encoding: 'utf8' });
  return listed.stdout.split('\n').filter((l) => l.endsWith('.test.ts')).length;
}

function main(): number {
  const [mode = 'all', ...jestArgs] = process.argv.slice(2);
  if (!['all', 'unit', 'integration', 'prereqs'].includes(mode)) {
    say(`scripts/test.ts: unknown part \`${mode}\`; use all, unit, integration or prereqs`);
    return 2;
  }
  let status = 0;
  if (mode === 'all' && spawnSync(process.execPath, [TSC, '--noEmit', '-p', ROOT], { cwd: ROOT, stdio: 'inherit' }).status !== 0) {
    say('type check failed (tsc --noEmit, above); the tests run anyway');
    status = 1;
  }
  const missing = mode === 'unit' ? [] : prerequisites();
  if (mode === 'prereqs') return missing.length > 0 ? 1 : 0;
  const { outputFile, rest } = splitOutputFile(jestArgs);
  const parts: Part[] = mode === 'all' ? ['unit', 'integration'] : [mode as Part];
  // `npm test -- test/a.test.ts`: the file is in one part only; the other finding none is no failure.
  const partArgs = mode === 'all' ? ['--passWithNoTests', ...rest] : rest;
  const results: (JestResults | undefined)[] = [];
  let notRun = 0;
  for (const part of parts) {
    if (part === 'integration' && missing.length > 0) {
      say(`integration tests not run: ${missing.length} test prerequisite(s) missing (above)`);
      notRun = outputFile ? integrationFileCount() : 0;
      status = 1;
      continue;
    }
    const run = runJest(part, partArgs, outputFile);
    results.push(run.results);
    if (run.status !== 0) status = run.status;
  }
  if (outputFile) fs.writeFileSync(outputFile, JSON.stringify(merge(results, notRun)));
  return status;
}

process.exit(main());
