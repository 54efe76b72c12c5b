import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { initialMapping, MappingDocument } from '../../../lib/domain/mapping';
import { MappingStore, publishMapping } from '../../../lib/adapters/mapping-store';
import { GroupServing, groupApplied, S3RoutingControl, servedReportProbe } from '../../../lib/operations/moves/aws-routing';
import { flipAndUnfreeze, freezeSubject } from '../../../lib/operations/moves/routing';
import { Clock, MoveError, MoveSubject, systemClock } from '../../../lib/domain/moves/types';
import { S3ServedReporter } from '../../../lib/runtime/router';
import { until } from '../../support/cells';
import { LocalS3, localS3Client, startLocalS3 } from '../../support/s3';

const NOW = '2026-11-30T16:00:00.000Z';
const REGIONS = ['eu-west-1', 'us-east-1'];
const GROUPS = ['blue', 'green'];
const ACME: MoveSubject = { kind: 'tenant', tenant: 'acme' };

/** How long a report counts in these tests (30 s in the CLI). */
const FRESH_MS = 5000;

/**
 * How `cellctl move` on AWS learns that every router serves a version: the router tasks' reports
 * (`served/<group>/<task>.json`, written by the agent's S3ServedReporter) in each region's mapping
 * bucket, as AWS would show them on a first deploy, with a group scaled to 0, a task killed without
 * cleanup, and a second region. S3 is the local stand-in; a report's age is its LastModified against
 * S3's own clock (the Date of the listing's answer), as in production. That clock is the test's:
 * it stands still until a test moves it (`advance`, whole seconds as S3's are), so whether a report
 * is fresh never depends on how fast a loaded machine is, and a staleness case takes no real seconds.
 * The waits look every 100 ms for real and judge their own deadlines on the same clock; the tests
 * wait on what the waits saw (`looks`), never on a fixed sleep, and never check how long one took.
 */
