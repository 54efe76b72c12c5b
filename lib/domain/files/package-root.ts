import * as fs from 'fs';
import * as path from 'path';

/**
 * The nearest folder at or above `from` holding package.json: the repository (or installed package)
 * root, whether the caller runs from its TypeScript source or compiled under dist.
 */
export function packageRoot(from: string): string {
  let dir = from;
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

/** The `version` of the package.json at `packageRoot(from)`. */
export function packageVersion(from: string): string {
  const file = path.join(packageRoot(from), 'package.json');
  const version = (JSON.parse(fs.readFileSync(file, 'utf8')) as { version?: unknown }).version;
  if (typeof version !== 'string') throw new Error(`${file} has no "version"`);
  return version;
}
