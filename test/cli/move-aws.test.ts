import {
  DescribeTasksCommand,
  DescribeTasksCommandInput,
  ECSClient,
  ListTasksCommand,
  ListTasksCommandInput,
  RunTaskCommand,
  RunTaskCommandInput,
  StopTaskCommand,
  StopTaskCommandInput,
} from '@aws-sdk/client-ecs';
import { EventEmitter } from 'events';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { AssumeRoleCommand, AssumeRoleCommandInput, GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { mockClient } from 'aws-sdk-client-mock';
import { runCli } from '../../lib/cli';
import { Fleet, seedMapping } from '../../lib/domain/fleet';
import { compileMapping } from '../../lib/domain/mapping';
import { MappingStore, publishMapping } from '../../lib/adapters/mapping-store';
import { runMoverTask } from '../../lib/operations/moves/aws-task';
import { CellDatabase } from '../../lib/operations/moves/cell-data';
import { systemClock } from '../../lib/domain/moves/types';
import { mapContents, MappingAgent, MappingApplier, runAgentLoop, RuntimeApi, S3MappingSource, S3ServedReporter } from '../../lib/runtime/router';
import { MappingDocument } from '../../lib/domain/mapping';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PostgresServer, sql, startPostgres } from '../operations/moves/postgres-fixture';
import { until } from '../support/cells';
import { exampleFleet, REPO_ROOT } from '../support/fleet';
import { LocalS3, localS3Client, startLocalS3 } from '../support/s3';

async function cellctl(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return cellctlWith(new EventEmitter(), ...argv);
}

/** `cellctl` with SIGINT / SIGTERM arriving on `signals` (the test's, never the test process's own). */
async function cellctlWith(signals: EventEmitter, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, {
    out: (s) => {
      out += s;
    },
    err: (s) => {
      err += s;
    },
    signals,
  });
  return { code, out, err };
}

/**
 * `cellctl move` without `--local`, as it runs against AWS: move records and hand-off in a real S3
 * stand-in (s3rver behind the conditional-write layer), every region's mapping bucket there too,
 * and each cell's mover task run by the ECS mock *in this process* with the real task entrypoint
 * (lib/operations/moves/aws-task.ts) on a real PostgreSQL database per cell, reading its request from and
 * writing its data and result to that S3. Every router group of both regions has two router
 * tasks' agents running here too (the real MappingAgent, its S3 source and its served-version
 * report, at the router task's own poll intervals, with HAProxy stood in): the move waits for their
 * reports. STS (the operator, the launcher roles), SSM (bucket names, the mover's task parameter) and
 * ECS (RunTask, DescribeTasks) are aws-sdk-client-mock: no stand-in implements them.
 */
