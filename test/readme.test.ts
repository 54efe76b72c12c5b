import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';
import { synthFleet } from '../lib/app';
import { invokedAs, runCli } from '../lib/cli';
import { configDirs, REPO_ROOT } from './support/fleet';

/**
 * The documentation's command examples are what the commands print: every code block of the README
 * or a page of docs/ that starts with `$ node bin/cellctl.js …` (or `$ npx cellctl …`) or `$ npx cdk synth`
 * is run and its output compared line by line (a `…` line stands for any number of lines left out). Regenerate a block by
 * running its command. Every relative link resolves, and the TypeScript examples are the files of
 * docs/examples that the type check compiles.
 */
const PAGES = [
  'README.md',
  ...fs
    .readdirSync(path.join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
const TEXT = new Map(PAGES.map((page) => [page, fs.readFileSync(path.join(REPO_ROOT, page), 'utf8')] as const));

interface Example {
  readonly page: string;
  readonly command: string;
  readonly expected: readonly string[];
}

/** How the docs run cellctl: `node bin/cellctl.js` starts fastest after `npm ci` (docs/cli.md); `npx cellctl` works too. */
const CELLCTL = /^(node bin\/cellctl\.js|npx cellctl) /;
/** `cellctl plan` for `node bin/cellctl.js plan` and `npx cellctl plan`. */
const cellctlCommand = (command: string) => command.replace(CELLCTL, 'cellctl ');

const FENCED = /^```([a-z]*)\n([\s\S]*?)^```$/gm;
const PACKAGE_NAME = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { name: string }).name;

function examples(): Example[] {
  return PAGES.flatMap((page) =>
    [...TEXT.get(page)!.matchAll(FENCED)]
      .map((m) => m[2].replace(/\n$/, '').split('\n'))
      .filter((lines) => /^\$ (node bin\/cellctl\.js |npx cellctl |npx cdk synth)/.test(lines[0]))
      .map((lines) => ({ page, command: lines[0].slice(2), expected: lines.slice(1) })),
  );
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
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
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
    expect(examples().map((e) => cellctlCommand(e.command))).toEqual(
      expect.arrayContaining(['npx cdk synth', 'cellctl plan', 'cellctl accounts bootstrap', 'cellctl accounts bootstrap --run']),
    );
  });

  it.each(
    examples()
      .filter((e) => CELLCTL.test(e.command))
      .map((e) => [e.command, e.page, e] as const),
  )('`%s` prints what %s shows', async (_command, _page, example) => {
    let printed = '';
    const append = (text: string) => {
      printed += text;
    };
    // stdout and stderr in the order they are written, as a terminal shows them.
    // As the page runs it: `node bin/cellctl.js …` prints its hints in that form, `npx cellctl …` as cellctl.
    const io = { out: append, err: append };
    const code = await runCli(
      cellctlCommand(example.command).split(' ').slice(1),
      example.command.startsWith('node bin/cellctl.js') ? invokedAs(io, 'node bin/cellctl.js') : io,
    );
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
    const dir = dirs.config(
      (t) => t.replace("id: 'eu-2', region: 'eu-west-1', cidr: '10.0.32.0/20'", "id: 'eu-2', region: 'eu-west-1', cidr: '10.0.16.0/21'"),
      JSON.stringify(accounts),
    );
    // What bin/app.ts runs, in this process from the config's folder (test/bin/app.test.ts starts bin/app.ts itself).
    let stderr = '';
    process.chdir(dir);
    try {
      expect(
        synthFleet({
          err: (text) => {
            stderr += text;
          },
          app: () => {
            throw new Error('an app made from a config with problems');
          },
        }),
      ).toBe(1);
    } finally {
      process.chdir(REPO_ROOT);
    }
    expect(stderr.replace(/\n$/, '').split('\n')).toEqual(example.expected);
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

  it("the anchor rule is GitHub's", () => {
    expect([...anchors('# A `b` (c, d)\n## A `b` (c, d)\n### Synth: `npm run bench:synth`\n')]).toEqual([
      'a-b-c-d',
      'a-b-c-d-1',
      'synth-npm-run-benchsynth',
    ]);
    expect(relativeLinks('[x](a.md) [y](https://e.com) `[z](no.md)` ![i](b.svg)\n```\n[c](code.md)\n```\n')).toEqual(['a.md', 'b.svg']);
  });
});

/**
 * The TypeScript examples (a `ts` code block with an import) are files of this repository too:
 * docs/examples/<page>-<n>.ts is the n-th example of <page> (README.md or docs/<page>.md), character
 * for character. The type check (`npm run build`, `npm test`, CI: tsconfig.json includes them) compiles
 * them with the rest of the code, as an app in the project root: `./lib/...` resolves from there and
 * `cell-factory` is the package's entry point. This test keeps each page and its files the same.
 */
describe('the TypeScript examples of the README and the docs', () => {
  const EXAMPLES = path.join(REPO_ROOT, 'docs', 'examples');
  const examplesOf = (page: string) => [...TEXT.get(page)!.matchAll(FENCED)].filter((m) => m[1] === 'ts' && /^import /m.test(m[2])).map((m) => m[2]);

  it('there are examples that use the constructs', () => {
    expect(examplesOf('README.md').length).toBeGreaterThanOrEqual(2);
    expect(examplesOf('README.md').join('\n')).toMatch(/new CellStack\(/);
    expect(examplesOf('docs/constructs.md').join('\n')).toMatch(/new Cell\(/);
  });

  it('each is a file of docs/examples, which the type check compiles', () => {
    // On a difference: copy the page's block into its file (or the file into the page), then `npm run build`.
    const inPages = Object.fromEntries(
      PAGES.flatMap((page) => examplesOf(page).map((text, i) => [`${path.basename(page, '.md')}-${i + 1}.ts`, text] as const)),
    );
    const files = Object.fromEntries(
      fs
        .readdirSync(EXAMPLES)
        .filter((f) => f.endsWith('.ts'))
        .map((f) => [f, fs.readFileSync(path.join(EXAMPLES, f), 'utf8')] as const),
    );
    expect(files).toEqual(inPages);
    const config = ts.parseJsonConfigFileContent(ts.readConfigFile(path.join(REPO_ROOT, 'tsconfig.json'), ts.sys.readFile).config, ts.sys, REPO_ROOT);
    expect(
      Object.keys(files)
        .map((f) => path.join(EXAMPLES, f))
        .filter((f) => !config.fileNames.includes(f)),
    ).toEqual([]);
    // docs/package.md's app imports the package by its name.
    expect(config.options.paths?.[PACKAGE_NAME]).toEqual(['./lib/index.ts']);
  });
});
