import * as path from 'path';
import * as fs from 'fs';
import * as os from 'os';
import { App } from 'aws-cdk-lib';
import { BUNDLING_STACKS } from 'aws-cdk-lib/cx-api';
import { cdkJsonContext } from '../../lib/app/context';
import { Fleet, FleetInput, loadFleet, resolveFleet } from '../../lib/domain/fleet';

export const REPO_ROOT = path.join(__dirname, '..', '..');

/** The shipped example fleet, with the shipped example accounts. */
export function exampleFleet(): Fleet {
  return loadFleet(path.join(REPO_ROOT, 'cells.config.ts'));
}

/**
 * The example fleet cut down to the cells `ids` (by default its canary and one regular cell in each
 * of its two regions): for a test of a router or pipeline detail, which needs both regions, a canary
 * wave and a regular wave, but not eight cell stacks to synthesize.
 */
export function smallExampleFleet(ids: readonly string[] = ['canary-eu', 'eu-1', 'us-1']): Fleet {
  const fleet = exampleFleet();
  const cells = fleet.cells.filter((c) => ids.includes(c.id));
  if (cells.length !== ids.length)
    throw new Error(`smallExampleFleet: the example fleet has no cell ${ids.filter((id) => !cells.some((c) => c.id === id)).join(', ')}`);
  return { ...fleet, cells };
}

/** The example fleet without its own cell resources (`cellResources`): cells as the factory alone builds them. */
export function exampleFleetWithoutExtension(): Fleet {
  const { cellResources: _ignored, ...fleet } = exampleFleet();
  return fleet;
}

/**
 * The example fleet cut to two cells, one per region and one of each shape (`canary-eu`: Fargate and
 * Aurora; `us-4`: EC2 and RDS PostgreSQL), everything else as shipped (its accounts, its own cell
 * resources, the pipeline): for a test of a mechanism every cell and region shares, at a quarter of
 * the example's synthesis. Tests of the example fleet's own waves and grants use `exampleFleet()`.
 */
export function twoCellFleet(): Fleet {
  const example = exampleFleet();
  const input = exampleInput();
  const ids = ['canary-eu', 'us-4'];
  return resolveFleet({
    ...input,
    cells: input.cells.filter((c) => ids.includes(c.id)).map((c) => ({ ...c, account: example.cells.find((e) => e.id === c.id)!.account })),
  });
}

/** The shipped config object itself, for tests that edit it. */
export function exampleInput(): FleetInput {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the fleet file is loaded by its path, at run time
  return (require(path.join(REPO_ROOT, 'cells.config.ts')) as { default: FleetInput }).default;
}

/** A valid standalone input with inline accounts, for tests that break one thing at a time. */
export function validInput(): FleetInput {
  const base = exampleInput();
  return {
    ...base,
    cells: base.cells.map((cell, i) => ({ ...cell, account: String(444444444440 + i) })),
  };
}

export function resolve(input: FleetInput): Fleet {
  return resolveFleet(input);
}

/**
 * An App with the same feature flags as `npx cdk synth`, without slow parts of a synthesis that are
 * not what a test checks (docs/testing.md): aws-cdk-lib's built-in CloudFormation validation (a
 * WebAssembly rules engine, seconds to start and more per template, whose findings cdk.json makes
 * warnings; `npx cdk synth` still runs it), the construct tree file (`tree.json`, for construct tree
 * viewers: every construct walked and every resource's properties resolved once more), and, unless
 * `bundling` is set, esbuild bundling of the Lambda handlers (`aws:cdk:bundling-stacks` empty: the
 * code asset points at the sources). A test of the bundle itself asks for `bundling: true`.
 */
export function cdkApp(o: { readonly bundling?: boolean } = {}): App {
  return new App({
    context: { ...cdkJsonContext(), ...(o.bundling ? {} : { [BUNDLING_STACKS]: [] }) },
    builtinCloudFormationValidation: false,
    treeMetadata: false,
  });
}

/**
 * The shipped `cells.config.ts` with its imports made absolute, to be written into another folder:
 * that folder has no `lib/` beside it and no node_modules to resolve `aws-cdk-lib` from.
 */
export function shippedConfigText(): string {
  return fs
    .readFileSync(path.join(REPO_ROOT, 'cells.config.ts'), 'utf8')
    .replace("from './lib/domain/fleet'", `from ${JSON.stringify(path.join(REPO_ROOT, 'lib', 'domain', 'fleet'))}`)
    .replace(/from '(aws-cdk-lib(?:\/[^']*)?)'/g, (_, module: string) => `from ${JSON.stringify(require.resolve(module, { paths: [REPO_ROOT] }))}`);
}

/**
 * A folder with a copy of the shipped `cells.config.ts` (its imports made absolute, the text passed
 * through `edit`) and `cells.accounts.json` (the shipped one unless `accounts` is given).
 */
export function configDir(edit: (text: string) => string = (t) => t, accounts?: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fleet-config-'));
  const text = shippedConfigText();
  fs.writeFileSync(path.join(dir, 'cells.config.ts'), edit(text));
  fs.writeFileSync(path.join(dir, 'cells.accounts.json'), accounts ?? fs.readFileSync(path.join(REPO_ROOT, 'cells.accounts.json'), 'utf8'));
  return dir;
}

/**
 * Folders for the tests of one `describe` block, all removed after it (call it in the block's body):
 * `config(edit?, accounts?)` is a `configDir`, `empty(prefix)` a folder with no config in it.
 */
export function configDirs(): { config: typeof configDir; empty: (prefix: string) => string } {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
  const kept = (d: string) => {
    dirs.push(d);
    return d;
  };
  return {
    config: (edit, accounts) => kept(configDir(edit, accounts)),
    empty: (prefix) => kept(fs.mkdtempSync(path.join(os.tmpdir(), prefix))),
  };
}
