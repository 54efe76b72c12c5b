import { createHash } from 'crypto';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { writeFileAtomic } from '../../domain/files/atomic-write';
import { REPO_ROOT } from '../../domain/files/repo-root';
import { routerStateFiles } from '../router/task-config';

/** One esbuild bundle of an image context: an entry point of this repository and the file it becomes. */
interface Bundle {
  readonly entry: string;
  readonly out: string;
  readonly external?: readonly string[];
}

/** What goes into an image's build context besides its Dockerfile. */
interface ImageRecipe {
  readonly bundles: readonly Bundle[];
  /** Files copied as they are: repository path → name in the context. Missing optional files are left out. */
  readonly files: readonly { readonly from: string; readonly to: string; readonly optional?: boolean }[];
  /** Files the caller renders (`ImageContextOptions.rendered`), by name in the context: exactly these, no context without them. */
  readonly rendered?: readonly string[];
}

/**
 * The RDS and Aurora certificate authorities (PEM), vendored with its source and date in
 * images/certs/README.md: an image build fetches nothing, so the image a test builds is the image
 * that ships, and a bundle that misses a fleet region's root fails a test, not a connection.
 */
export const RDS_CA_BUNDLE = 'images/certs/rds-ca-bundle.pem';

/**
 * The images this repository builds, each from a context of its own holding its Dockerfile and what
 * the Dockerfile copies: the entry points bundled by esbuild on the build host (one JavaScript file,
 * no node_modules, no npm in the image), and the few data files they need.
 */
const RECIPES = {
  workload: {
    bundles: [{ entry: 'bin/workload.ts', out: 'workload.js', external: ['pg-native'] }],
    files: [{ from: RDS_CA_BUNDLE, to: 'rds-ca-bundle.pem' }],
  },
  mover: {
    bundles: [{ entry: 'bin/mover.ts', out: 'mover.js', external: ['pg-native'] }],
    files: [{ from: RDS_CA_BUNDLE, to: 'rds-ca-bundle.pem' }],
  },
  'router-agent': {
    bundles: [{ entry: 'bin/router-agent.ts', out: 'router-agent.js' }],
    files: [],
  },
  // The HAProxy configuration is rendered at synth from the router's own settings (RouterGroup),
  // with the 503 page and the empty maps: nothing of the fleet file, the cells or this repository's
  // code goes in, so the image changes only when the router's configuration does.
  'router-haproxy': {
    bundles: [],
    files: [],
    rendered: Object.keys(routerStateFiles('')),
  },
} as const satisfies Record<string, ImageRecipe>;

export type ImageName = keyof typeof RECIPES;
export const IMAGE_NAMES = Object.keys(RECIPES) as ImageName[];

/** The Node.js release the bundles target: the runtime images' (images/*\/Dockerfile, `node:<major>-…`). */
export const IMAGE_NODE_TARGET = 'node24';

export function isImageName(name: string): name is ImageName {
  return Object.prototype.hasOwnProperty.call(RECIPES, name);
}

/** The Dockerfile of an image, relative to the repository root. */
export function imageDockerfile(name: ImageName): string {
  return `images/${name}/Dockerfile`;
}

export interface ImageContextOptions {
  /** @default the repository this module belongs to */
  readonly root?: string;
  /** Where contexts are kept between runs. @default `<root>/node_modules/.cache/cell-factory-images` */
  readonly cacheDir?: string;
  /**
   * The files of an image whose recipe renders them (router-haproxy: `routerStateFiles(config)`), by
   * name in the context. @default - none; required by an image that renders files
   */
  readonly rendered?: Readonly<Record<string, string>>;
}

/** Which files a context was made from (`path → [mtimeMs, size]`), and the context made. */
interface ContextRecord {
  readonly recipe: string;
  readonly inputs: Record<string, [number, number]>;
  readonly dir: string;
}

const stamp = (file: string): [number, number] => {
  const s = fs.statSync(file);
  return [s.mtimeMs, s.size];
};

/**
 * The build context of image `name`: a directory holding `Dockerfile` and every file it copies,
 * named by the hash of its content (`<cache>/<name>-<sha256 prefix>`), so a CDK image asset made
 * from it changes exactly when what goes into the image changes. Made again only when one of the
 * files it was made from (each source esbuild read, the Dockerfile, the copied files) changed since
 * the last time; otherwise the kept one is returned. Synth, the image tests and `cellctl fleet local
 * --images` all take their contexts from here: the image tested is the image that ships.
 */
