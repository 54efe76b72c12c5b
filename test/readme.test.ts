import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { runCli } from '../lib/cli';
import { configDirs, REPO_ROOT } from './support/fleet';

/**
 * The README's command examples are what the commands print today: every code block that starts
 * with `$ npx cellctl …` or `$ npx cdk synth` is run and its output compared line by line (a `…`
 * line stands for any number of lines left out). Regenerate a block by running its command.
 */
const README = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');

interface Example { readonly command: string; readonly expected: readonly string[] }

function examples(): Example[] {
  const blocks = [...README.matchAll(/^```[a-z]*\n([\s\S]*?)^```$/gm)].map((m) => m[1].replace(/\n$/, '').split('\n'));
  return blocks.filter((lines) => /^\$ npx (cellctl|cdk synth)/.test(lines[0])).map((lines) => ({ command: lines[0].slice(2), expected: lines.slice(1) }));
}

/** Whether `actual` matches `expected`, where a `…` line in `expected` matches any run of lines. */
function matches(expected: readonly string[], actual: readonly string[]): boolean {
  if (expected.length === 0) return actual.length === 0;
  if (expected[0] === '…') return actual.some((_, i) => matches(expected.slice(1), actual.slice(i))) || matches(expected.slice(1), []);
  return actual.length > 0 && expected[0] === actual[0] && matches(expected.slice(1), actual.slice(1));
}

describe('the README examples', () => {
  const dirs = configDirs();
  const cwd = process.cwd();
  beforeAll(() => process.chdir(REPO_ROOT));
  afterAll(() => process.chdir(cwd));

  it('covers the plan, bootstrap and validation examples', () => {
    expect(examples().map((e) => e.command)).toEqual(expect.arrayContaining([
      'npx cdk synth', 'npx cellctl plan', 'npx cellctl accounts bootstrap', 'npx cellctl accounts bootstrap --run',
    ]));
  });

  it.each(examples().filter((e) => e.command.startsWith('npx cellctl')).map((e) => [e.command, e] as const))('`%s` prints what the README shows', async (_command, example) => {
    let printed = '';
    const append = (text: string) => { printed += text; };
    // stdout and stderr in the order they are written, as a terminal shows them.
    const code = await runCli(example.command.split(' ').slice(2), { out: append, err: append });
    const actual = printed.replace(/\n$/, '').split('\n');
    expect(code === 0).toBe(!actual.some((l) => l.startsWith('error:')));
    if (!matches(example.expected, actual)) expect(actual.join('\n')).toBe(example.expected.join('\n'));
  });

  it('`npx cdk synth` on the README\'s broken config prints the README\'s problems', () => {
    const example = examples().find((e) => e.command === 'npx cdk synth')!;
    const accounts = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'cells.accounts.json'), 'utf8'));
    delete accounts.cells['eu-3'];
    const dir = dirs.config((t) => t.replace("id: 'eu-2', region: 'eu-west-1', cidr: '10.0.32.0/20'", "id: 'eu-2', region: 'eu-west-1', cidr: '10.0.16.0/21'"), JSON.stringify(accounts));
    const result = spawnSync(process.execPath, ['--require', require.resolve('tsx/cjs'), path.join(REPO_ROOT, 'bin', 'app.ts')], { cwd: dir, encoding: 'utf8' });
    expect(result.status).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.replace(/\n$/, '').split('\n')).toEqual(example.expected);
  });
});
