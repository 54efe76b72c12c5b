import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { admissionProblems, LocalMoveStore, MoveConflictError, MoveRecord, RateLimiter } from '../../../lib/operations/moves';

const record = (id: string, patch: Partial<MoveRecord> = {}): MoveRecord => ({
  id,
  subject: { kind: 'tenant', tenant: id },
  source: 'cell-a',
  target: 'cell-b',
  bucketCount: 1024,
  reason: '',
  actor: 't',
  createdAt: '2026-11-30T00:00:00Z',
  status: 'active',
  completed: 'planned',
  watermark: '0',
  rounds: 0,
  rowsCopied: 0,
  mappingVersions: {},
  updatedAt: '2026-11-30T00:00:00Z',
  ...patch,
});

describe('LocalMoveStore', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'moves-store-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('conditional writes: create only once, replace only from the version read', async () => {
    const store = new LocalMoveStore(dir);
    const created = await store.create(record('m-one'));
    await expect(store.create(record('m-one'))).rejects.toThrow(MoveConflictError);
    const a = await store.read('m-one');
    const b = await store.read('m-one');
    expect(a!.tag).toBe(created.tag);
    await store.replace({ ...a!.record, completed: 'cloned' }, a!.tag);
    // The second operator read the same version: its write is refused, nothing is overwritten.
    await expect(store.replace({ ...b!.record, completed: 'caught-up' }, b!.tag)).rejects.toThrow(/only one operator may drive a move/);
    expect((await store.read('m-one'))!.record.completed).toBe('cloned');
    expect((await store.list()).map((r) => r.id)).toEqual(['m-one']);
    expect(fs.readdirSync(path.join(dir, 'm-one'))).toEqual(['move.json']); // no temp or lock files left
  });

  test('a lock left by a killed process is taken over at once', async () => {
    const store = new LocalMoveStore(dir);
    await store.create(record('m-three'));
    const stored = (await store.read('m-three'))!;
    fs.writeFileSync(path.join(dir, 'm-three', 'move.json.lock'), '999999999'); // no such pid
    await store.replace({ ...stored.record, completed: 'cloned' }, stored.tag);
    expect((await store.read('m-three'))!.record.completed).toBe('cloned');
  });

  test('the audit log only grows, and a torn last line is skipped', async () => {
    const store = new LocalMoveStore(dir);
    await store.appendAudit('m-two', { at: '2026-11-30T00:00:00Z', actor: 'a', event: 'planned' });
    await store.appendAudit('m-two', { at: '2026-11-30T00:00:01Z', actor: 'a', event: 'frozen', detail: { mappingVersion: 3 } });
    fs.appendFileSync(path.join(dir, 'm-two', 'audit.jsonl'), '{"at":"2026');
    expect((await store.readAudit('m-two')).map((e) => e.event)).toEqual(['planned', 'frozen']);
    // The next entry (a resumed mover) starts on its own line and is kept.
    await store.appendAudit('m-two', { at: '2026-11-30T00:00:02Z', actor: 'b', event: 'run' });
    expect((await store.readAudit('m-two')).map((e) => e.event)).toEqual(['planned', 'frozen', 'run']);
  });

  test('ids are checked before any path is built', async () => {
    await expect(new LocalMoveStore(dir).read('../etc')).rejects.toThrow(/move id "..\/etc" is not valid/);
  });
});

describe('limits', () => {
  test('concurrent moves per cell and one move per tenant; retained moves do not count', () => {
    const moves = [
      record('m-a1', { subject: { kind: 'tenant', tenant: 'x' } }),
      record('m-a2', { subject: { kind: 'tenant', tenant: 'y' }, source: 'cell-c', target: 'cell-a' }),
      record('m-a3', { subject: { kind: 'tenant', tenant: 'z' }, status: 'retained' }),
    ];
    const limits = { concurrentMovesPerCell: 2 };
    expect(
      admissionProblems({ subject: { kind: 'tenant', tenant: 'z' }, source: 'cell-d', target: 'cell-e', bucketCount: 1024 }, moves, limits),
    ).toEqual([]);
    expect(
      admissionProblems({ subject: { kind: 'tenant', tenant: 'x' }, source: 'cell-d', target: 'cell-e', bucketCount: 1024 }, moves, limits),
    ).toEqual([expect.stringMatching(/overlaps move m-a1/)]);
    expect(
      admissionProblems({ subject: { kind: 'tenant', tenant: 'w' }, source: 'cell-a', target: 'cell-e', bucketCount: 1024 }, moves, limits),
    ).toEqual([expect.stringMatching(/cell cell-a is already in 2 moves \(m-a1, m-a2\); the limit is 2 per cell/)]);
  });

  test('the copy rate limiter sleeps through the injected clock', async () => {
    let now = 0;
    const sleeps: number[] = [];
    const clock = {
      now: () => new Date(now),
      sleep: async (ms: number) => {
        sleeps.push(ms);
        now += ms;
      },
    };
    const limiter = new RateLimiter(1000, clock);
    await limiter.take(1000);
    expect(sleeps).toEqual([]);
    await limiter.take(500);
    expect(sleeps).toEqual([500]);
    now += 2000;
    await limiter.take(1000);
    expect(sleeps).toEqual([500]);
    expect(() => new RateLimiter(0, clock)).toThrow(/rows per second > 0/);
  });
});
