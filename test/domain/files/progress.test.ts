/**
 * Progress of long work (lib/domain/files/progress.ts): one rewritten line on a terminal, with the
 * count and the time left; nothing in a pipe or with --json. The real terminal case runs the CDK
 * app under a pseudo-terminal (`script`, util-linux), as `npx tsx bin/app.ts` in a shell.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { progressOn } from '../../../lib/domain/files';
import { cliSynthContext } from '../../../lib/app';
import { REPO_ROOT } from '../../support/fleet';

function stream(isTTY: boolean) {
  const written: string[] = [];
  return { isTTY, write: (t: string) => written.push(t), written };
}

it('rewrites one line per step on a terminal, with the count and the time left, and clears it at the end', () => {
  let t = 0;
  const tty = stream(true);
  const p = progressOn(tty, { now: () => t });
  p.step('starting cell-1', { done: 0, total: 4 });
  t = 10_000;
  p.step('starting cell-2', { done: 1, total: 4 });
  t = 20_000;
  p.step('starting cell-3', { done: 2, total: 4 });
  t = 21_000;
  p.finish('started 4 cells');
  expect(tty.written).toEqual([
    '\r\x1b[2K[0 s] starting cell-1 (0/4)',
    '\r\x1b[2K[10 s] starting cell-2 (1/4, about 30 s left)',
    '\r\x1b[2K[20 s] starting cell-3 (2/4, about 20 s left)',
    '\r\x1b[2K',
    'started 4 cells (21 s)\n',
  ]);
});

it('writes nothing in a pipe, with --json (quiet), or with CELLS_PROGRESS=off', () => {
  const pipe = stream(false);
  const quiet = stream(true);
  for (const p of [progressOn(pipe), progressOn(quiet, { quiet: true })]) {
    p.step('synthesizing', { done: 1, total: 2 });
    p.finish('done');
    expect(p.enabled).toBe(false);
  }
  process.env.CELLS_PROGRESS = 'off';
  try {
    expect(progressOn(stream(true)).enabled).toBe(false);
  } finally {
    delete process.env.CELLS_PROGRESS;
  }
  expect([...pipe.written, ...quiet.written]).toEqual([]);
});

describe('the CDK app', () => {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'progress-synth-'));
  afterAll(() => fs.rmSync(outdir, { recursive: true, force: true }));
  const env = { ...process.env, CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify(cliSynthContext()), CELLS_PROGRESS: '' };
  const app = `${path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx')} ${path.join(REPO_ROOT, 'bin', 'app.ts')}`;

  it(
    'shows its steps on a terminal (a pseudo-terminal), and ends with the audit summary',
    () => {
      const r = spawnSync('script', ['-qfec', app, '/dev/null'], { cwd: REPO_ROOT, env, encoding: 'utf8', timeout: 5 * 60_000 });
      expect(r.status).toBe(0);
      expect(r.stdout).toContain('\r\x1b[2K[0 s] loading cells.config.ts');
      expect(r.stdout).toMatch(new RegExp(`\r${String.fromCharCode(27)}\\[2K\\[\\d+ s\\] building 8 cells and 2 router regions`));
      expect(r.stdout).toMatch(
        /built 8 cells and 2 router regions; synthesizing: bundling the functions, the audit gate, the AWS limit checks \(\d+ s\)\r?\n/,
      );
      expect(r.stdout).toMatch(/audit: AwsSolutions 0 open/);
    },
    5 * 60_000,
  );

  it('shows none when its stderr is a pipe (as under `cdk synth` or in CI): the same steps, asked of a pipe', () => {
    const snippet = `const { progressOn } = require('./lib/domain/files'); const p = progressOn(process.stderr); p.step('loading cells.config.ts'); p.finish('done');`;
    const tsx = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const piped = spawnSync(tsx, ['-e', snippet], { cwd: REPO_ROOT, env, encoding: 'utf8' });
    expect(piped.status).toBe(0);
    expect(piped.stderr).toBe('');
    const onTerminal = spawnSync('script', ['-qfec', `${tsx} -e "${snippet.replace(/"/g, '\\"')}"`, '/dev/null'], {
      cwd: REPO_ROOT,
      env,
      encoding: 'utf8',
    });
    expect(onTerminal.stdout).toContain('[0 s] loading cells.config.ts');
  });
});