describe('cellctl move (AWS fleet)', () => {
  // Each cell call is a task run in this process on real PostgreSQL: a whole move is ~40 s idle, more under load.
  jest.setTimeout(400_000);
  let fleet: Fleet;
  let s3: LocalS3;
  let pg: PostgresServer;
  const dbs: Record<string, CellDatabase> = {};
  const mappingBuckets: Record<string, string> = { 'eu-west-1': 'orders-mappings-eu', 'us-east-1': 'orders-mappings-us' };
  const sts = mockClient(STSClient);
  const ssm = mockClient(SSMClient);
  const ecs = mockClient(ECSClient);
  const routers: { stop(): void }[] = [];
  const stateDirs: string[] = [];
  const ran: { cell: string; op: string; exit: number; env: Record<string, string> }[] = [];
  /** What the mover tasks sent to their cell's SQS work queue (requeue after the flip). */
  const requeued: { cell: string; queueUrl: string; bodies: readonly string[] }[] = [];
  const assumed: string[] = [];
  let source: string;
  let target: string;
  const savedEnv = { ...process.env };
  const config = `${REPO_ROOT}/cells.config.ts`;
  const stores = () => Object.values(mappingBuckets).map((b) => new MappingStore(localS3Client(s3), b));

  beforeAll(async () => {
    fleet = exampleFleet();
    s3 = await startLocalS3('orders-moves-test');
    const client = localS3Client(s3);
    for (const bucket of Object.values(mappingBuckets)) await client.send(new CreateBucketCommand({ Bucket: bucket }));
    const seed = seedMapping(fleet);
    await publishMapping(stores(), seed, { groups: fleet.router.groups.map((g) => g.name), bakeSeconds: 0 });
    source = compileMapping(seed).lookup('acme').cell;
    target = fleet.cells.find((c) => c.id !== source && c.region !== fleet.cells.find((x) => x.id === source)!.region)!.id;
    pg = await startPostgres();
    for (const cell of [source, target]) dbs[cell] = await pg.createDatabase(`aws_${cell.replace(/-/g, '_')}`);
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_REGION: 'eu-west-1',
      CELLCTL_ACTOR: 'alice',
    });
    // Two router tasks per group and region, as AWS runs them (bin/router-agent.ts): poll every 5 s,
    // every 250 ms while a freeze is in force, a report of the version in force after every poll.
    for (const [region, bucket] of Object.entries(mappingBuckets)) {
      for (const group of fleet.router.groups.map((g) => g.name)) {
        for (const n of [1, 2]) {
          const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'move-aws-router-'));
          stateDirs.push(stateDir);
          let inForce: number | undefined;
          const api = {
            info: async () => ({ Pid: '1' }),
            send: async () => '',
            stats: async () => [],
            env: async () => String(fleet.bucketCount),
          } as unknown as RuntimeApi;
          const applier = {
            currentVersion: async () => inForce,
            currentSlots: async () => new Map<string, number>(),
            refreshAddresses: async () => ({ moved: [], reach: [] }),
            apply: async (doc: MappingDocument) => {
              inForce = doc.version;
              const slots = new Map(Object.keys(doc.cells).map((cell, i) => [cell, i]));
              return { slots, contents: mapContents(doc, slots) };
            },
          } as unknown as MappingApplier;
          const agent = new MappingAgent({
            api,
            applier,
            stateDir,
            group,
            emit: () => undefined,
            source: new S3MappingSource(localS3Client(s3), bucket, group),
            served: new S3ServedReporter(localS3Client(s3), bucket, group, `${region}-${group}-${n}`),
          });
          routers.push(runAgentLoop(agent, { pollMs: 5000, freezePollMs: 250 }));
        }
      }
    }
  });
  afterAll(async () => {
    routers.forEach((r) => r.stop());
    for (const dir of stateDirs) fs.rmSync(dir, { recursive: true, force: true });
    process.env = savedEnv;
    await s3?.stop();
    await pg?.stop();
  });

  /** STS, SSM and ECS as AWS would answer for the deployed stacks. */
  /** Tasks of `hang`'s op start and keep running until StopTask (each one is recorded with the role that stopped it). */
  const hanging: { taskArn: string; cell: string; stopped?: { cluster: string; reason: string; accessKeyId: string } }[] = [];
  function mockAws(options: { movesBucket?: boolean; caller?: string; hang?: string } = {}) {
    sts.reset();
    ssm.reset();
    ecs.reset();
    sts
      .on(GetCallerIdentityCommand)
      .resolves({ Arn: options.caller ?? 'arn:aws:sts::222222222222:assumed-role/orders-move-operator/alice', Account: '222222222222' });
    // The stand-in S3 takes its own key; the mocked sessions hand it out.
    sts.on(AssumeRoleCommand).callsFake((input: AssumeRoleCommandInput) => {
      assumed.push(input.RoleArn!);
      return {
        Credentials: { AccessKeyId: 'S3RVER', SecretAccessKey: 'S3RVER', SessionToken: 'session', Expiration: new Date(Date.now() + 3600_000) },
      };
    });
    ssm.on(GetParameterCommand).callsFake(async (input: { Name: string }, getClient: () => SSMClient) => {
      const region = await getClient().config.region();
      if (input.Name === '/orders/moves/bucket') {
        if (options.movesBucket === false) throw Object.assign(new Error('parameter not found'), { name: 'ParameterNotFound' });
        return { Parameter: { Value: s3.bucket } };
      }
      if (input.Name === '/orders/router/mapping-bucket') return { Parameter: { Value: mappingBuckets[region] } };
      if (input.Name === '/orders/router/cluster-name') return { Parameter: { Value: `orders-router-${region}` } };
      const cell = /^\/orders\/cell\/(.+)\/mover$/.exec(input.Name)?.[1];
      if (cell)
        return {
          Parameter: {
            Value: JSON.stringify({
              cluster: `mover-${cell}`,
              taskDefinition: `orders-${cell}-mover`,
              container: 'Mover',
              subnets: ['subnet-1'],
              securityGroups: ['sg-1'],
            }),
          },
        };
      throw Object.assign(new Error(`no parameter ${input.Name}`), { name: 'ParameterNotFound' });
    });
    const exits = new Map<string, number>();
    ecs.on(RunTaskCommand).callsFake(async (input: RunTaskCommandInput, getClient: () => ECSClient) => {
      const cell = input.cluster!.replace(/^mover-/, '');
      // The client's credentials: the cell's launcher role, assumed through STS (mocked above).
      await getClient().config.credentials();
      const env = Object.fromEntries(input.overrides!.containerOverrides![0].environment!.map((e) => [e.name!, e.value!]));
      if (options.hang) {
        const asked = JSON.parse(
          await (await localS3Client(s3).send(new GetObjectCommand({ Bucket: s3.bucket, Key: env.MOVE_REQUEST_KEY }))).Body!.transformToString(),
        ) as { op: string };
        if (asked.op === options.hang) {
          const taskArn = `arn:aws:ecs:eu-west-1:${fleet.cells.find((c) => c.id === cell)!.account}:task/mover-${cell}/hanging-${hanging.length}`;
          hanging.push({ taskArn, cell });
          return { tasks: [{ taskArn }], failures: [] };
        }
      }
      const db = dbs[cell];
      // The task definition's environment (CellMover), the overrides, and the local database's credentials in place of the secret.
      const account = fleet.cells.find((c) => c.id === cell)!.account;
      const exit = await runMoverTask(
        {
          CELL_ID: cell,
          DB_HOST: db.host,
          DB_PORT: String(db.port),
          DB_NAME: db.database,
          DB_USER: db.user,
          DB_PASSWORD: db.password,
          AWS_REGION: 'eu-west-1',
          QUEUE_URL: `https://sqs.eu-west-1.amazonaws.com/${account}/orders-${cell}-work`,
          ...env,
        },
        {
          s3: () => localS3Client(s3),
          secret: async () => {
            throw new Error('no secret in this test');
          },
          clock: systemClock,
          log: () => undefined,
          // The cell's SQS queue (its moto-backed test is test/operations/moves/moto.test.ts): what was sent, and where.
          sendWork: async (queueUrl, bodies) => {
            requeued.push({ cell, queueUrl, bodies });
          },
        },
      );
      const request = JSON.parse(
        await (await localS3Client(s3).send(new GetObjectCommand({ Bucket: s3.bucket, Key: env.MOVE_REQUEST_KEY }))).Body!.transformToString(),
      ) as { op: string };
      ran.push({ cell, op: request.op, exit, env });
      const taskArn = `arn:aws:ecs:eu-west-1:${fleet.cells.find((c) => c.id === cell)!.account}:task/mover-${cell}/${ran.length}`;
      exits.set(taskArn, exit);
      return { tasks: [{ taskArn }], failures: [] };
    });
    // The router groups' running tasks: the two agents per group and region started above.
    ecs.on(ListTasksCommand).callsFake(async (input: ListTasksCommandInput, getClient: () => ECSClient) => {
      const region = await getClient().config.region();
      const group = input.serviceName!.replace(`orders-router-${region}-`, '');
      expect(input).toMatchObject({ cluster: `orders-router-${region}`, desiredStatus: 'RUNNING' });
      return { taskArns: [1, 2].map((n) => `arn:aws:ecs:${region}:222222222222:task/orders-router-${region}/${region}-${group}-${n}`) };
    });
    ecs.on(DescribeTasksCommand).callsFake(async (input: DescribeTasksCommandInput) => {
      const hung = hanging.find((h) => h.taskArn === input.tasks![0]);
      if (hung)
        return {
          tasks: [
            {
              taskArn: hung.taskArn,
              lastStatus: hung.stopped ? 'STOPPED' : 'RUNNING',
              stoppedReason: hung.stopped?.reason,
              containers: [{ name: 'Mover', exitCode: hung.stopped ? 143 : undefined }],
            },
          ],
        };
      return {
        tasks: [
          {
            taskArn: input.tasks![0],
            lastStatus: 'STOPPED',
            stoppedReason: 'Essential container in task exited',
            containers: [{ name: 'Mover', exitCode: exits.get(input.tasks![0]) }],
          },
        ],
      };
    });
    ecs.on(StopTaskCommand).callsFake(async (input: StopTaskCommandInput, getClient: () => ECSClient) => {
      const hung = hanging.find((h) => h.taskArn === input.task);
      if (!hung) throw Object.assign(new Error(`no task ${input.task}`), { name: 'InvalidParameterException' });
      // Which credentials stopped it: the cell's launcher role's session (STS mocked above).
      const credentials = await getClient().config.credentials();
      hung.stopped ??= { cluster: input.cluster!, reason: input.reason ?? '', accessKeyId: credentials.accessKeyId };
      return { task: { taskArn: hung.taskArn, lastStatus: 'STOPPED' } };
    });
  }

  it("moves a tenant between cells of two regions: mover tasks in each cell, records and hand-off in the move bucket, freeze and flip in every region's mapping", async () => {
    mockAws();
    await sql(
      dbs[source],
      `insert into items (id, tenant_id, data) select gen_random_uuid()::text, 'acme', jsonb_build_object('n', g) from generate_series(1, 321) g`,
    );
    await sql(
      dbs[source],
      `insert into items (id, tenant_id, data) select gen_random_uuid()::text, 'other', jsonb_build_object('n', g) from generate_series(1, 5) g`,
    );
    const moved = await cellctl('move', 'tenant', 'acme', '--to', target, '--reason', 'rebalance', '--json', '--config', config);
    expect([moved.code, moved.err]).toEqual([0, expect.stringMatching(/; frozen for \d+ ms;/)]);
    const record = JSON.parse(moved.out);
    expect(record).toMatchObject({
      source,
      target,
      status: 'retained',
      completed: 'unfrozen',
      rowsCopied: 321,
      actor: 'alice',
      freezeMs: expect.any(Number),
    });
    // The rows are in the target, the other tenant stayed; the source refuses acme from now on (its fence).
    expect((await sql<{ n: number }>(dbs[target], `select count(*)::int as n from items where tenant_id = 'acme'`))[0].n).toBe(321);
    expect((await sql<{ n: number }>(dbs[target], `select count(*)::int as n from items where tenant_id = 'acme'`))[0].n).toBe(321);
    expect((await sql<{ n: number }>(dbs[target], `select count(*)::int as n from items where tenant_id = 'other'`))[0].n).toBe(0);
    // acme's unfinished items (all of them: none was processed) were sent again to the target's own queue after the flip, nothing to the source's.
    expect(requeued.map((r) => [r.cell, r.queueUrl.split('/').pop(), r.bodies.length])).toEqual([[target, `orders-${target}-work`, 321]]);
    expect(new Set(requeued[0].bodies.map((b) => JSON.parse(b).tenantId))).toEqual(new Set(['acme']));
    expect(ran.findIndex((r) => r.op === 'requeue')).toBeGreaterThan(ran.findIndex((r) => r.op === 'fence' && r.cell === source));
    expect(await sql(dbs[source], `select kind, value, moved_to from cf_moved_away`)).toEqual([{ kind: 'tenant', value: 'acme', moved_to: target }]);
    // Every region's routers now send acme to the target, with no freeze left.
    for (const store of stores()) {
      const doc = (await store.readGroup(fleet.router.groups[0].name))!.document;
      expect(compileMapping(doc).lookup('acme').cell).toBe(target);
      expect(doc.freeze).toBeUndefined();
    }
    // Each cell's calls ran in that cell's own task: exports only in the source, imports only in the target.
    expect(ran.filter((r) => r.op === 'exportDelta').map((r) => r.cell)).toEqual(expect.arrayContaining([source]));
    expect(new Set(ran.filter((r) => r.op === 'exportDelta').map((r) => r.cell))).toEqual(new Set([source]));
    expect(new Set(ran.filter((r) => r.op === 'importDelta').map((r) => r.cell))).toEqual(new Set([target]));
    expect(ran.every((r) => r.exit === 0)).toBe(true);
    // Through each cell's launcher role; the operator was not assumed (the caller is it).
    expect(new Set(assumed)).toEqual(
      new Set([source, target].map((c) => `arn:aws:iam::${fleet.cells.find((x) => x.id === c)!.account}:role/orders-${c}-mover-launcher`)),
    );
    // The hand-off data lives in the move's lane, keyed by the two accounts.
    const accounts = [source, target].map((c) => fleet.cells.find((x) => x.id === c)!.account);
    const keys = (
      (await localS3Client(s3).send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `handoff/${record.id}/` }))).Contents ?? []
    ).map((o) => o.Key!);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => k.startsWith(`handoff/${record.id}/from=${accounts[0]}/to=${accounts[1]}/`))).toBe(true);
    // show: the audit log in the move bucket.
    const shown = await cellctl('move', 'show', record.id, '--json', '--config', config);
    const events = (JSON.parse(shown.out).audit as { event: string }[]).map((e) => e.event);
    expect(events).toEqual(expect.arrayContaining(['planned', 'frozen', 'verified', 'flipped', 'unfrozen']));
    // forget --now deletes the source copy (in the source's task) and the move's hand-off data.
    const forgotten = await cellctl('move', 'forget', record.id, '--now', '--json', '--config', config);
    expect([forgotten.code, JSON.parse(forgotten.out)]).toEqual([0, expect.objectContaining({ status: 'finished', sourceRowsDeleted: 321 })]);
    expect((await sql<{ n: number }>(dbs[source], `select count(*)::int as n from items where tenant_id = 'acme'`))[0].n).toBe(0);
    expect((await sql<{ n: number }>(dbs[source], `select count(*)::int as n from items where tenant_id = 'other'`))[0].n).toBe(5);
    expect((await localS3Client(s3).send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `handoff/${record.id}/` }))).Contents ?? []).toEqual(
      [],
    );
    const listed = await cellctl('move', 'list', '--json', '--config', config);
    expect(JSON.parse(listed.out).map((m: { id: string }) => m.id)).toEqual([record.id]);
  });

  it('on Ctrl-C stops the mover task it started, records the interruption and exits 130; resume finishes the move', async () => {
    mockAws({ hang: 'exportDelta' });
    const seed = compileMapping(seedMapping(fleet));
    const tenant = Array.from({ length: 500 }, (_, i) => `sig${i}`).find((t) => seed.lookup(t).cell === source)!;
    await sql(
      dbs[source],
      `insert into items (id, tenant_id, data) select gen_random_uuid()::text, '${tenant}', jsonb_build_object('n', g) from generate_series(1, 40) g`,
    );
    const signals = new EventEmitter();
    const running = cellctlWith(signals, 'move', 'tenant', tenant, '--to', target, '--json', '--config', config);
    // The clone's export runs in the source's mover task, which keeps running until stopped.
    await until("the source's export task to start", async () => hanging.length === 1, 60_000);
    assumed.length = 0;
    signals.emit('SIGINT', 'SIGINT');
    const interrupted = await running;
    const id = /move (m-[a-z0-9-]+) stays/.exec(interrupted.err)?.[1];
    expect([interrupted.code, interrupted.out]).toEqual([130, '']);
    expect(interrupted.err).toMatch(
      new RegExp(`interrupted by SIGINT: stopped mover task hanging-0; move ${id} stays at step planned: \`cellctl move resume ${id}\` continues it`),
    );
    // Stopped in the source's mover cluster, through its launcher role (the session STS handed out for it).
    expect(hanging[0]).toMatchObject({
      cell: source,
      stopped: { cluster: `mover-${source}`, reason: 'cellctl move was interrupted (SIGINT)', accessKeyId: 'S3RVER' },
    });
    // No task was started after the signal.
    expect(hanging).toHaveLength(1);
    // The audit log says so: who, when, which step, which task.
    // Here the interrupted move runs in this process, so its step still in flight settles after
    // cellctl returned (a real cellctl has exited with 130 by then) and may write the move's
    // objects once more; the S3 stand-in (s3rver) serves an object being written half-written,
    // which S3 never does. Read until a read sees whole documents.
    let shownRun = await cellctl('move', 'show', id!, '--json', '--config', config);
    await until(
      'move show to read whole documents',
      async () => {
        if (shownRun.err !== '') shownRun = await cellctl('move', 'show', id!, '--json', '--config', config);
        return shownRun.err === '';
      },
      30_000,
    );
    expect(shownRun.err).toBe('');
    const shown = JSON.parse(shownRun.out);
    expect(shown.move.status).toBe('active');
    expect(shown.audit.find((e: { event: string }) => e.event === 'interrupted')).toMatchObject({
      actor: 'alice',
      detail: { signal: 'SIGINT', completed: 'planned', stoppedTasks: [hanging[0].taskArn] },
    });
    // resume continues: the move finishes, the rows are on the target.
    mockAws();
    const resumed = await cellctl('move', 'resume', id!, '--json', '--config', config);
    expect([resumed.code, resumed.err, JSON.parse(resumed.out).status]).toEqual([0, expect.stringMatching(/; frozen for \d+ ms;/), 'retained']);
    expect((await sql<{ n: number }>(dbs[target], `select count(*)::int as n from items where tenant_id = '${tenant}'`))[0].n).toBe(40);
  });

  it("stops with the cell's own error when a mover task fails, and resumes from that step", async () => {
    mockAws();
    // The target lost a table the source has: its import refuses the delta (a MoveError inside the task).
    const seed = compileMapping(seedMapping(fleet));
    const tenant = Array.from({ length: 500 }, (_, i) => `t${i}`).find((t) => seed.lookup(t).cell === source)!;
    const planned = await cellctl('move', 'tenant', tenant, '--to', target, '--plan-only', '--json', '--config', config);
    expect(planned.code).toBe(0);
    const id = JSON.parse(planned.out).id as string;
    await sql(dbs[target], `drop table notes`);
    const failed = await cellctl('move', 'resume', id, '--config', config);
    expect(failed.code).toBe(1);
    expect(failed.err).toMatch(new RegExp(`cell ${target}: .*notes`));
    expect(ran.at(-1)).toMatchObject({ cell: target, exit: 1 });
    const aborted = await cellctl('move', 'abort', id, '--json', '--config', config);
    expect([aborted.code, JSON.parse(aborted.out).status]).toEqual([0, 'aborted']);
  });

  it('says what is missing: the move bucket not deployed, no credentials, the operator role not assumable', async () => {
    mockAws({ movesBucket: false });
    const nobucket = await cellctl('move', 'list', '--config', config);
    expect([nobucket.code, nobucket.err]).toEqual([
      1,
      expect.stringMatching(
        /\/orders\/moves\/bucket in eu-west-1 not found: the fleet has no move bucket yet; deploy orders-router-eu-west-1 .*--moves-bucket/,
      ),
    ]);
    mockAws();
    sts
      .on(GetCallerIdentityCommand)
      .rejects(Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' }));
    const nocreds = await cellctl('move', 'list', '--config', config);
    expect([nocreds.code, nocreds.err]).toEqual([1, expect.stringMatching(/need AWS credentials: no usable AWS credentials/)]);
    mockAws({ caller: 'arn:aws:sts::444444444444:assumed-role/Someone/bob' });
    sts.on(AssumeRoleCommand).rejects(Object.assign(new Error('not authorized to perform sts:AssumeRole'), { name: 'AccessDenied' }));
    const denied = await cellctl('move', 'list', '--config', config);
    expect([denied.code, denied.err]).toEqual([
      1,
      expect.stringMatching(
        /cannot assume arn:aws:iam::222222222222:role\/orders-move-operator .*operators of the router account .* you are arn:aws:sts::444444444444:assumed-role\/Someone\/bob/,
      ),
    ]);
  });
});
