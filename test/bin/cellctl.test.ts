import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { initialMapping } from '../../lib/domain/mapping';
import { REPO_ROOT } from '../support/fleet';

/**
 * bin/cellctl.js runs the compiled JavaScript only while every source it was compiled from is
 * unchanged; otherwise the TypeScript itself; installed as a package (no sources), always the
 * compiled. Checked in a copy of the layout whose "compiled" and "source" entry points say which one ran.
 */
describe('bin/cellctl.js', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cellctl-entry-'));
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.mkdirSync(path.join(dir, 'dist', 'bin'), { recursive: true });
    fs.copyFileSync(path.join(REPO_ROOT, 'bin', 'cellctl.js'), path.join(dir, 'bin', 'cellctl.js'));
    fs.symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    fs.writeFileSync(path.join(dir, 'bin', 'cellctl.ts'), "const from: string = 'source';\nprocess.stdout.write(from);\n");
    fs.writeFileSync(path.join(dir, 'dist', 'bin', 'cellctl.js'), "process.stdout.write('compiled');\n");
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const record = () => {
    const file = path.join(dir, 'bin', 'cellctl.ts');
    fs.writeFileSync(path.join(dir, 'dist', 'sources.json'), JSON.stringify({ sources: { 'bin/cellctl.ts': fs.statSync(file).mtimeMs } }));
  };
  const run = (env: NodeJS.ProcessEnv = {}) =>
    spawnSync(process.execPath, [path.join(dir, 'bin', 'cellctl.js')], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, CELLCTL_FROM_SOURCE: '', ...env },
    }).stdout;

  it('runs the compiled code while its sources are as they were built', () => {
    record();
    expect(run()).toBe('compiled');
  });

  it('runs the sources when one changed since the build, or when asked to', () => {
    record();
    expect(run({ CELLCTL_FROM_SOURCE: '1' })).toBe('source');
    const file = path.join(dir, 'bin', 'cellctl.ts');
    const later = new Date(Date.now() + 5_000);
    fs.utimesSync(file, later, later);
    expect(run()).toBe('source');
  });

  it('runs the sources when nothing was built', () => {
    fs.rmSync(path.join(dir, 'dist', 'sources.json'), { force: true });
    expect(run()).toBe('source');
  });

  it('runs the compiled code where there are no sources (the installed package, whose files npm packs with one fixed time)', () => {
    const source = path.join(dir, 'bin', 'cellctl.ts');
    const text = fs.readFileSync(source, 'utf8');
    fs.rmSync(source);
    try {
      expect(run()).toBe('compiled');
    } finally {
      fs.writeFileSync(source, text);
    }
  });
});

/**
 * What makes cellctl slow to start is loading what a command does not use: the AWS SDK alone takes
 * longer than the whole CLI (npm run bench:cli). Commands load it when they run.
 */
describe('cellctl start-up', () => {
  const loaded = (...args: string[]): string[] => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cellctl-modules-'));
    const out = path.join(dir, 'modules.json');
    try {
      const run = spawnSync(
        process.execPath,
        [
          '--require',
          'tsx/cjs',
          '-e',
          `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(Object.keys(require.cache))));` +
            `process.argv = [process.argv[0], 'cellctl', ...${JSON.stringify(args)}]; require('./bin/cellctl.ts');`,
        ],
        { cwd: REPO_ROOT, encoding: 'utf8' },
      );
      expect([run.status, run.stderr]).toEqual([0, '']);
      return JSON.parse(fs.readFileSync(out, 'utf8')) as string[];
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };

  it('--help and mapping where load neither the AWS SDK nor the CDK', () => {
    const mapping = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cellctl-where-')), 'm.json');
    fs.writeFileSync(
      mapping,
      JSON.stringify(
        initialMapping(
          ['cell-a', 'cell-b'].map((id, i) => ({ id, endpoint: `http://127.0.0.1:${9001 + i}`, state: 'active' as const })),
          1024,
          { now: '2026-11-29T16:00:00.000Z' },
        ),
      ),
    );
    for (const args of [['--help'], ['mapping', 'where', 'tenant-1', '--mapping', mapping]]) {
      const heavy = loaded(...args).filter((file) => /node_modules\/(@aws-sdk|@smithy|aws-cdk-lib)\//.test(file));
      expect([args.join(' '), heavy]).toEqual([args.join(' '), []]);
    }
    fs.rmSync(path.dirname(mapping), { recursive: true, force: true });
  });
});
