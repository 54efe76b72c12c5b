import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { promisify } from 'util';
import { cellctlIn } from '../support/cli';
import { configDir, configDirs, REPO_ROOT } from '../support/fleet';

const run = promisify(execFile);
const BIN = path.join(REPO_ROOT, 'bin', 'cellctl.js');

/**
 * The installed entry point in a process of its own, the way `npx cellctl` runs it: bin/cellctl.js,
 * which runs the compiled CLI (dist, built by `npm ci`) while the sources are unchanged. Three
 * processes, one for each thing only a process shows (the rest runs in this process through runCli,
 * whose return value bin/cellctl.ts makes the exit status):
 * - `mapping where --json`: exit 0, the JSON alone on stdout, nothing on stderr;
 * - a syntax error in cells.config.ts: exit 1, one line on stderr, nothing on stdout, the config
 *   loaded through tsx's loader, which the compiled CLI registers on first use;
 * - no AWS credentials: exit 1 under an environment without them, and the AWS SDK's Node warning
 *   collapsed to one line by bin/cellctl.ts.
 */
async function spawnCellctl(env: NodeJS.ProcessEnv, cwd: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** `cellctl` in this process, in the project root. */
const cellctl = (...args: string[]) => cellctlIn(REPO_ROOT, ...args);

describe('the cellctl executable', () => {
  const dirs = configDirs();
  let mapping: string;
  beforeAll(async () => {
    mapping = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cellctl-bin-')), 'm.json');
    expect((await cellctl('mapping', 'init', '--out', mapping)).code).toBe(0);
  });

  it('prints parseable JSON on stdout and nothing else, and exits 0 (a process)', async () => {
    const result = await spawnCellctl({}, REPO_ROOT, 'mapping', 'where', 'tenant-42', '--mapping', mapping, '--json');
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(JSON.parse(result.stdout)).toMatchObject({ key: 'tenant-42', via: 'bucket' });
  });

  it('a config that does not load: exit 1, one line on stderr, nothing on stdout (a process: the compiled CLI loads cells.config.ts through tsx)', async () => {
    const d = dirs.config((t) => t.replace("app: 'orders',", "app: 'orders',,"));
    const line =
      fs
        .readFileSync(path.join(d, 'cells.config.ts'), 'utf8')
        .split('\n')
        .findIndex((l) => l.includes("'orders',,")) + 1;
    expect(await spawnCellctl({}, d, 'plan')).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: cells.config.ts:${line}:17: Expected identifier but found ","\n`,
    });
  });

  it('exits 0 for --help, 1 for invalid input, 2 for usage errors', async () => {
    expect((await cellctl('--help')).code).toBe(0);
    expect((await cellctl('mapping', 'validate', path.join(REPO_ROOT, 'package.json'))).code).toBe(1);
    expect((await cellctl('mapping', 'where')).code).toBe(2);
    expect((await cellctl()).code).toBe(2);
  });

  it('--version prints the package version and exits 0', async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    for (const flag of ['--version', '-V']) expect(await cellctl(flag)).toEqual({ code: 0, out: `${version}\n`, err: '' });
  });

  it('is declared as the package bin', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    expect(pkg.bin).toEqual({ cellctl: 'bin/cellctl.js' });
  });

  it('exits 2 for a command group without a subcommand, as bare cellctl does', async () => {
    const result = await cellctl('mapping');
    expect(result.code).toBe(2);
    expect(result.err).toContain('Usage: cellctl mapping');
    expect((await cellctl('help', 'mapping')).code).toBe(0);
  });
});

/** No stack trace: no `    at …` frames, no esbuild report. */
const ONE_LIST = /^(?![\s\S]*\n\s+at )(?![\s\S]*Transform failed)/;

describe('cellctl errors are one line, or one list', () => {
  const { config: dir, empty } = configDirs();

  it('a syntax error in cells.config.ts: file:line:col and the message', async () => {
    const d = dir((t) => t.replace("app: 'orders',", "app: 'orders',,"));
    const line =
      fs
        .readFileSync(path.join(d, 'cells.config.ts'), 'utf8')
        .split('\n')
        .findIndex((l) => l.includes("'orders',,")) + 1;
    const result = await cellctlIn(d, 'plan');
    expect(result.code).toBe(1);
    expect(result.err).toBe(`error: cells.config.ts:${line}:17: Expected identifier but found ","\n`);
  });

  it('an exception thrown in cells.config.ts: where it was thrown', async () => {
    const d = dir((t) => t.replace("app: 'orders',", "app: (() => { throw new Error('no app name today'); })(),"));
    const result = await cellctlIn(d, 'plan');
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/^error: cells\.config\.ts:\d+:\d+: no app name today\n$/);
  });

  it('a typo in cells.config.ts: the list, with a did-you-mean', async () => {
    const d = dir((t) => t.replace('  pipeline: {', '  pipline: {').replace('errorRatePercent: 2', 'errorRatePercnt: 0.5'));
    const result = await cellctlIn(d, 'plan');
    expect(result.code).toBe(1);
    expect(result.err).toBe(
      [
        'error: cells.config.ts has 2 problem(s):',
        '  - unknown key `pipline`; did you mean `pipeline`?',
        '  - alarms: unknown key `errorRatePercnt`; did you mean `errorRatePercent`?',
        '',
      ].join('\n'),
    );
  });

  it('a truncated cells.accounts.json: one line naming the file', async () => {
    const shipped = fs.readFileSync(path.join(REPO_ROOT, 'cells.accounts.json'), 'utf8');
    const d = dir(undefined, shipped.slice(0, 200));
    for (const args of [['plan'], ['accounts', 'list']]) {
      const result = await cellctlIn(d, ...args);
      expect(result.code).toBe(1);
      expect(result.err).toMatch(/^error: cells\.accounts\.json: not valid JSON \(.*\); fix it or delete it and run `cellctl accounts ensure`\n$/);
    }
  });

  it('no cells.config.ts: one line saying where to run from', async () => {
    const result = await cellctlIn(empty('cellctl-empty-'), 'plan');
    expect(result.code).toBe(1);
    expect(result.err).toBe(
      'error: cells.config.ts: not found; run from the project root (where cells.config.ts is), or name the file with --config (cellctl) or CELLS_CONFIG (cdk synth)\n',
    );
  });

  it('mapping init --endpoints: malformed JSON, the wrong shape, an unknown cell id or a bad URL are refused, nothing written', async () => {
    const d = dir();
    const write = (name: string, text: string) => {
      fs.writeFileSync(path.join(d, name), text);
      return name;
    };
    const init = (endpoints: string) => cellctlIn(d, 'mapping', 'init', '--out', 'm.json', '--endpoints', endpoints);
    const malformed = await init(write('bad.json', '{"eu-1": "http://a"'));
    expect(malformed.code).toBe(1);
    expect(malformed.err).toMatch(/^error: bad\.json: not valid JSON \(.*\); write an object such as \{"eu-1": "http:\/\/10\.0\.0\.5:8080"\}\n$/);
    const list = await init(write('list.json', '["http://a"]'));
    expect(list.err).toBe('error: list.json: expected a JSON object of cell id → endpoint URL, such as {"eu-1": "http://10.0.0.5:8080"}\n');
    const wrong = await init(write('wrong.json', JSON.stringify({ 'eu-l': 'http://10.0.0.5:8080', 'eu-2': 8080 })));
    expect(wrong.code).toBe(1);
    expect(wrong.err).toBe(
      [
        'error: wrong.json has 2 problem(s); nothing written:',
        '  - `eu-l` is not a cell of the fleet; did you mean `eu-1`?',
        '  - eu-2: 8080 is not an http(s) URL such as http://10.0.0.5:8080',
        '',
      ].join('\n'),
    );
    expect(fs.existsSync(path.join(d, 'm.json'))).toBe(false);
    const good = await init(write('good.json', JSON.stringify({ 'eu-1': 'http://127.0.0.1:9001' })));
    expect(good.code).toBe(0);
    expect(JSON.parse(fs.readFileSync(path.join(d, 'm.json'), 'utf8')).cells['eu-1'].endpoint).toBe('http://127.0.0.1:9001');
  });

  it('none of them prints a stack trace', async () => {
    const d = dir((t) => t.replace("app: 'orders',", "app: 'orders',,"));
    expect((await cellctlIn(d, 'plan')).err).toMatch(ONE_LIST);
  });
});

describe('cellctl and AWS: one line each, with the fix', () => {
  it('no credentials: accounts ensure --dry-run stops at the first cell with one line naming AWS_PROFILE and aws sso login; the SDK Node warning is one line', async () => {
    const d = configDir(undefined, '{"schemaVersion": 1, "cells": {}}');
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'cellctl-home-'));
    try {
      const env = {
        HOME: home,
        AWS_ACCESS_KEY_ID: '',
        AWS_SECRET_ACCESS_KEY: '',
        AWS_SESSION_TOKEN: '',
        AWS_PROFILE: '',
        AWS_REGION: 'us-east-1',
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_CONFIG_FILE: path.join(home, 'none'),
        AWS_SHARED_CREDENTIALS_FILE: path.join(home, 'none'),
        AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '',
        AWS_CONTAINER_CREDENTIALS_FULL_URI: '',
        AWS_WEB_IDENTITY_TOKEN_FILE: '',
      };
      const result = await spawnCellctl(env, d, 'accounts', 'ensure', '--dry-run');
      expect(result.code).toBe(1);
      const lines = result.stderr.trimEnd().split('\n');
      const errors = lines.filter((l) => l.startsWith('error:'));
      expect(errors).toEqual([
        expect.stringMatching(
          /^error: no usable AWS credentials \(no AWS_PROFILE set: .+\); set AWS_PROFILE to a profile of the right account, or run `aws sso login` if its session expired$/,
        ),
      ]);
      expect(result.stderr).not.toContain('NodeVersionSupportWarning');
      expect(lines.filter((l) => !l.startsWith('error:'))).toEqual(
        Number(process.versions.node.split('.')[0]) < 22
          ? [expect.stringMatching(/^note: AWS SDK releases after early January 2027 need Node 22 or newer; this is Node v/)]
          : [],
      );
    } finally {
      fs.rmSync(d, { recursive: true, force: true });
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});
