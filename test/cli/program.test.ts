import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { promisify } from 'util';
import { REPO_ROOT } from '../support/fleet';

const run = promisify(execFile);
const BIN = path.join(REPO_ROOT, 'bin', 'cellctl.js');

/** Runs the installed entry point the way `npx cellctl` does, in the project root. */
async function cellctl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { cwd: REPO_ROOT });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the cellctl executable', () => {
  let mapping: string;
  beforeAll(async () => {
    mapping = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cellctl-bin-')), 'm.json');
    expect((await cellctl('mapping', 'init', '--out', mapping)).code).toBe(0);
  });

  it('prints parseable JSON on stdout and nothing else', async () => {
    const result = await cellctl('mapping', 'where', 'tenant-42', '--mapping', mapping, '--json');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ key: 'tenant-42', via: 'bucket' });
  });

  it('exits 0 for --help, 1 for invalid input, 2 for usage errors', async () => {
    expect((await cellctl('--help')).code).toBe(0);
    expect((await cellctl('mapping', 'validate', path.join(REPO_ROOT, 'package.json'))).code).toBe(1);
    expect((await cellctl('mapping', 'where')).code).toBe(2);
    expect((await cellctl()).code).toBe(2);
  });

  it('is declared as the package bin', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    expect(pkg.bin).toEqual({ cellctl: 'bin/cellctl.js' });
  });
});
