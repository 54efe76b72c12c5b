import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { BUNDLING_STACKS } from 'aws-cdk-lib/cx-api';
import { cdkJsonContext } from '../../lib/app';
import { configDir, configDirs, REPO_ROOT } from '../support/fleet';

/**
 * The CDK app's entry point as `npx cdk synth` runs it (`tsx bin/app.ts`, cdk.json), in a folder
 * holding the config: a bad config is a list of problems and exit 1, never a stack trace, and
 * nothing is synthesized from a config with a typo.
 */
function synth(cwd: string): { status: number | null; stderr: string; stdout: string } {
  const outdir = path.join(cwd, 'cdk.out');
  const result = spawnSync(process.execPath, ['--require', require.resolve('tsx/cjs'), path.join(REPO_ROOT, 'bin', 'app.ts')], {
    cwd, encoding: 'utf8', env: { ...process.env, CDK_OUTDIR: outdir, CELLS_CONFIG: undefined },
  });
  return { status: result.status, stderr: result.stderr, stdout: result.stdout };
}

describe('synth with a bad config', () => {
  const { config: dir, empty } = configDirs();

  it('a typo: the problems with a did-you-mean, and no cell stacks synthesized instead of the pipeline', () => {
    const d = dir((t) => t.replace('  pipeline: {', '  pipline: {'));
    const result = synth(d);
    expect(result.status).toBe(1);
    expect(result.stderr).toBe('cells.config.ts has 1 problem(s):\n  - unknown key `pipline`; did you mean `pipeline`?\n');
    expect(fs.existsSync(path.join(d, 'cdk.out', 'manifest.json'))).toBe(false);
  });

  it('a syntax error: file:line:col and the message', () => {
    const d = dir((t) => t.replace("app: 'orders',", "app: 'orders',,"));
    const result = synth(d);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^cells\.config\.ts:\d+:17: Expected identifier but found ","\n$/);
  });

  it('a wrong type and a missing field: what is wrong, once each', () => {
    const d = dir((t) => t.replace('cpu: 1024,', "cpu: '1024' as unknown as number,").replace("{ id: 'eu-3', region: 'eu-west-1',", "{ id: 'eu-3',"));
    const result = synth(d);
    expect(result.status).toBe(1);
    expect(result.stderr).toBe([
      'cells.config.ts has 2 problem(s):',
      "  - shape `standard`: cpu must be a number, got the string '1024' (write 1024 without quotes)",
      '  - cell `eu-3`: missing `region`',
      '',
    ].join('\n'));
  });

  it('a truncated cells.accounts.json: one line naming it', () => {
    const shipped = fs.readFileSync(path.join(REPO_ROOT, 'cells.accounts.json'), 'utf8');
    const result = synth(dir(undefined, shipped.slice(0, 120)));
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^cells\.accounts\.json: not valid JSON \(.*\); fix it or delete it and run `cellctl accounts ensure`\n$/);
  });

  it('no cells.config.ts: one line', () => {
    const result = synth(empty('synth-empty-'));
    expect(result.status).toBe(1);
    expect(result.stderr).toBe('cells.config.ts: not found; run from the project root (where cells.config.ts is), or name the file with --config (cellctl) or CELLS_CONFIG (cdk synth)\n');
  });
});

describe('synth of a good config', () => {
  it('ends with the audit summary: open and acknowledged findings per gating pack', () => {
    const d = configDir();
    try {
      // Two cells and no pipeline keep this synth short.
      fs.writeFileSync(path.join(d, 'small.config.ts'), [
        `import example from ${JSON.stringify(path.join(d, 'cells.config.ts'))};`,
        "export default { ...example, pipeline: undefined, cells: example.cells.filter((c) => ['canary-eu', 'eu-1'].includes(c.id)) };",
      ].join('\n'));
      const result = spawnSync(process.execPath, ['--require', require.resolve('tsx/cjs'), path.join(REPO_ROOT, 'bin', 'app.ts')], {
        // The feature flags of cdk.json, as `cdk synth` passes them.
        // aws-cdk-lib's built-in CloudFormation validation off (CDK_VALIDATION, as `cdk synth --no-validation`):
        // its warnings are not the audit summary this checks, and it takes most of the synthesis.
        // No Lambda handler bundled (`aws:cdk:bundling-stacks` empty, as cdkApp() in test/support
        // does): the audit summary comes from the templates, not the bundles.
        cwd: d, encoding: 'utf8', env: { ...process.env, CDK_OUTDIR: path.join(d, 'cdk.out'), CELLS_CONFIG: path.join(d, 'small.config.ts'), CDK_CONTEXT_JSON: JSON.stringify({ ...cdkJsonContext(), [BUNDLING_STACKS]: [] }), CDK_VALIDATION: 'false' },
      });
      expect([result.status, result.stderr]).toEqual([0, expect.any(String)]);
      const summary = /^audit: AwsSolutions 0 open, (\d+) acknowledged; CellIsolation 0 open, (\d+) acknowledged \(npm run audit: per rule, with NIST 800-53 rev 5\)$/m.exec(result.stderr);
      expect(summary).not.toBeNull();
      // Each cell acknowledges at least S1 (its access-log bucket) and IAM4 (RDS monitoring role).
      expect(Number(summary![1])).toBeGreaterThanOrEqual(4);
      expect(fs.existsSync(path.join(d, 'cdk.out', 'manifest.json'))).toBe(true);
    } finally {
      fs.rmSync(d, { recursive: true, force: true });
    }
  }, 180_000);
});
