import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { pidRunning, writeFileAtomic } from '../../domain/files';
import { AuditEntry, MoveRecord } from '../../domain/moves/types';

/** The record changed between our read and our write: someone else is driving this move. */
export class MoveConflictError extends Error {
  constructor(public readonly moveId: string) {
    super(`move ${moveId} was changed by another mover since it was read: only one operator may drive a move; run \`cellctl move show ${moveId}\``);
    this.name = 'MoveConflictError';
  }
}

/** A record as stored, with the tag a conditional write must match. */
export interface StoredMove {
  readonly record: MoveRecord;
  readonly tag: string;
}

/**
 * Where moves are kept: one durable record per move, written only conditionally (create only if
 * absent, replace only if unchanged since read), and an append-only audit log per move.
 */
export interface MoveStore {
  readonly description: string;
  create(record: MoveRecord): Promise<StoredMove>;
  read(id: string): Promise<StoredMove | undefined>;
  /** Replaces the record if its tag is still `tag`; throws MoveConflictError otherwise. */
  replace(record: MoveRecord, tag: string): Promise<StoredMove>;
  list(): Promise<MoveRecord[]>;
  appendAudit(id: string, entry: AuditEntry): Promise<void>;
  readAudit(id: string): Promise<AuditEntry[]>;
  /**
   * Runs `body` while holding the store's planning lock, so two operators cannot both admit moves
   * that the limits allow only one of.
   */
  withPlanLock<T>(body: () => Promise<T>): Promise<T>;
}

const MOVE_ID = /^[a-z0-9][a-z0-9-]{2,80}$/;

export function checkMoveId(id: string): void {
  if (!MOVE_ID.test(id))
    throw new Error(`move id ${JSON.stringify(id)} is not valid: ids look like m-20261130-141500-acme (cellctl move list shows them)`);
}

/**
 * A state directory on this machine (`cellctl move --local`): `<dir>/<id>/move.json` written
 * atomically, `<dir>/<id>/audit.jsonl` appended and fsync'd. Conditional writes hold a per-move lock
 * file (created with O_EXCL) across compare-and-rename, so two processes cannot interleave.
 */
export class LocalMoveStore implements MoveStore {
  public readonly description: string;

  constructor(
    private readonly dir: string,
    private readonly staleLockMs = 30_000,
  ) {
    this.description = dir;
    fs.mkdirSync(dir, { recursive: true });
  }

  private file(id: string, name: string): string {
    checkMoveId(id);
    return path.join(this.dir, id, name);
  }

  private async locked<T>(lock: string, body: () => T | Promise<T>): Promise<T> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        // A lock left by a killed process (SIGKILL mid-write) is taken over at once when its pid is
        // gone, else once stale.
        const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
        if (age > this.staleLockMs || !holderAlive(lock)) fs.rmSync(lock, { force: true });
        else if (Date.now() > deadline) throw new Error(`${lock} is held by another process; if none is running, remove it`);
        else await new Promise((r) => setTimeout(r, 20));
      }
    }
    try {
      return await body();
    } finally {
      fs.rmSync(lock, { force: true });
    }
  }

  private static tagOf(text: string): string {
    return createHash('sha256').update(text).digest('hex');
  }

  public async create(record: MoveRecord): Promise<StoredMove> {
    const file = this.file(record.id, 'move.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    return this.locked(`${file}.lock`, () => {
      if (fs.existsSync(file)) throw new MoveConflictError(record.id);
      const text = `${JSON.stringify(record, null, 2)}\n`;
      writeFileAtomic(file, text);
      return { record, tag: LocalMoveStore.tagOf(text) };
    });
  }

  public async read(id: string): Promise<StoredMove | undefined> {
    const file = this.file(id, 'move.json');
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    return { record: JSON.parse(text) as MoveRecord, tag: LocalMoveStore.tagOf(text) };
  }

  public async replace(record: MoveRecord, tag: string): Promise<StoredMove> {
    const file = this.file(record.id, 'move.json');
    return this.locked(`${file}.lock`, () => {
      const current = fs.existsSync(file) ? LocalMoveStore.tagOf(fs.readFileSync(file, 'utf8')) : undefined;
      if (current !== tag) throw new MoveConflictError(record.id);
      const text = `${JSON.stringify(record, null, 2)}\n`;
      writeFileAtomic(file, text);
      return { record, tag: LocalMoveStore.tagOf(text) };
    });
  }

  public async list(): Promise<MoveRecord[]> {
    const records: MoveRecord[] = [];
    for (const id of fs.readdirSync(this.dir).sort()) {
      if (!MOVE_ID.test(id)) continue;
      const stored = await this.read(id);
      if (stored) records.push(stored.record);
    }
    return records;
  }

  public async appendAudit(id: string, entry: AuditEntry): Promise<void> {
    const file = this.file(id, 'audit.jsonl');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const fd = fs.openSync(file, 'a+');
    try {
      // A mover killed mid-append leaves a torn last line: start on a fresh line so the torn one
      // stays alone (skipped when read) and this entry is whole.
      const size = fs.fstatSync(fd).size;
      const last = Buffer.alloc(1);
      const torn = size > 0 && fs.readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a;
      fs.writeSync(fd, `${torn ? '\n' : ''}${JSON.stringify(entry)}\n`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }

  public async readAudit(id: string): Promise<AuditEntry[]> {
    const file = this.file(id, 'audit.jsonl');
    if (!fs.existsSync(file)) return [];
    // A line torn by a crash mid-append is the only one that can fail to parse: it is the last.
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as AuditEntry];
        } catch {
          return [];
        }
      });
  }

  public async withPlanLock<T>(body: () => Promise<T>): Promise<T> {
    return this.locked(path.join(this.dir, '.plan.lock'), body);
  }
}

/** Whether the process named in a lock file still runs (a lock without a readable pid counts as held). */
function holderAlive(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(lock, 'utf8'));
  } catch {
    return true;
  }
  return !Number.isInteger(pid) || pid <= 0 || pidRunning(pid);
}
