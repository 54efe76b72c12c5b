/**
 * `cellctl completion bash|zsh`: the script completes commands, subcommands and options from the
 * command tree, checked by running it in bash as the shell's completion would.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { cellctl } from '../support/cli';

let script: string;

beforeAll(async () => {
  const r = await cellctl('completion', 'bash');
  expect(r.code).toBe(0);
  script = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'completion-')), 'cellctl.bash');
  fs.writeFileSync(script, r.out);
});

afterAll(() => fs.rmSync(path.dirname(script), { recursive: true, force: true }));

/** What bash offers after `words` (the last one being typed). */
function complete(...words: string[]): string[] {
  const array = ['cellctl', ...words].map((w) => `'${w}'`).join(' ');
  const r = spawnSync(
    'bash',
    ['-c', `source '${script}'; COMP_WORDS=(${array}); COMP_CWORD=${words.length}; _cellctl; printf '%s\\n' "\${COMPREPLY[@]}"`],
    {
      encoding: 'utf8',
    },
  );
  expect(r.status).toBe(0);
  return r.stdout.split('\n').filter(Boolean);
}

it('completes the commands, their subcommands and their options', () => {
  expect(complete('map')).toEqual(['mapping']);
  expect(complete('')).toEqual(expect.arrayContaining(['mapping', 'move', 'fleet', 'zone', 'cost', 'status', 'target', 'completion']));
  expect(complete('mapping', 'sh')).toEqual(['show']);
  expect(complete('mapping', 'show', '--ma')).toEqual(['--mapping']);
  expect(complete('zone', 'dr')).toEqual(['drain']);
  expect(complete('fleet', 'local', '--cells', '3', '--st')).toEqual(['--state-dir']);
  // An option's value does not change the command path.
  expect(complete('move', '--local', 'li')).toEqual(['list']);
});

it('prints the zsh form through bashcompinit, and refuses another shell', async () => {
  expect((await cellctl('completion', 'zsh')).out).toMatch(/^autoload -U \+X bashcompinit && bashcompinit\n# cellctl completion/);
  expect(await cellctl('completion', 'fish')).toMatchObject({ code: 2, err: 'error: completion fish: give bash or zsh\n' });
});
