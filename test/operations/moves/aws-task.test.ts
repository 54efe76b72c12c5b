import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { imageContext } from '../../../lib/runtime/images';
import { S3HandoffStore } from '../../../lib/operations/moves/aws-handoff';
import { runMoverTask } from '../../../lib/operations/moves/aws-task';
import { CellData } from '../../../lib/operations/moves/cell-data';
import { LocalS3, localS3Client, startLocalS3 } from '../../support/s3';

describe('the mover task entrypoint (lib/operations/moves/aws-task.ts)', () => {
  let s3: LocalS3;
  beforeAll(async () => {
    s3 = await startLocalS3('moves-task-test');
  });
  afterAll(async () => {
    await s3.stop();
  });

  const env = (id: string) => ({
    CELL_ID: 'eu-1',
    DB_HOST: 'db',
    DB_NAME: 'cell',
    DB_USER: 'u',
    DB_PASSWORD: 'p',
    MOVE_BUCKET: s3.bucket,
    MOVE_BUCKET_REGION: 'us-east-1',
    MOVE_REQUEST_KEY: `tasks/333333333331/${id}/request.json`,
    MOVE_RESULT_KEY: `tasks/333333333331/${id}/result.json`,
  });
  const put = (key: string, body: unknown) =>
    localS3Client(s3).send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: JSON.stringify(body) }));
  const result = async (id: string) =>
    JSON.parse(
      await (
        await localS3Client(s3).send(new GetObjectCommand({ Bucket: s3.bucket, Key: `tasks/333333333331/${id}/result.json` }))
      ).Body!.transformToString(),
    );
  const opened: string[] = [];
  const fakeCell = (version: number) => (cell: string) => {
    opened.push(cell);
    return { cell, schemaVersion: async () => version, close: async () => undefined } as unknown as CellData;
  };
  const deps = (version = 7) => ({
    s3: () => localS3Client(s3),
    secret: async () => '{}',
    clock: { now: () => new Date(), sleep: async () => undefined },
    openCell: fakeCell(version),
    log: () => undefined,
  });

  it('runs the request for its own cell and writes the answer', async () => {
    await put('tasks/333333333331/r1/request.json', { op: 'schemaVersion', args: {}, cell: 'eu-1', bucketCount: 1024, batchRows: 10 });
    expect(await runMoverTask(env('r1'), deps(7))).toBe(0);
    expect(await result('r1')).toEqual({ ok: true, value: 7 });
  });

  it('refuses a request for another cell, or an unknown operation, without touching its database', async () => {
    opened.length = 0;
    await put('tasks/333333333331/r2/request.json', { op: 'clear', args: {}, cell: 'eu-2', bucketCount: 1024, batchRows: 10 });
    expect(await runMoverTask(env('r2'), deps())).toBe(1);
    expect(await result('r2')).toEqual({ ok: false, moveError: true, error: "the request is for cell eu-2, and this is cell eu-1's mover" });
    await put('tasks/333333333331/r3/request.json', { op: 'dropEverything', args: {}, cell: 'eu-1', bucketCount: 1024, batchRows: 10 });
    expect(await runMoverTask(env('r3'), deps())).toBe(1);
    expect((await result('r3')).error).toMatch(/unknown operation "dropEverything"/);
    expect(opened).toEqual([]);
  });

  it('exits 2 when misconfigured (no result can be written)', async () => {
    const lines: string[] = [];
    const { MOVE_BUCKET: _omitted, ...rest } = env('r4');
    expect(await runMoverTask(rest, { ...deps(), log: (l: string) => lines.push(l) })).toBe(2);
    expect(lines).toEqual(['mover: MOVE_BUCKET is not set']);
  });

  it("keeps hand-off data in the move's lane and refuses keys that could leave it", async () => {
    const lane = { sourceAccount: '333333333331', targetAccount: '333333333334' };
    const store = new S3HandoffStore(localS3Client(s3), s3.bucket, lane);
    await store.put('m-1/clone/items/rows-0.json', '[1]');
    expect(await store.get('m-1/clone/items/rows-0.json')).toBe('[1]');
    const raw = await localS3Client(s3).send(
      new GetObjectCommand({ Bucket: s3.bucket, Key: 'handoff/m-1/from=333333333331/to=333333333334/clone/items/rows-0.json' }),
    );
    expect(await raw.Body!.transformToString()).toBe('[1]');
    await expect(store.put('m-1/clone/to=333333333331/rows-0.json', 'x')).rejects.toThrow(/not valid/);
    await expect(store.put('m-1/../m-2/x.json', 'x')).rejects.toThrow(/not valid/);
    await expect(store.get('m-1/clone/items/rows-9.json')).rejects.toThrow(/missing or not readable .*cellctl move resume/);
    await new S3HandoffStore(localS3Client(s3), s3.bucket).remove('m-1');
    await expect(store.get('m-1/clone/items/rows-0.json')).rejects.toThrow(/missing/);
    await expect(new S3HandoffStore(localS3Client(s3), s3.bucket).put('m-1/x.json', 'x')).rejects.toThrow(/needs the move's lane/);
  });
});

describe('the mover image', () => {
  it('is one bundle of bin/mover.ts that runs without node_modules (the file images/mover/Dockerfile copies)', () => {
    const context = imageContext('mover');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mover-bundle-'));
    try {
      fs.copyFileSync(path.join(context, 'mover.js'), path.join(dir, 'mover.js'));
      // Run from a folder without node_modules: everything the entrypoint needs is in the bundle.
      const ran = spawnSync(process.execPath, [path.join(dir, 'mover.js')], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH } });
      expect([ran.status, ran.stderr]).toEqual([2, expect.stringContaining('mover: CELL_ID is not set')]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    const dockerfile = fs.readFileSync(path.join(context, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^COPY mover\.js \/app\/mover\.js$/m);
    expect(dockerfile).toMatch(/^CMD \["node", "\/app\/mover\.js"\]$/m);
    // The task definition runs it as user 1000 on a read-only root (lib/constructs/cell/mover.ts).
    expect(dockerfile).toMatch(/^USER 1000:1000$/m);
  });
});
