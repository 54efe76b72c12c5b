import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { REPO_ROOT } from './fleet';

/**
 * The suite's jest runtime (test/support/runtime.js, docs/test-runtime.md), run the way the suite runs
 * it: a jest of this repository's version over a project of two test files in one worker, so the
 * second file is compiled with the code cache the first one left. The runtime must still find the
 * jest internals it wraps (else it falls back to jest's own, slower, and says so), and a module whose
 * source changed between the two files must run as changed, even when the new source has the same
 * length as the old (V8 checks little more than the length before using a code cache).
 */
describe("the suite's jest runtime", () => {
  let project: string;
  let result: ReturnType<typeof spawnSync>;

  beforeAll(() => {
    project = fs.mkdtempSync(path.join(os.tmpdir(), 'jest-runtime-'));
    const write = (name: string, text: string) => fs.writeFileSync(path.join(project, name), text);
    write('answer.js', "module.exports = 'first';\n");
    // The first file runs first (the sequencer below), then rewrites the module it loaded: same length.
    write(
      'a.test.js',
      [
        "const fs = require('fs');",
        "test('loads the module', () => {",
        "  expect(require('./answer')).toBe('first');",
        "  fs.writeFileSync(require.resolve('./answer'), \"module.exports = 'other';\\n\");",
        '});',
        '',
      ].join('\n'),
    );
    write('b.test.js', "test('loads the module as it is now', () => { expect(require('./answer')).toBe('other'); });\n");
    write(
      'sequencer.js',
      [
        "const Sequencer = require('@jest/test-sequencer').default;",
        'module.exports = class extends Sequencer {',
        '  sort(tests) { return [...tests].sort((x, y) => x.path.localeCompare(y.path)); }',
        '};',
        '',
      ].join('\n'),
    );
    write(
      'jest.config.js',
      `module.exports = ${JSON.stringify({
        rootDir: project,
        testEnvironment: 'node',
        transform: {},
        cache: false,
        runtime: path.join(REPO_ROOT, 'test', 'support', 'runtime.js'),
        testSequencer: path.join(project, 'sequencer.js'),
      })};\n`,
    );
    result = spawnSync(
      process.execPath,
      [require.resolve('jest/bin/jest', { paths: [REPO_ROOT] }), '--runInBand', '--ci', '--config', 'jest.config.js'],
      {
        cwd: project,
        encoding: 'utf8',
        env: { ...process.env, NODE_PATH: path.join(REPO_ROOT, 'node_modules') },
      },
    );
  });
  afterAll(() => fs.rmSync(project, { recursive: true, force: true }));

  it("still finds the jest internals it wraps (this repository's jest)", () => {
    expect(result.stderr).not.toContain('running without the shared code cache');
    expect(result.stderr).toContain('a.test.js');
  });

  it('runs a module whose source changed between two test files as changed, even at the same length', () => {
    expect({ status: result.status, stderr: result.stderr }).toEqual({
      status: 0,
      stderr: expect.stringContaining('Tests:       2 passed, 2 total'),
    });
  });
});
