import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { localWorkloadCommand } from '../../../lib/operations/local-fleet/fleet';
import { REPO_ROOT } from '../../support/fleet';

/** What `cellctl fleet local` runs as each cell's workload outside containers, in a checkout and in the installed package. */
describe('the local fleet workload', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'workload-root-'));
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('runs the TypeScript source through tsx in a checkout', () => {
    const args = localWorkloadCommand(REPO_ROOT);
    expect(args[0]).toBe('--require');
    expect(args.at(-1)).toBe(path.join(REPO_ROOT, 'bin', 'workload.ts'));
  });

  it('runs the compiled entry point the package ships when there is no source (an installed package)', () => {
    fs.mkdirSync(path.join(root, 'dist', 'bin'), { recursive: true });
    fs.writeFileSync(path.join(root, 'dist', 'bin', 'workload.js'), '');
    expect(localWorkloadCommand(root)).toEqual([path.join(root, 'dist', 'bin', 'workload.js')]);
    fs.rmSync(path.join(root, 'dist'), { recursive: true });
  });

  it('fails in one line naming both places when neither is there', () => {
    expect(() => localWorkloadCommand(root)).toThrow(
      new RegExp(
        `^the local fleet's workload is missing: neither ${root}/bin/workload\\.ts nor ${root}/dist/bin/workload\\.js exists; in a checkout run`,
      ),
    );
  });
});
