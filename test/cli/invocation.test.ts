/**
 * The commands cellctl prints are the ones the operator can run: `node bin/cellctl.js …` from a
 * checkout (where `cellctl` is not on PATH), `cellctl …` once installed.
 */
import { spawnSync } from 'child_process';
import * as os from 'os';
import * as path from 'path';
import { invocationName, withInvocation } from '../../lib/cli';
import { REPO_ROOT } from '../support/fleet';

it('names the checkout script relative to the working directory, and cellctl once installed', () => {
  expect(invocationName(path.join(REPO_ROOT, 'bin', 'cellctl.js'), REPO_ROOT)).toBe('node bin/cellctl.js');
  expect(invocationName(path.join(REPO_ROOT, 'bin', 'cellctl.ts'), REPO_ROOT)).toBe('node bin/cellctl.js');
  expect(invocationName(path.join(REPO_ROOT, 'bin', 'cellctl.js'), os.tmpdir())).toBe(`node ${path.join(REPO_ROOT, 'bin', 'cellctl.js')}`);
  expect(invocationName('/app/node_modules/cell-factory/bin/cellctl.js', '/app')).toBe('cellctl');
  expect(invocationName('/usr/local/bin/cellctl', '/app')).toBe('cellctl');
  expect(invocationName(undefined)).toBe('cellctl');
});

it('rewrites the commands a line names, not the word in prose', () => {
  const text = 'run it with `cellctl move plan p.json --local`\n  cellctl mapping publish x\ncellctl: error\nthe cellctl’s table';
  expect(withInvocation(text, 'node bin/cellctl.js')).toBe(
    'run it with `node bin/cellctl.js move plan p.json --local`\n  node bin/cellctl.js mapping publish x\ncellctl: error\nthe cellctl’s table',
  );
  expect(withInvocation(text, 'cellctl')).toBe(text);
  // JSON is data: a --json document or a log line keeps its text.
  const doc = '{\n  "hint": "run `cellctl mapping init`"\n}\n';
  expect(withInvocation(doc, 'node bin/cellctl.js')).toBe(doc);
});

it('prints `node bin/cellctl.js …` when run as node bin/cellctl.js in the checkout', () => {
  const r = spawnSync('node', ['bin/cellctl.js', 'mapping', 'show'], { cwd: REPO_ROOT, encoding: 'utf8' });
  expect(r.status).toBe(2);
  expect(r.stderr).toContain('`node bin/cellctl.js mapping show --mapping FILE`');
  expect(r.stderr).not.toContain('`cellctl mapping show');
});
