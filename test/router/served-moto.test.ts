import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { servedReportProbe } from '../../lib/moves/aws-routing';
import { S3ServedReporter, SERVED_FRESHNESS_MS, servedKey } from '../../lib/router';
import { Moto, motoClientConfig, startMoto } from '../support/moto';

/**
 * Router tasks' served reports (lib/router/served.ts) written to, and read by the moves' probe
 * (lib/moves/aws-routing.ts) from, moto's S3: the probe judges a report's age on S3's clock (the
 * Date of moto's own answers, LastModified of the report), not this machine's.
 */
describe('served reports against moto (S3 emulator)', () => {
  let moto: Moto;
  let s3: S3Client;
  beforeAll(async () => {
    moto = await startMoto();
    s3 = new S3Client({ ...motoClientConfig(moto, 'eu-west-1'), forcePathStyle: true });
    await s3.send(new CreateBucketCommand({ Bucket: 'mappings-eu', CreateBucketConfiguration: { LocationConstraint: 'eu-west-1' } }));
  });
  afterAll(async () => {
    s3?.destroy();
    await moto?.stop();
  });

  it('reports what each task serves; a group without a report is `never`; a stopped task is `no-task` once its report is old', async () => {
    const logs: string[] = [];
    const a = new S3ServedReporter(s3, 'mappings-eu', 'canary', 'task-a', { emit: (l) => logs.push(l) });
    const b = new S3ServedReporter(s3, 'mappings-eu', 'canary', 'task-b', { emit: (l) => logs.push(l) });
    await Promise.all([a.update(3), b.update(2)]);
    expect(logs).toEqual([]);
    expect(a.key).toBe(servedKey('canary', 'task-a'));
    const probe = servedReportProbe([{ region: 'eu-west-1', s3, bucket: 'mappings-eu' }], ['canary', 'main']);
    const served = await probe();
    expect(served['eu-west-1/main']).toEqual({ state: 'never' });
    expect(served['eu-west-1/canary']).toEqual({ state: 'serving', tasks: expect.arrayContaining([{ taskId: 'task-a', version: 3 }, { taskId: 'task-b', version: 2 }]) });

    // Both stop; judged a freshness window later, the group has no task (scaled to 0), not a silent one.
    await Promise.all([a.stop(3), b.stop(2)]);
    const later = servedReportProbe([{ region: 'eu-west-1', s3, bucket: 'mappings-eu' }], ['canary'], { clock: { now: () => new Date(Date.now() + SERVED_FRESHNESS_MS + 5_000), sleep: async () => undefined } });
    expect((await later())['eu-west-1/canary']).toMatchObject({ state: 'no-task' });
  });

  it('logs a failed report write once (no bucket), never throws, and recovers', async () => {
    const logs: string[] = [];
    const reporter = new S3ServedReporter(s3, 'mappings-missing', 'main', 'task-c', { emit: (l) => logs.push(l), heartbeatMs: 0 });
    await reporter.update(1);
    await reporter.update(1);
    expect(logs.map((l) => JSON.parse(l).event)).toEqual(['served-report-error']);
    expect(JSON.parse(logs[0]).error).toMatch(/^NoSuchBucket: /);
    await s3.send(new CreateBucketCommand({ Bucket: 'mappings-missing', CreateBucketConfiguration: { LocationConstraint: 'eu-west-1' } }));
    await reporter.update(1);
    expect(logs.map((l) => JSON.parse(l).event)).toEqual(['served-report-error', 'served-report-recovered']);
  });
});
