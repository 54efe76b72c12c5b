import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { REPO_ROOT } from './fleet';
import { distributionIds, installCommand, prerequisitesFor } from './prerequisites';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'os-release-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let files = 0;
const osRelease = (text: string) => {
  const file = path.join(dir, `os-release-${++files}`);
  fs.writeFileSync(file, text);
  return file;
};
const chromium = (ids: readonly string[]) => prerequisitesFor(ids).find((p) => p.name === 'chromium')!;

describe('test prerequisites per distribution', () => {
  test('reads ID and ID_LIKE from os-release, quoted or not', () => {
    expect(distributionIds(osRelease('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n'))).toEqual(
      ['debian'],
    );
    expect(distributionIds(osRelease('NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n'))).toEqual(['ubuntu', 'debian']);
    expect(distributionIds(osRelease('ID="linuxmint"\nID_LIKE="ubuntu debian"\n'))).toEqual(['linuxmint', 'ubuntu', 'debian']);
    expect(distributionIds(path.join(dir, 'missing'))).toEqual([]);
  });

  test('Debian installs chromium with apt-get', () => {
    expect(chromium(['debian']).apt).toEqual(['chromium']);
    expect(installCommand(chromium(['debian']), 'sudo ')).toBe('sudo apt-get install -y chromium');
  });

  test('Ubuntu is not offered the snap wrapper deb: the hint names the snap', () => {
    const p = chromium(['ubuntu', 'debian']);
    expect(p.apt).toBeUndefined();
    expect(installCommand(p, 'sudo ')).toMatch(/^sudo snap install chromium \(/);
    // Every other prerequisite is installed the same way on both.
    const others = (ids: string[]) =>
      prerequisitesFor(ids)
        .filter((q) => q.name !== 'chromium')
        .map((q) => installCommand(q, ''));
    expect(others(['ubuntu', 'debian'])).toEqual(others(['debian']));
  });

  test('a chromium on PATH that does not run (the wrapper of a snap without snapd) is missing, with its own words', () => {
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin, { recursive: true });
    fs.writeFileSync(
      path.join(bin, 'chromium'),
      '#!/bin/sh\necho "Command \'/usr/bin/chromium-browser\' requires the chromium snap to be installed." >&2\nexit 1\n',
      { mode: 0o755 },
    );
    const saved = process.env.PATH;
    process.env.PATH = `${bin}:${saved}`;
    try {
      expect(chromium(['ubuntu', 'debian']).check()).toBe(
        "`chromium --version` failed (exit 1): Command '/usr/bin/chromium-browser' requires the chromium snap to be installed.",
      );
      fs.writeFileSync(path.join(bin, 'chromium'), '#!/bin/sh\necho "Chromium 143.0.7499.169 built on Debian GNU/Linux 12 (bookworm)"\n', {
        mode: 0o755,
      });
      expect(chromium(['debian']).check()).toBeUndefined();
    } finally {
      process.env.PATH = saved;
    }
  });
});

describe('the prerequisites check as root (`npm run test:prereqs`)', () => {
  /** Runs the check with only a fake apt-get (which records its calls), a failing python3, sh and node on PATH: every prerequisite is missing. */
  function check(env: Record<string, string>) {
    const bin = fs.mkdtempSync(path.join(dir, 'bin-'));
    const calls = path.join(bin, 'apt-get.calls');
    fs.writeFileSync(path.join(bin, 'apt-get'), `#!/bin/sh\necho "$@" >> ${calls}\n`, { mode: 0o755 });
    fs.symlinkSync('/bin/sh', path.join(bin, 'sh'));
    // A python3 that fails: pip is then not tried against a package index (none is reachable here).
    fs.writeFileSync(path.join(bin, 'python3'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    const result = spawnSync(
      process.execPath,
      [require.resolve('tsx/cli', { paths: [REPO_ROOT] }), path.join(REPO_ROOT, 'scripts', 'test.ts'), 'prereqs'],
      {
        encoding: 'utf8',
        env: { ...process.env, PATH: `${bin}:${path.dirname(process.execPath)}`, ...env },
      },
    );
    return { status: result.status, stderr: result.stderr, aptCalls: fs.existsSync(calls) ? fs.readFileSync(calls, 'utf8') : '' };
  }
  const asRoot = process.getuid?.() === 0 ? test : test.skip;

  asRoot('says what it will install, then installs it with apt-get', () => {
    const r = check({});
    expect(r.stderr).toMatch(/^test prerequisites: installing haproxy .*\(as root: apt-get, pip; TEST_INSTALL=no lists them instead\)$/m);
    expect(r.aptCalls).toMatch(/install -y -qq haproxy/);
    expect(r.status).toBe(1); // the fake installed nothing
  });

  asRoot('with TEST_INSTALL=no installs nothing and names each missing program with its install command', () => {
    const r = check({ TEST_INSTALL: 'no' });
    expect(r.aptCalls).toBe('');
    expect(r.stderr).toContain('test prerequisites: not installing anything (TEST_INSTALL=no)');
    expect(r.stderr).toMatch(/^test prerequisite missing: haproxy .*install it with: apt-get install -y haproxy/m);
    expect(r.status).toBe(1);
  });
});
