import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';
import { runCli } from '../lib/cli';
import { configDirs, REPO_ROOT } from './support/fleet';

/**
 * The documentation's command examples are what the commands print: every code block of the README
 * or a page of docs/ that starts with `$ node bin/cellctl.js …` (or `$ npx cellctl …`) or `$ npx cdk synth`
 * is run and its output compared line by line (a `…` line stands for any number of lines left out). Regenerate a block by
 * running its command. Every relative link resolves, and the README's TypeScript examples compile.
 */
const PAGES = ['README.md', ...fs.readdirSync(path.join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const TEXT = new Map(PAGES.map((page) => [page, fs.readFileSync(path.join(REPO_ROOT, page), 'utf8')] as const));

interface Example { readonly page: string; readonly command: string; readonly expected: readonly string[] }

/** How the docs run cellctl: `node bin/cellctl.js` starts fastest after `npm ci` (docs/cli.md); `npx cellctl` works too. */
const CELLCTL = /^(node bin\/cellctl\.js|npx cellctl) /;
/** `cellctl plan` for `node bin/cellctl.js plan` and `npx cellctl plan`. */
const cellctlCommand = (command: string) => command.replace(CELLCTL, 'cellctl ');

const FENCED = /^```([a-z]*)\n([\s\S]*?)^```$/gm;
const PACKAGE_NAME = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { name: string }).name;

function examples(): Example[] {
  return PAGES.flatMap((page) => [...TEXT.get(page)!.matchAll(FENCED)]
    .map((m) => m[2].replace(/\n$/, '').split('\n'))
    .filter((lines) => /^\$ (node bin\/cellctl\.js |npx cellctl |npx cdk synth)/.test(lines[0]))
    .map((lines) => ({ page, command: lines[0].slice(2), expected: lines.slice(1) })));
}

/** Whether `actual` matches `expected`, where a `…` line in `expected` matches any run of lines. */
function matches(expected: readonly string[], actual: readonly string[]): boolean {
  if (expected.length === 0) return actual.length === 0;
  if (expected[0] === '…') return actual.some((_, i) => matches(expected.slice(1), actual.slice(i))) || matches(expected.slice(1), []);
  return actual.length > 0 && expected[0] === actual[0] && matches(expected.slice(1), actual.slice(1));
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of markdown.replace(FENCED, '').matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = heading.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

/** Every relative link (and image) of a page, outside code: `[text](target)`. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(FENCED, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((target) => !/^[a-z]+:/i.test(target));
}

describe('the documentation examples', () => {
  const dirs = configDirs();
  const cwd = process.cwd();
  beforeAll(() => process.chdir(REPO_ROOT));
  afterAll(() => process.chdir(cwd));

  it('covers the plan, bootstrap and validation examples', () => {
    expect(examples().map((e) => cellctlCommand(e.command))).toEqual(expect.arrayContaining([
      'npx cdk synth', 'cellctl plan', 'cellctl accounts bootstrap', 'cellctl accounts bootstrap --run',
    ]));
  });

  it.each(examples().filter((e) => CELLCTL.test(e.command)).map((e) => [e.command, e.page, e] as const))('`%s` prints what %s shows', async (_command, _page, example) => {
    let printed = '';
    const append = (text: string) => { printed += text; };
    // stdout and stderr in the order they are written, as a terminal shows them.
    const code = await runCli(cellctlCommand(example.command).split(' ').slice(1), { out: append, err: append });
    const actual = printed.replace(/\n$/, '').split('\n');
    expect(code === 0).toBe(!actual.some((l) => l.startsWith('error:')));
    if (!matches(example.expected, actual)) expect(actual.join('\n')).toBe(example.expected.join('\n'));
  });

  it('`npx cdk synth` on the documented broken config prints the documented problems', () => {
    const synthExamples = examples().filter((e) => e.command === 'npx cdk synth');
    expect(synthExamples).toHaveLength(1);
    const [example] = synthExamples;
    const accounts = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'cells.accounts.json'), 'utf8'));
    delete accounts.cells['eu-3'];
    const dir = dirs.config((t) => t.replace("id: 'eu-2', region: 'eu-west-1', cidr: '10.0.32.0/20'", "id: 'eu-2', region: 'eu-west-1', cidr: '10.0.16.0/21'"), JSON.stringify(accounts));
    const result = spawnSync(process.execPath, ['--require', require.resolve('tsx/cjs'), path.join(REPO_ROOT, 'bin', 'app.ts')], { cwd: dir, encoding: 'utf8' });
    expect(result.status).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.replace(/\n$/, '').split('\n')).toEqual(example.expected);
  });
});

describe('the documentation links', () => {
  it.each(PAGES)('every relative link of %s names a file (and a heading) that exists', (page) => {
    const broken = relativeLinks(TEXT.get(page)!).filter((link) => {
      const [file, anchor] = link.split('#');
      const target = file === '' ? path.join(REPO_ROOT, page) : path.resolve(path.dirname(path.join(REPO_ROOT, page)), file);
      if (!fs.existsSync(target)) return true;
      if (anchor === undefined || !target.endsWith('.md')) return false;
      const relative = path.relative(REPO_ROOT, target);
      return !anchors(TEXT.get(relative) ?? fs.readFileSync(target, 'utf8')).has(anchor);
    });
    expect(broken).toEqual([]);
  });

  it('the anchor rule is GitHub\'s', () => {
    expect([...anchors('# A `b` (c, d)\n## A `b` (c, d)\n### Synth: `npm run bench:synth`\n')]).toEqual(['a-b-c-d', 'a-b-c-d-1', 'synth-npm-run-benchsynth']);
    expect(relativeLinks('[x](a.md) [y](https://e.com) `[z](no.md)` ![i](b.svg)\n```\n[c](code.md)\n```\n')).toEqual(['a.md', 'b.svg']);
  });
});

describe('the TypeScript examples of the README and the docs', () => {
  const examplesOf = (page: string) => [...TEXT.get(page)!.matchAll(FENCED)].filter((m) => m[1] === 'ts' && /^import /m.test(m[2])).map((m) => m[2]);
  const blocks = PAGES.flatMap(examplesOf);

  it('there are examples that use the constructs', () => {
    expect(examplesOf('README.md').length).toBeGreaterThanOrEqual(2);
    expect(examplesOf('README.md').join('\n')).toMatch(/new CellStack\(/);
    expect(examplesOf('docs/constructs.md').join('\n')).toMatch(/new Cell\(/);
  });

  it('each compiles against this repository\'s sources', () => {
    const config = ts.parseJsonConfigFileContent(ts.readConfigFile(path.join(REPO_ROOT, 'tsconfig.json'), ts.sys.readFile).config, ts.sys, REPO_ROOT);
    const files = blocks.map((_, i) => path.join(REPO_ROOT, `readme-example-${i}.ts`));
    const host = ts.createCompilerHost(config.options);
    const getSourceFile = host.getSourceFile.bind(host);
    host.getSourceFile = (name, language, ...rest) => {
      const i = files.indexOf(path.resolve(name));
      return i >= 0 ? ts.createSourceFile(name, blocks[i], language) : getSourceFile(name, language, ...rest);
    };
    host.fileExists = ((exists) => (name: string) => files.includes(path.resolve(name)) || exists(name))(host.fileExists.bind(host));
    // The package's name (docs/package.md's app imports from it) is its entry point, lib/index.ts.
    const program = ts.createProgram(files, { ...config.options, noEmit: true, baseUrl: REPO_ROOT, paths: { [PACKAGE_NAME]: ['lib/index.ts'] } }, host);
    const problems = files.flatMap((file) => ts.getPreEmitDiagnostics(program, program.getSourceFile(file)))
      .map((d) => `${path.basename(d.file?.fileName ?? '')}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    expect(problems).toEqual([]);
  });
});
