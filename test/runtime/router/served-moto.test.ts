import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateClusterCommand, ECSClient, RegisterTaskDefinitionCommand, RunTaskCommand } from '@aws-sdk/client-ecs';
import { describeServing, ecsRunningTasks, groupApplied, servedReportProbe } from '../../../lib/operations/moves/aws-routing';
import { S3ServedReporter, SERVED_FRESHNESS_MS, servedKey } from '../../../lib/runtime/router';
import { Moto, motoClientConfig, startMoto } from '../../support/moto';

/**
 * Router tasks' served reports (lib/runtime/router/served.ts) written to, and read by the moves' probe
 * (lib/operations/moves/aws-routing.ts) from, moto's S3: the probe judges a report's age on S3's clock (the
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
    expect(served['eu-west-1/canary']).toEqual({
      state: 'serving',
      tasks: expect.arrayContaining([
        { taskId: 'task-a', version: 3 },
        { taskId: 'task-b', version: 2 },
      ]),
    });

    // Both stop; judged a freshness window later, the group has no task (scaled to 0), not a silent one.
    await Promise.all([a.stop(3), b.stop(2)]);
    const later = servedReportProbe([{ region: 'eu-west-1', s3, bucket: 'mappings-eu' }], ['canary'], {
      clock: { now: () => new Date(Date.now() + SERVED_FRESHNESS_MS + 5_000), sleep: async () => undefined },
    });
    expect((await later())['eu-west-1/canary']).toMatchObject({ state: 'no-task' });
  });

  it("with ECS's running tasks: waits for a task whose agent went quiet while ECS runs it, forgets it once ECS does not, counts a running task that never reported", async () => {
    // S3's LastModified has whole seconds: a report is stale here after 2 s, and task-quiet's goes quiet for 3.
    const FRESH = 2000;
    const quiet = new S3ServedReporter(s3, 'mappings-eu', 'main', 'task-quiet');
    await quiet.update(5);
    await new Promise((r) => setTimeout(r, 3200));
    const live = new S3ServedReporter(s3, 'mappings-eu', 'main', 'task-live');
    await live.update(6);
    let running = new Set(['task-quiet', 'task-live']);
    const probe = servedReportProbe([{ region: 'eu-west-1', s3, bucket: 'mappings-eu' }], ['main'], {
      freshnessMs: FRESH,
      runningTasks: async (region, group) => {
        expect([region, group]).toEqual(['eu-west-1', 'main']);
        return running;
      },
    });
    const stale = (await probe())['eu-west-1/main'];
    expect(stale).toMatchObject({ state: 'serving' });
    const tasks = (stale as unknown as { tasks: { taskId: string; version: number | null; staleSeconds?: number }[] }).tasks;
    expect(tasks.find((t) => t.taskId === 'task-live')).toEqual({ taskId: 'task-live', version: 6 });
    expect(tasks.find((t) => t.taskId === 'task-quiet')).toMatchObject({ version: 5, staleSeconds: expect.any(Number) });
    expect(groupApplied(stale, 6)).toBe(false);
    expect(describeServing('eu-west-1/main', stale, 6)).toMatch(
      /task task-quiet is running but its agent last reported \d+ s ago \(v5\); its HAProxy may still serve that/,
    );
    // Without ECS's view the quiet task is simply forgotten, and the group looks done.
    const blind = servedReportProbe([{ region: 'eu-west-1', s3, bucket: 'mappings-eu' }], ['main'], { freshnessMs: FRESH });
    expect(groupApplied((await blind())['eu-west-1/main'], 6)).toBe(true);
    // ECS stopped it (the service replaced it): forgotten. A new task that has not reported yet counts as serving nothing.
    running = new Set(['task-live', 'task-new']);
    const replaced = (await probe())['eu-west-1/main'] as unknown as { tasks: { taskId: string; version: number | null }[] };
    expect(replaced.tasks.map((t) => t.taskId).sort()).toEqual(['task-live', 'task-new']);
    expect(replaced.tasks.find((t) => t.taskId === 'task-new')!.version).toBeNull();
    // ECS runs none of them any more: a fresh report still counts (a task that just stopped drains), a stale one does not.
    running = new Set();
    expect((await probe())['eu-west-1/main']).toEqual({ state: 'serving', tasks: [{ taskId: 'task-live', version: 6 }] });
  });

  it("lists the running task ids of a service through ECS ListTasks (moto: the cluster's tasks)", async () => {
    const ecs = new ECSClient(motoClientConfig(moto, 'eu-west-1'));
    await ecs.send(new CreateClusterCommand({ clusterName: 'orders-router-eu-west-1' }));
    await ecs.send(new RegisterTaskDefinitionCommand({ family: 'router', containerDefinitions: [{ name: 'haproxy', image: 'h', memory: 512 }] }));
    const started = await ecs.send(
      new RunTaskCommand({ cluster: 'orders-router-eu-west-1', taskDefinition: 'router', count: 2, launchType: 'FARGATE' }),
    );
    const ids = started.tasks!.map((t) => t.taskArn!.split('/').pop()!);
    // moto 5.2 ignores ListTasks' serviceName filter and starts no task for a service: the cluster holds only these two.
    expect([...(await ecsRunningTasks(ecs, 'orders-router-eu-west-1', 'orders-router-eu-west-1-main'))].sort()).toEqual(ids.sort());
    ecs.destroy();
  });

  it('logs a failed report write once (no bucket), never throws, and recovers', async () => {
    const logs: string[] = [];
    const reporter = new S3ServedReporter(s3, 'mappings-missing', 'main', 'task-c', { emit: (l) => logs.push(l), heartbeatMs: 0, retryBaseMs: 0 });
    await reporter.update(1);
    await reporter.update(1);
    expect(logs.map((l) => JSON.parse(l).event)).toEqual(['served-report-error']);
    expect(JSON.parse(logs[0]).error).toMatch(/^NoSuchBucket: /);
    await s3.send(new CreateBucketCommand({ Bucket: 'mappings-missing', CreateBucketConfiguration: { LocationConstraint: 'eu-west-1' } }));
    await reporter.update(1);
    expect(logs.map((l) => JSON.parse(l).event)).toEqual(['served-report-error', 'served-report-recovered']);
  });
});
