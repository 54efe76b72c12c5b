import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';

/**
 * Which way the folders of lib/ may depend on each other (docs/design.md, "Code layout"), checked on
 * the imports themselves: the domain imports nothing of CDK, the constructs import the domain, the
 * app wires them. Only imports that load at run time count: `import type` is erased by the compiler.
 */

const LIB = path.join(__dirname, '..', 'lib');

/** Pure domain: no CDK, no AWS SDK, at any depth. */
const PURE = ['domain'];
/** Domain with ports and their AWS adapters (the SDK is allowed, CDK is not). */
const DOMAIN_WITH_ADAPTERS = ['adapters', 'operations'];
/** Code that runs in AWS or in the operator's shell: it must load without CDK. */
const RUNTIME = ['runtime', 'operations', 'cli'];
const CDK = /^(aws-cdk-lib|constructs|cdk-nag|@cdklabs\/)(\/|$)/;
const SDK = /^@aws-sdk\//;

/** The runtime imports of one file: relative ones resolved to files of lib/, packages by name. */
function runtimeImports(file: string): { readonly files: string[]; readonly packages: string[] } {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const specifiers: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly) {
      const bindings = node.importClause?.namedBindings;
      const allTypes = !node.importClause?.name && bindings && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
      if (!allTypes) specifiers.push((node.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly) {
      specifiers.push((node.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteral(node.arguments[0])
      && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
      specifiers.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const files: string[] = [];
  const packages: string[] = [];
  for (const spec of specifiers) {
    if (!spec.startsWith('.')) {
      packages.push(spec);
      continue;
    }
    const base = path.resolve(path.dirname(file), spec);
    const resolved = [`${base}.ts`, path.join(base, 'index.ts')].find((f) => fs.existsSync(f));
    if (resolved && resolved.startsWith(LIB)) files.push(resolved);
  }
  return { files, packages };
}

function libFiles(dir = LIB): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return libFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

const folderOf = (file: string) => path.relative(LIB, file).split(path.sep)[0];
const label = (file: string) => path.relative(path.join(LIB, '..'), file);

describe('import direction', () => {
  const graph = new Map(libFiles().map((f) => [f, runtimeImports(f)]));

  /** The first chain of runtime imports from `file` to a package matching `forbidden` or a file matching `forbiddenFile`, if any. */
  function chainTo(file: string, forbidden: RegExp, forbiddenFile: (f: string) => boolean = () => false): string[] | undefined {
    const seen = new Set<string>([file]);
    const queue: string[][] = [[file]];
    while (queue.length > 0) {
      const chain = queue.shift()!;
      const at = chain[chain.length - 1];
      const { files, packages } = graph.get(at) ?? { files: [], packages: [] };
      const bad = packages.find((p) => forbidden.test(p));
      if (bad) return [...chain.map(label), bad];
      for (const next of files) {
        if (forbiddenFile(next)) return [...chain, next].map(label);
        if (!seen.has(next)) {
          seen.add(next);
          queue.push([...chain, next]);
        }
      }
    }
    return undefined;
  }

  function violations(folders: readonly string[], forbidden: RegExp, forbiddenFile?: (f: string) => boolean): string[] {
    return [...graph.keys()].filter((f) => folders.includes(folderOf(f))).flatMap((f) => {
      const chain = chainTo(f, forbidden, forbiddenFile);
      return chain ? [chain.join(' → ')] : [];
    });
  }

  it('finds the imports it checks (the scan is not vacuous)', () => {
    const stack = graph.get(path.join(LIB, 'constructs', 'router', 'router-stack.ts'))!;
    expect(stack.packages).toEqual(expect.arrayContaining(['aws-cdk-lib', 'constructs']));
    expect(stack.files).toContain(path.join(LIB, 'domain', 'names', 'index.ts'));
    expect(chainTo(path.join(LIB, 'constructs', 'pipeline', 'pipeline-stack.ts'), /^constructs$/)).toBeDefined();
    for (const folder of [...PURE, ...DOMAIN_WITH_ADAPTERS, ...RUNTIME]) expect([...graph.keys()].some((f) => folderOf(f) === folder)).toBe(true);
  });

  it('keeps the domain folders free of aws-cdk-lib, constructs and cdk-nag, at any depth', () => {
    expect(violations([...PURE, ...DOMAIN_WITH_ADAPTERS], CDK)).toEqual([]);
  });

  it('keeps the pure domain free of the AWS SDK as well', () => {
    expect(violations(PURE, SDK)).toEqual([]);
  });

  it('loads the router agent, the workload and the CLI without CDK', () => {
    expect(violations(RUNTIME, CDK)).toEqual([]);
  });

  it('lets nothing in lib/ but lib/app import the app wiring (lib/app/audit is given the app to audit)', () => {
    const app = path.join(LIB, 'app') + path.sep;
    expect(violations([...new Set([...graph.keys()].map(folderOf))].filter((f) => f !== 'app' && !f.endsWith('.ts')), /^$/, (f) => f.startsWith(app))).toEqual([]);
  });
});
