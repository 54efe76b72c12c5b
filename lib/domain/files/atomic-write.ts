import * as fs from 'fs';
import * as path from 'path';

/** What a path that is not a regular file is, for the refusal. */
function kindOf(stat: fs.Stats): string {
  if (stat.isDirectory()) return 'a directory';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isFIFO()) return 'a named pipe';
  if (stat.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * Writes a file atomically: a temp file in the same directory, fsync'd, then renamed over the
 * target. A crash or a failed write leaves the previous file whole; the temp file is removed.
 * Only a regular file is written: a path that is a device, a pipe, a socket or a directory is
 * refused (a rename would replace `/dev/full` or `/dev/stdout` with a file, as root), and a symlink
 * to a regular file is written where it points, the link kept.
 */
export function writeFileAtomic(file: string, text: string | Iterable<string>): void {
  let target = path.resolve(file);
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`could not write ${file}: ${(error as Error).message}`);
  }
  if (stat && !stat.isFile()) throw new Error(`could not write ${file}: it is ${kindOf(stat)}; give the path of a regular file`);
  if (stat) target = fs.realpathSync(target);
  const dir = path.dirname(target);
  const temp = path.join(dir, `.${path.basename(target)}.${process.pid}.${Date.now()}.tmp`);
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
    fs.renameSync(temp, target);
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw new Error(`could not write ${file}: ${(error as Error).message}`);
  }
}
