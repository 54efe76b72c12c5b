import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { synthFleet } from '../../lib/app';
import { cdkApp, configDir, configDirs, REPO_ROOT } from '../support/fleet';

/**
 * The CDK app as `npx cdk synth` runs it (cdk.json: `tsx bin/app.ts`, in the project folder): a bad
 * config is a list of problems and exit 1, never a stack trace, and nothing is synthesized from a
 * config with a typo. bin/app.ts hands its work to lib/app's synthFleet, run here in this process
 * from the config's folder; one process of bin/app.ts itself checks what only a process shows.
 */
interface Synth {
  readonly status: number;
  readonly stderr: string;
  readonly app?: App;
}

/** synthFleet from the folder `cwd`, as `npx cdk synth` there; `app` is the app it made, if it made one. */
function synth(cwd: string, config?: string): Synth {
  const before = process.cwd();
  process.chdir(cwd);
  let stderr = '';
  let app: App | undefined;
  try {
    const status = synthFleet({
      config,
      err: (text) => {
        stderr += text;
      },
      app: () => (app = cdkApp()),
    });
    return { status, stderr, app };
  } finally {
    process.chdir(before);
  }
}

describe('synth with a bad config', () => {
  const { config: dir, empty } = configDirs();

  it('the entry point in a process of its own, the config named by CELLS_CONFIG: exit 1, the problems on stderr, nothing on stdout, no cloud assembly', () => {
    const d = dir();
    fs.writeFileSync(
      path.join(d, 'typo.config.ts'),
      fs.readFileSync(path.join(d, 'cells.config.ts'), 'utf8').replace('  pipeline: {', '  pipline: {'),
    );
    const outdir = path.join(d, 'cdk.out');
    const result = spawnSync(process.execPath, ['--require', require.resolve('tsx/cjs'), path.join(REPO_ROOT, 'bin', 'app.ts')], {
      cwd: d,
      encoding: 'utf8',
      env: { ...process.env, CDK_OUTDIR: outdir, CELLS_CONFIG: 'typo.config.ts' },
    });
    expect({ status: result.status, stdout: result.stdout, stderr: result.stderr }).toEqual({
      status: 1,
      stdout: '',
      stderr: 'typo.config.ts has 1 problem(s):\n  - unknown key `pipline`; did you mean `pipeline`?\n',
    });
    expect(fs.existsSync(outdir)).toBe(false);
  });

  it('a typo: the problems with a did-you-mean, and no cell stacks synthesized instead of the pipeline', () => {
    const result = synth(dir((t) => t.replace('  pipeline: {', '  pipline: {')));
    expect(result).toEqual({
      status: 1,
      stderr: 'cells.config.ts has 1 problem(s):\n  - unknown key `pipline`; did you mean `pipeline`?\n',
      app: undefined,
    });
  });

  it('a syntax error: file:line:col and the message', () => {
    const result = synth(dir((t) => t.replace("app: 'orders',", "app: 'orders',,")));
    expect([result.status, result.app]).toEqual([1, undefined]);
    expect(result.stderr).toMatch(/^cells\.config\.ts:\d+:17: Expected identifier but found ","\n$/);
  });

  it('a wrong type and a missing field: what is wrong, once each', () => {
    const d = dir((t) => t.replace('cpu: 1024,', "cpu: '1024' as unknown as number,").replace("{ id: 'eu-3', region: 'eu-west-1',", "{ id: 'eu-3',"));
    const result = synth(d);
    expect([result.status, result.app]).toEqual([1, undefined]);
    expect(result.stderr).toBe(
      [
        'cells.config.ts has 2 problem(s):',
        "  - shape `standard`: cpu must be a number, got the string '1024' (write 1024 without quotes)",
        '  - cell `eu-3`: missing `region`',
        '',
      ].join('\n'),
    );
  });

  it('a truncated cells.accounts.json: one line naming it', () => {
    const shipped = fs.readFileSync(path.join(REPO_ROOT, 'cells.accounts.json'), 'utf8');
    const result = synth(dir(undefined, shipped.slice(0, 120)));
    expect([result.status, result.app]).toEqual([1, undefined]);
    expect(result.stderr).toMatch(/^cells\.accounts\.json: not valid JSON \(.*\); fix it or delete it and run `cellctl accounts ensure`\n$/);
  });

  it('no cells.config.ts: one line', () => {
    const result = synth(empty('synth-empty-'));
    expect(result).toEqual({
      status: 1,
      app: undefined,
      stderr:
        'cells.config.ts: not found; run from the project root (where cells.config.ts is), or name the file with --config (cellctl) or CELLS_CONFIG (cdk synth)\n',
    });
  });
});

describe('synth of a good config', () => {
  it('ends with the audit summary: open and acknowledged findings per gating pack', () => {
    const d = configDir();
    try {
      // Two cells and no pipeline keep this synth short.
      fs.writeFileSync(
        path.join(d, 'small.config.ts'),
        [
          `import example from ${JSON.stringify(path.join(d, 'cells.config.ts'))};`,
          "export default { ...example, pipeline: undefined, cells: example.cells.filter((c) => ['canary-eu', 'eu-1'].includes(c.id)) };",
        ].join('\n'),
      );
      // The app as cdkApp() makes it: cdk.json's feature flags, no Lambda handler bundled and without
      // aws-cdk-lib's built-in CloudFormation validation (the audit summary comes from the templates).
      const result = synth(d, 'small.config.ts');
      expect([result.status, result.stderr]).toEqual([0, expect.any(String)]);
      const lines = result.stderr.trimEnd().split('\n');
      const summary =
        /^audit: AwsSolutions 0 open, (\d+) acknowledged; CellIsolation 0 open, (\d+) acknowledged \(npm run audit: per rule, with NIST 800-53 rev 5\)$/.exec(
          lines.at(-1)!,
        );
      expect([lines.at(-1), summary]).toEqual([lines.at(-1), expect.anything()]);
      // Each cell acknowledges at least S1 (its access-log bucket) and IAM4 (RDS monitoring role).
      expect(Number(summary![1])).toBeGreaterThanOrEqual(4);
      expect(fs.existsSync(path.join(result.app!.outdir, 'manifest.json'))).toBe(true);
      expect(result.app!.node.children.map((c) => c.node.id)).toEqual(expect.arrayContaining(['cell-canary-eu', 'cell-eu-1']));
    } finally {
      fs.rmSync(d, { recursive: true, force: true });
    }
  }, 180_000);
});
