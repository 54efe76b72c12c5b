import * as fs from 'fs';
import * as path from 'path';
import { writeFileAtomic } from '../../domain/files/atomic-write';

/**
 * Where exported rows wait for the importer. Cells never talk to each other: the source's exporter
 * writes here and the target's importer reads from here. Keys are `<moveId>/<delta>/<file>`.
 */
export interface HandoffStore {
  readonly description: string;
  put(key: string, text: string): Promise<void>;
  get(key: string): Promise<string>;
  /** Removes every object under `prefix` (a move's data once it is finished or aborted). */
  remove(prefix: string): Promise<void>;
}

const KEY = /^[a-z0-9][a-z0-9._/-]*$/i;

/** Hand-off keys: `<moveId>/<delta>/<file>`, no `..`, no `=` (the S3 layout relies on it). */
export function checkHandoffKey(key: string): void {
  if (!KEY.test(key) || key.split('/').includes('..')) throw new Error(`hand-off key ${JSON.stringify(key)} is not valid`);
}

/** A directory (the local fleet). Files are written atomically, so a killed exporter leaves none torn. */
export class LocalHandoffStore implements HandoffStore {
  public readonly description: string;

  constructor(private readonly dir: string) {
    this.description = dir;
    fs.mkdirSync(dir, { recursive: true });
  }

  public async put(key: string, text: string): Promise<void> {
    checkHandoffKey(key);
    const file = path.join(this.dir, key);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    writeFileAtomic(file, text);
  }

  public async get(key: string): Promise<string> {
    checkHandoffKey(key);
    try {
      return fs.readFileSync(path.join(this.dir, key), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        throw new Error(`hand-off ${this.dir}: ${key} is missing (removed while the move ran?); run the move again with \`cellctl move resume\``);
      throw error;
    }
  }

  public async remove(prefix: string): Promise<void> {
    checkHandoffKey(prefix);
    fs.rmSync(path.join(this.dir, prefix), { recursive: true, force: true });
  }
}