describe("S3RoutingControl with the routers' served reports", () => {
  let s3: LocalS3;
  let client: S3Client;
  const buckets = REGIONS.map((region) => ({ region, bucket: `mappings-${region}` }));
  let stores: MappingStore[];
  let v1: MappingDocument;
  /**
   * S3's clock and the moves' "now", in ms, on a whole second: two minutes behind this machine's, so
   * a probe that judged a report's age by this machine's clock would find every report stale (and
   * inside the five minutes after which the SDK would correct its signing clock by S3's).
   */
  let now = Math.floor(Date.now() / 1000) * 1000 - 120_000;
  const clock: Clock = { now: () => new Date(now), sleep: systemClock.sleep };
  const heartbeats: NodeJS.Timeout[] = [];
  /** The tasks that keep running, with the version each serves. */
  const live: { tasks: S3ServedReporter[]; version: () => number }[] = [];
  /** One reporter per (region, group, task), as each router task's agent has; heartbeat 1 s, on the test's clock. */
  const task = (region: string, group: string, id: string) =>
    new S3ServedReporter(client, `mappings-${region}`, group, id, { heartbeatMs: 1000, now: () => now });
  /** Tasks that keep running: each ticks every 100 ms as an agent does, writing when its version changes or its heartbeat is due. */
  const running = (tasks: S3ServedReporter[], version: () => number) => {
    live.push({ tasks, version });
    heartbeats.push(setInterval(() => void Promise.all(tasks.map((t) => t.update(version()))), 100));
  };
  /** Time passes: S3's clock moves on, and every running task has written its heartbeat by then. */
  const advance = async (ms: number) => {
    now += ms;
    await Promise.all(live.flatMap(({ tasks, version }) => tasks.map((t) => t.update(version()))));
  };
  /** Ends this test's waits when it ends, whatever became of them: a wait never outlives its test. */
  let interrupt = new AbortController();
  /** What every wait's probe saw, in order. */
  const looks: Readonly<Record<string, GroupServing>>[] = [];
  const routing = (o: { silentLimitMs?: number; timeoutMs?: number; progress?: (l: string) => void } = {}) => {
    const probe = servedReportProbe(
      buckets.map((b) => ({ ...b, s3: client })),
      GROUPS,
      { freshnessMs: FRESH_MS },
    );
    return new S3RoutingControl({
      stores,
      groups: GROUPS,
      clock,
      pollMs: 100,
      timeoutMs: 60_000,
      signal: interrupt.signal,
      ...o,
      probe: async () => {
        const seen = await probe();
        looks.push(seen);
        return seen;
      },
    });
  };
  /**
   * `promise`'s outcome, waited for on a condition with a deadline (30 s of this machine's time): a
   * wait whose deadline is on S3's clock, which stands still, would otherwise hang a broken test.
   */
  const settle = async <T>(what: string, promise: Promise<T>): Promise<T> => {
    let done = false;
    const tracked = promise.finally(() => {
      done = true;
    });
    tracked.catch(() => undefined);
    await until(what, async () => done, 30_000);
    return tracked;
  };
  const all = (make: (region: string, group: string) => S3ServedReporter | undefined) =>
    REGIONS.flatMap((r) => GROUPS.map((g) => make(r, g))).filter((t): t is S3ServedReporter => !!t);

  beforeAll(async () => {
    s3 = await startLocalS3('unused', { now: () => now });
    client = localS3Client(s3, 1);
    for (const { bucket } of buckets) await client.send(new CreateBucketCommand({ Bucket: bucket }));
    stores = buckets.map(({ bucket }) => new MappingStore(client, bucket));
    v1 = initialMapping(
      [
        { id: 'cell-a', endpoint: 'https://a.example', state: 'active' },
        { id: 'cell-b', endpoint: 'https://b.example', state: 'active' },
      ],
      16384,
      { now: NOW },
    );
    await publishMapping(stores, v1, { groups: GROUPS, bakeSeconds: 0 });
  });
  afterEach(() => {
    heartbeats.splice(0).forEach((h) => clearInterval(h));
    live.length = 0;
    interrupt.abort();
    interrupt = new AbortController();
  });
  afterAll(async () => {
    client?.destroy();
    await s3?.stop();
  });

  it('refuses to freeze on a first deploy, before any router has reported: nothing is published', async () => {
    const control = routing();
    const refused = await settle('the refusal', control.publish(freezeSubject(v1, ACME, NOW), 1)).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(refused).toBeInstanceOf(MoveError);
    expect(refused!.message).toMatch(/^not freezing: .*\n {2}eu-west-1\/blue: no router task has ever reported .*deploy the router groups/);
    expect(refused!.message).toMatch(/us-east-1\/green: no router task has ever reported/);
    expect((await control.read()).version).toBe(1);
  });

  it('waits until every task of every group in both regions serves the version, then returns', async () => {
    const tasks = all((r, g) => task(r, g, `${g}-1`)).concat(all((r, g) => task(r, g, `${g}-2`)));
    await Promise.all(tasks.map((t) => t.update(1)));
    const control = routing();
    const frozen = freezeSubject(v1, ACME, NOW);
    await settle('the freeze', control.publish(frozen, 1));
    let outcome: string | undefined;
    const waiting = control.waitApplied(2).then(
      () => {
        outcome = 'applied';
      },
      (e: Error) => {
        outcome = e.message;
      },
    );
    // All but one task apply the freeze: the wait goes on, whatever the probe sees meanwhile.
    await Promise.all(tasks.slice(0, -1).map((t) => t.update(2)));
    const probe = servedReportProbe(
      buckets.map((b) => ({ ...b, s3: client })),
      GROUPS,
      { freshnessMs: FRESH_MS },
    );
    const seen = await probe();
    expect(seen['us-east-1/green']).toEqual({
      state: 'serving',
      tasks: expect.arrayContaining([
        { taskId: 'green-1', version: 2 },
        { taskId: 'green-2', version: 1 },
      ]),
    });
    expect(outcome).toBeUndefined();
    // The last one, in the second region.
    await tasks.at(-1)!.update(2);
    await settle('the wait for v2', waiting);
    expect(outcome).toBe('applied');
    // The flip lifts the freeze; waiting for it returns once every task serves it.
    await settle('the flip', control.publish(flipAndUnfreeze(frozen, ACME, 'cell-b', NOW), 2));
    await Promise.all(tasks.map((t) => t.update(3)));
    await settle('the wait for v3', control.waitApplied(3));
  });

  it('does not wait forever for a task killed without cleanup: its report stops counting once it is stale', async () => {
    // The tasks of the last test stop heartbeating too: only the -1 tasks keep running.
    const live1 = all((r, g) => task(r, g, `${g}-1`));
    let serving = 3;
    running(live1, () => serving);
    const control = routing({ silentLimitMs: 60_000 });
    const doc = await control.read();
    const next = freezeSubject(doc, { kind: 'tenant', tenant: 'globex' }, NOW);
    await settle('the freeze', control.publish(next, doc.version));
    serving = next.version;
    // blue-9 in eu-west-1 is killed (SIGKILL, a lost host) while serving v3: its report stays behind.
    await task('eu-west-1', 'blue', 'blue-9').update(3);
    looks.length = 0;
    let returned = false;
    const waiting = control.waitApplied(next.version).then(() => {
      returned = true;
    });
    const blue9 = (seen: Readonly<Record<string, GroupServing>>) => {
      const blue = seen['eu-west-1/blue'];
      return blue.state === 'serving' ? blue.tasks.find((t) => t.taskId === 'blue-9') : undefined;
    };
    // While its report is fresh (S3's clock stands still) the wait keeps looking and holds for it, however many looks it takes.
    await until('three looks that see blue-9 behind', async () => looks.filter((seen) => blue9(seen)?.version === 3).length >= 3, 30_000);
    expect(returned).toBe(false);
    // Its report goes stale (the live tasks keep reporting): the wait returns, on a look that no
    // longer counts blue-9 and sees every other task serving the new version.
    await advance(FRESH_MS + 1000);
    await settle('the wait to return', waiting);
    const last = looks.at(-1)!;
    expect(blue9(last)).toBeUndefined();
    expect(Object.values(last).every((g) => groupApplied(g, next.version))).toBe(true);
  });

  it('counts a group scaled to 0 (its last task said it stopped) as applied, and says so', async () => {
    const progress: string[] = [];
    // us-east-1/green scales to 0: its task says it stopped; the other groups keep running.
    const others = all((r, g) => (r === 'us-east-1' && g === 'green' ? undefined : task(r, g, `${g}-1`)));
    running(others, () => 10);
    const stopping = task('us-east-1', 'green', 'green-1');
    await stopping.update(4);
    await stopping.stop(4);
    // While its stopped report is fresh, the group still counts it (its HAProxy finishes what it holds).
    looks.length = 0;
    let returned = false;
    const waiting = routing({ progress: (l) => progress.push(l) })
      .waitApplied(10)
      .then(() => {
        returned = true;
      });
    await until(
      'a look that counts the stopping task',
      async () =>
        looks.some((seen) => {
          const green = seen['us-east-1/green'];
          return green.state === 'serving' && green.tasks.some((t) => t.taskId === 'green-1' && t.version === 4);
        }),
      30_000,
    );
    expect(returned).toBe(false);
    // Once it is older than the freshness window the group has no running task.
    await advance(FRESH_MS + 1000);
    await settle('the wait to return', waiting);
    // (A busy stand-in may also have made a look fail and be retried: 'trying again'.)
    expect(progress.filter((l) => !l.endsWith('; trying again'))).toEqual([
      expect.stringMatching(/^us-east-1\/green: no running task \(the last one stopped at .*\): counted as applied$/),
    ]);
  });

  it('stops with the silent group named once no task of it has reported for the silence limit', async () => {
    // eu-west-1/blue's tasks stop reporting without saying so; the others keep running.
    const others = all((r, g) => (r === 'eu-west-1' && g === 'blue' ? undefined : task(r, g, `${g}-1`)));
    running(others, () => 11);
    await task('eu-west-1', 'blue', 'blue-1').update(10);
    const control = routing({ silentLimitMs: 1000 });
    looks.length = 0;
    const failing = control.waitApplied(11).then(
      () => undefined,
      (e: Error) => e,
    );
    // Its last report goes stale: the group is silent from the next look on...
    await advance(FRESH_MS + 1000);
    await until('a look that finds eu-west-1/blue silent', async () => looks.some((seen) => seen['eu-west-1/blue'].state === 'silent'), 30_000);
    // ...and stays silent for the limit.
    await advance(1000);
    const failed = await settle('the wait to stop', failing);
    expect(failed).toBeInstanceOf(MoveError);
    expect(failed!.message).toMatch(
      /^routers did not report serving mapping v11 \(nothing is known about eu-west-1\/blue for 1 s\):\n {2}eu-west-1\/blue: no task has reported for \d+ s \(the last report: task blue-1, v10\); is the group's service running.*\n(.|\n)*cellctl move resume/,
    );
    // A freeze is not even published while a group is silent.
    const doc = await control.read();
    await expect(settle('the refusal', control.publish(freezeSubject(doc, { kind: 'tenant', tenant: 'initech' }, NOW), doc.version))).rejects.toThrow(
      /^not freezing: (.|\n)*eu-west-1\/blue: no task has reported/,
    );
    expect((await control.read()).version).toBe(doc.version);
  });

  it('publishes a freeze only once every group serves the current version (the freeze does not start while routers are behind)', async () => {
    const doc = await routing().read();
    // Every group has a task still on the version before the current one; it catches up after a while.
    const behind = all((r, g) => task(r, g, `${g}-behind`));
    await Promise.all(behind.map((t) => t.update(doc.version - 1)));
    let caughtUp = false;
    running(behind, () => (caughtUp ? doc.version : doc.version - 1));
    // While they are behind the freeze is not published: the wait for them ends (here after 1.5 s) with nothing frozen.
    const freeze = freezeSubject(doc, { kind: 'tenant', tenant: 'hooli' }, NOW);
    looks.length = 0;
    const refused = routing({ timeoutMs: 1500 }).publish(freeze, doc.version);
    // Whatever the outcome, it is awaited below; this keeps an early rejection from being reported as unhandled.
    refused.catch(() => undefined);
    // The check before the freeze looked once, the wait for the current version once more: 2 s pass while it waits.
    await until('the wait for the routers behind to look', async () => looks.length >= 2, 30_000);
    await advance(2000);
    await expect(settle('the wait to end', refused)).rejects.toThrow(`routers did not report serving mapping v${doc.version}`);
    expect((await routing().read()).version).toBe(doc.version);
    caughtUp = true;
    await settle('the freeze', routing().publish(freeze, doc.version));
    expect((await routing().read()).freeze?.exact).toContain('hooli');
  });
});
