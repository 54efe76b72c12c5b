import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { packageRoot, packageVersion } from '../../../lib/domain/files';
import { REPO_ROOT } from '../../support/fleet';

describe('packageRoot / packageVersion', () => {
  it('finds the nearest folder up holding package.json, from the sources and from dist alike', () => {
    expect(packageRoot(path.join(REPO_ROOT, 'lib', 'cli'))).toBe(REPO_ROOT);
    expect(packageRoot(path.join(REPO_ROOT, 'dist', 'lib', 'cli'))).toBe(REPO_ROOT);
    expect(packageVersion(__dirname)).toBe(JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')).version);
  });

  it('says which package.json has no version', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'package-root-'));
    try {
      fs.writeFileSync(path.join(dir, 'package.json'), '{"name": "x"}');
      fs.mkdirSync(path.join(dir, 'a', 'b'), { recursive: true });
      expect(packageRoot(path.join(dir, 'a', 'b'))).toBe(dir);
      expect(() => packageVersion(path.join(dir, 'a'))).toThrow(`${path.join(dir, 'package.json')} has no "version"`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
