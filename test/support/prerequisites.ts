import { spawnSync } from 'child_process';
import * as fs from 'fs';
import { postgresBinDir } from '../../lib/operations/local-fleet/postgres';
import { CFN_LINT_VERSION, MIN_HAPROXY } from '../../lib/constructs/pipeline/synth';

/** The moto release the AWS-path tests run against (test/support/moto.ts). */
export const MOTO_VERSION = '5.2.1';

/**
 * A program the integration tests start, how to tell it is there, and how it is installed on Debian
 * and Ubuntu: Debian packages, or a Python package where the distribution has none of the right
 * version. The unit tests need none of them (jest.config.js sorts the files by what they start).
 */
export interface Prerequisite {
  readonly name: string;
  /** Which tests start it. */
  readonly usedBy: string;
  /** Undefined when it is there and usable, else what is wrong ("not found", "2.4 is too old"). */
  check(): string | undefined;
  readonly apt?: readonly string[];
  /** A pip requirement, installed with python3-pip from apt. */
  readonly pip?: string;
  /** The command that installs it where neither apt nor pip can, with a word on why. */
  readonly manual?: string;
}

// `env: process.env` spelled out: under jest, child_process would otherwise see the PATH jest started with.
const onPath = (command: string): boolean =>
  spawnSync('sh', ['-c', 'command -v "$1"', 'sh', command], { stdio: 'ignore', env: process.env }).status === 0;
const allOnPath =
  (...commands: string[]) =>
  (): string | undefined => {
    const missing = commands.filter((c) => !onPath(c));
    if (missing.length === 0) return undefined;
    return missing.length === commands.length && commands.length === 1 ? 'not found on PATH' : `${missing.join(', ')} not found on PATH`;
  };

function haproxyCheck(): string | undefined {
  if (!onPath('haproxy')) return 'not found on PATH';
  const version = /HAProxy version (\d+)\.(\d+)/.exec(spawnSync('haproxy', ['-v'], { encoding: 'utf8' }).stdout ?? '');
  if (!version) return '`haproxy -v` printed no version';
  const [major, minor] = [Number(version[1]), Number(version[2])];
  const old = major < MIN_HAPROXY.major || (major === MIN_HAPROXY.major && minor < MIN_HAPROXY.minor);
  return old ? `${major}.${minor} is older than the ${MIN_HAPROXY.major}.${MIN_HAPROXY.minor} the router needs` : undefined;
}

/**
 * A browser that runs: `chromium --version` succeeds. Ubuntu's `chromium-browser` deb is only a
 * wrapper that asks for the snap, and exits non-zero where snapd does not run (a container).
 */
function chromiumCheck(): string | undefined {
  if (!onPath('chromium')) return 'not found on PATH';
  const run = spawnSync('chromium', ['--version'], { encoding: 'utf8', timeout: 30_000, env: process.env });
  return run.status === 0 && /\d+\.\d+/.test(run.stdout ?? '')
    ? undefined
    : `\`chromium --version\` failed (exit ${run.status}): ${(run.stderr || run.stdout || '').trim().split('\n')[0]}`;
}

/** ID and ID_LIKE of /etc/os-release: ['debian'] on Debian, ['ubuntu', 'debian'] on Ubuntu. */
export function distributionIds(osRelease = '/etc/os-release'): string[] {
  let text = '';
  try {
    text = fs.readFileSync(osRelease, 'utf8');
  } catch {
    return [];
  }
  const field = (name: string) => new RegExp(`^${name}=("?)([^"\n]*)\\1$`, 'm').exec(text)?.[2] ?? '';
  return [field('ID'), ...field('ID_LIKE').split(/\s+/)].filter((id) => id !== '');
}

/**
 * The prerequisites on a distribution (`distributionIds()`). Ubuntu packages Chromium only as a snap
 * (its deb installs a wrapper that needs snapd), so there apt is not tried for it.
 */
export function prerequisitesFor(distribution: readonly string[]): Prerequisite[] {
  const chromiumSnap = distribution.includes('ubuntu');
  return [
    { name: 'haproxy', usedBy: 'the router, CLI and local-fleet tests', check: haproxyCheck, apt: ['haproxy'] },
    { name: 'openssl', usedBy: "the router's TLS-to-cells test and the PostgreSQL TLS tests", check: allOnPath('openssl'), apt: ['openssl'] },
    {
      name: 'postgresql',
      usedBy: 'the workload, local-fleet and move tests (initdb and postgres from /usr/lib/postgresql/<version>/bin)',
      check: () => (postgresBinDir() ? undefined : 'no initdb and postgres under /usr/lib/postgresql/*/bin (or PG_BIN)'),
      apt: ['postgresql'],
    },
    {
      name: 'chromium',
      usedBy: 'the audit report test (a headless browser looks at the HTML report)',
      check: chromiumCheck,
      ...(chromiumSnap
        ? {
            manual:
              'snap install chromium (Ubuntu has Chromium only as a snap, which needs snapd; in a container, put Google Chrome on PATH as chromium instead)',
          }
        : { apt: ['chromium'] }),
    },
    {
      name: 'buildah, podman, runc, debootstrap',
      usedBy: 'the image tests (docs/images.md)',
      check: allOnPath('buildah', 'podman', 'runc', 'debootstrap'),
      apt: ['buildah', 'podman', 'runc', 'debootstrap'],
    },
    {
      name: 'moto_server',
      usedBy: 'the AWS-path tests (an AWS emulator written apart from this project)',
      check: allOnPath('moto_server'),
      pip: `moto[server]==${MOTO_VERSION}`,
    },
    { name: 'cfn-lint', usedBy: 'the cfn-lint, audit and scale tests', check: allOnPath('cfn-lint'), pip: `cfn-lint==${CFN_LINT_VERSION}` },
  ];
}

export const PREREQUISITES: readonly Prerequisite[] = prerequisitesFor(distributionIds());

/** The exact commands that install `p` on Debian or Ubuntu, each after `asRoot` (`sudo ` or nothing). */
export function installCommand(p: Prerequisite, asRoot: string): string {
  const apt = (packages: readonly string[]) => `${asRoot}apt-get install -y ${packages.join(' ')}`;
  if (p.apt) return apt(p.apt);
  if (p.manual) return `${asRoot}${p.manual}`;
  return `${apt(['python3-pip'])} && ${asRoot}python3 -m pip install --break-system-packages '${p.pip}'`;
}
