import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
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
