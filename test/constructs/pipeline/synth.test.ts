import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { requireHaproxyCommand, SYNTH_INSTALL_COMMANDS } from '../../../lib/constructs/pipeline';

/** Runs the synth step's HAProxy check against a fake `haproxy` that prints `version`. */
function check(version: string | undefined) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'synth-haproxy-'));
  try {
    if (version !== undefined) {
      fs.writeFileSync(
        path.join(dir, 'haproxy'),
        `#!/bin/sh\necho "HAProxy version ${version} - https://haproxy.org/"\necho "Status: long-term supported branch"\n`,
        { mode: 0o755 },
      );
    }
    const result = spawnSync('/bin/bash', ['--norc', '--noprofile', '-c', requireHaproxyCommand()], {
      encoding: 'utf8',
      env: { PATH: `${dir}:/usr/bin:/bin` },
    });
    return { status: result.status, out: result.stdout + result.stderr };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('the synth step refuses an HAProxy the router tests cannot run on', () => {
  it.each(['2.4.24-0ubuntu0.22.04.1 2023/10/31', '1.8.19-1+deb10u3 2020/04/01'])('fails on %s (Ubuntu 22.04 ships 2.4)', (version) => {
    const result = check(version);
    expect(result.status).toBe(1);
    expect(result.out).toContain(`the router tests need HAProxy 2.6 or newer; found ${version.split('.').slice(0, 2).join('.')}`);
  });

  it('fails when there is no haproxy at all', () => {
    const result = check(undefined);
    expect(result.status).toBe(1);
    expect(result.out).toContain('found none');
  });

  it.each(['2.6.12-1+deb12u1 2023/12/16', '2.8.5-1ubuntu3 2024/04/05', '2.8.5-1ppa1~jammy 2023/12/15', '3.0.5-1 2024/09/19'])(
    'passes on %s',
    (version) => {
      const result = check(version);
      expect(result.status).toBe(0);
      expect(result.out).toContain(`synth: HAProxy ${version.split('.').slice(0, 2).join('.')}`);
    },
  );
});

describe("the synth step's chromium for the HTML report test", () => {
  const command = SYNTH_INSTALL_COMMANDS.find((c) => c.includes('google-chrome'))!;
  /** Runs the chromium command with `bins` (name → present) on PATH and a writable link dir. */
  function run(bins: string[]) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'synth-chromium-'));
    try {
      const bin = path.join(dir, 'bin');
      const links = path.join(dir, 'links');
      fs.mkdirSync(bin);
      fs.mkdirSync(links);
      for (const name of bins) fs.writeFileSync(path.join(bin, name), `#!/bin/sh\necho ${name}\n`, { mode: 0o755 });
      // Only `ln` from the system: this machine's own chromium must not be found.
      fs.symlinkSync(spawnSync('/bin/sh', ['-c', 'command -v ln'], { encoding: 'utf8' }).stdout.trim(), path.join(bin, 'ln'));
      // The command links into /usr/local/bin; here into a folder of the test's own.
      const result = spawnSync('/bin/bash', ['--norc', '--noprofile', '-c', command.replace('/usr/local/bin/chromium', `${links}/chromium`)], {
        encoding: 'utf8',
        env: { PATH: `${links}:${bin}` },
      });
      const linked = fs.existsSync(path.join(links, 'chromium')) ? fs.realpathSync(path.join(links, 'chromium')) : undefined;
      return { status: result.status, out: result.stdout + result.stderr, linked };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  it("points chromium at the image's Google Chrome when there is no chromium", () => {
    const result = run(['google-chrome']);
    expect(result.status).toBe(0);
    expect(result.linked).toMatch(/\/bin\/google-chrome$/);
  });

  it('leaves an installed chromium alone, and carries on without either (.ci/run then tries apt)', () => {
    expect(run(['chromium', 'google-chrome'])).toMatchObject({ status: 0, linked: undefined });
    const none = run([]);
    expect(none).toMatchObject({ status: 0, linked: undefined });
    expect(none.out).toContain('no chromium or google-chrome');
  });
});
