import * as fs from 'fs';
import * as path from 'path';

/**
 * Writes a file atomically: a temp file in the same directory, fsync'd, then renamed over the
 * target. A crash or a failed write leaves the previous file whole; the temp file is removed.
 */
export function writeFileAtomic(file: string, text: string | Iterable<string>): void {
  const dir = path.dirname(path.resolve(file));
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  try {
    const fd = fs.openSync(temp, 'wx');
    try {
      // An iterable is written piece by piece: a large file without its whole text in memory.
      if (typeof text === 'string') fs.writeFileSync(fd, text);
      else for (const piece of text) fs.writeSync(fd, piece);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temp, file);
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw new Error(`could not write ${file}: ${(error as Error).message}`);
  }
}