export function imageContext(name: ImageName, options: ImageContextOptions = {}): string {
  const root = options.root ?? REPO_ROOT;
  const cache = options.cacheDir ?? path.join(root, 'node_modules', '.cache', 'cell-factory-images');
  const recipe: ImageRecipe = RECIPES[name];
  const rendered = renderedFiles(name, recipe, options.rendered);
  const esbuild = recipe.bundles.length > 0 ? esbuildBin(root) : '';
  const renderedHash = createHash('sha256').update(JSON.stringify(rendered)).digest('hex');
  const recipeKey = JSON.stringify({ recipe, target: IMAGE_NODE_TARGET, esbuild: esbuild && esbuildVersion(root), rendered: renderedHash });
  const recordFile = path.join(cache, `${name}.json`);
  const kept = readRecord(recordFile);
  if (kept && kept.recipe === recipeKey && fs.existsSync(path.join(kept.dir, 'Dockerfile')) && unchanged(root, kept.inputs)) return kept.dir;

  fs.mkdirSync(cache, { recursive: true });
  const work = fs.mkdtempSync(path.join(cache, `.${name}-`));
  try {
    const inputs: Record<string, [number, number]> = {};
    const dockerfile = imageDockerfile(name);
    fs.copyFileSync(path.join(root, dockerfile), path.join(work, 'Dockerfile'));
    inputs[dockerfile] = stamp(path.join(root, dockerfile));
    for (const bundle of recipe.bundles) {
      const meta = path.join(work, `.${bundle.out}.meta.json`);
      runEsbuild(esbuild, root, [
        entryFile(root, name, bundle.entry), '--bundle', '--platform=node', `--target=${IMAGE_NODE_TARGET}`, '--log-level=error',
        ...(bundle.external ?? []).map((e) => `--external:${e}`),
        `--outfile=${path.join(work, bundle.out)}`, `--metafile=${meta}`,
      ], `${name}: bundling ${bundle.entry}`);
      const read = JSON.parse(fs.readFileSync(meta, 'utf8')) as { inputs: Record<string, unknown> };
      fs.rmSync(meta);
      for (const input of Object.keys(read.inputs)) {
        // esbuild names a few inputs it made itself (`<define:…>`, `(disabled):…`): no file to watch.
        const file = path.join(root, input);
        if (fs.existsSync(file)) inputs[input] = stamp(file);
      }
    }
    for (const f of recipe.files) {
      const from = path.join(root, f.from);
      if (!fs.existsSync(from)) {
        if (f.optional) continue;
        throw new Error(`image ${name}: ${f.from} is missing; it goes into the image (see ${dockerfile})`);
      }
      fs.copyFileSync(from, path.join(work, f.to));
      inputs[f.from] = stamp(from);
    }
    for (const [file, content] of rendered) fs.writeFileSync(path.join(work, file), content);
    const dir = path.join(cache, `${name}-${hashDirectory(work).slice(0, 16)}`);
    if (fs.existsSync(dir)) fs.rmSync(work, { recursive: true, force: true });
    else {
      try {
        fs.renameSync(work, dir);
      } catch (error) {
        // Another process made the same context at the same moment: same name, same content.
        if (!fs.existsSync(dir)) throw error;
        fs.rmSync(work, { recursive: true, force: true });
      }
    }
    writeFileAtomic(recordFile, `${JSON.stringify({ recipe: recipeKey, inputs, dir } satisfies ContextRecord)}\n`);
    return dir;
  } catch (error) {
    fs.rmSync(work, { recursive: true, force: true });
    throw error;
  }
}

/**
 * An image's entry point: its TypeScript source in this repository, or the JavaScript compiled from
 * it (`dist/`, scripts/compile.mjs) in the installed package, which ships no sources.
 */
function entryFile(root: string, name: ImageName, entry: string): string {
  if (fs.existsSync(path.join(root, entry))) return entry;
  const compiled = path.join('dist', entry.replace(/\.ts$/, '.js'));
  if (fs.existsSync(path.join(root, compiled))) return compiled;
  throw new Error(`image ${name}: neither ${entry} nor ${compiled} is in ${root}; run \`npm run compile\``);
}

/** The rendered files of image `name`, in name order: exactly those its recipe names. */
function renderedFiles(name: ImageName, recipe: ImageRecipe, given: Readonly<Record<string, string>> = {}): [string, string][] {
  const wanted = [...(recipe.rendered ?? [])].sort();
  const names = Object.keys(given).sort();
  if (wanted.length === 0 && names.length > 0) throw new Error(`image ${name}: renders no files; got ${names.join(', ')}`);
  const missing = wanted.filter((f) => !names.includes(f));
  if (missing.length > 0) {
    throw new Error(`image ${name}: its context needs the rendered ${missing.join(', ')} (the router's HAProxy configuration: RouterGroup renders it at synth; elsewhere pass routerStateFiles(routerTaskConfig(routing)))`);
  }
  const extra = names.filter((f) => !wanted.includes(f));
  if (extra.length > 0) throw new Error(`image ${name}: ${extra.join(', ')} is not a file its context holds (${wanted.join(', ')})`);
  return names.map((f) => [f, given[f]]);
}

function readRecord(file: string): ContextRecord | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as ContextRecord;
  } catch {
    return undefined;
  }
}

function unchanged(root: string, inputs: Record<string, [number, number]>): boolean {
  return Object.entries(inputs).every(([file, [mtime, size]]) => {
    try {
      const [m, s] = stamp(path.join(root, file));
      return m === mtime && s === size;
    } catch {
      return false;
    }
  });
}

/** sha256 over every file's relative path and content, in name order. */
export function hashDirectory(dir: string): string {
  const hash = createHash('sha256');
  const walk = (sub: string) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const rel = path.join(sub, entry.name);
      if (entry.isDirectory()) walk(rel);
      else hash.update(`${rel}\0`).update(fs.readFileSync(path.join(dir, rel))).update('\0');
    }
  };
  walk('');
  return hash.digest('hex');
}

function esbuildBin(root: string): string {
  try {
    return require.resolve('esbuild/bin/esbuild', { paths: [root] });
  } catch {
    throw new Error('image contexts are bundled with esbuild, which is not installed; run `npm ci`');
  }
}

function esbuildVersion(root: string): string {
  const manifest = require.resolve('esbuild/package.json', { paths: [root] });
  return (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { version: string }).version;
}

/** esbuild's CLI (its JavaScript API refuses to run inside Jest's sandbox; npm installs the native binary as bin/esbuild), its error in one line. */
function runEsbuild(bin: string, cwd: string, args: string[], what: string): string {
  try {
    return execFileSync(bin, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const stderr = String((error as { stderr?: string }).stderr ?? '').trim().split('\n').find((l) => /error/i.test(l)) ?? (error as Error).message;
    throw new Error(`${what} failed: ${stderr.trim()}`);
  }
}
