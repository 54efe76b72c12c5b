import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { DescribeTasksCommand, DescribeTasksCommandInput, ECSClient, RunTaskCommand, RunTaskCommandInput } from '@aws-sdk/client-ecs';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { CloudAssembly } from 'aws-cdk-lib/cx-api';
import { mockClient } from 'aws-sdk-client-mock';
import { cellStackPropsOf } from '../../../lib/app';
import { CellStack } from '../../../lib/constructs/cell';
import { compileMapping, initialMapping, parseMapping } from '../../../lib/domain/mapping';
import { FileRoutingControl, LocalMoveStore, planMove, runMove, systemClock } from '../../../lib/operations/moves';
import { EcsCellData } from '../../../lib/operations/moves/aws-cell';
import { S3HandoffStore } from '../../../lib/operations/moves/aws-handoff';
import { MOVER_CONTAINER } from '../../../lib/domain/names/move-bucket';
import { EcsMoverRunner } from '../../../lib/operations/moves/aws-runner';
import { migrate } from '../../../lib/runtime/workload/migrations';
import { missingContainerTools } from '../../support/containers';
import { buildContainerImage, ContainerDefinition, containerState, environmentOf, lastLogLine, removeAll, resourcesOf, runContainer } from '../../support/ecs-task';
import { cdkApp, exampleFleet } from '../../support/fleet';
import { Moto, motoClientConfig, startMoto } from '../../support/moto';
import { enableTestTls, startTestPostgres, TestPostgres, testPool } from '../../support/postgres';
import { LocalS3, localS3Client, startLocalS3 } from '../../support/s3';

/**
 * The mover image performs a tenant move between two cells: the move engine (lib/operations/moves) with the
 * AWS cells' adapter and runner, as `cellctl move` runs them, where each cell call is a RunTask of
 * the cell's mover task definition. ECS is the one part stood in (aws-sdk-client-mock): RunTask runs
 * the image synth staged with podman, the task definition's environment from the synthesized
 * template plus the runner's overrides, and DescribeTasks reports the container's state. Each cell
 * has its own real PostgreSQL database over verified TLS, its password in a Secrets Manager secret
 * (moto) that the task reads when it connects; the move bucket is s3rver.
 */
const CELLS = ['canary-eu', 'eu-1'] as const;
const missing = missingContainerTools();
const describeImages = missing ? describe.skip : describe;
if (missing) test('the image tests can run here', () => { throw new Error(`image tests: ${missing}`); });

describeImages('the mover image, moving a tenant between two cells', () => {
  let pg: TestPostgres;
  let moto: Moto;
  let s3: LocalS3;
  let tlsDir: string;
  let workDir: string;
  const ecs = mockClient(ECSClient);
  const containers: string[] = [];
  const databases: Record<string, string> = {};

  beforeAll(async () => {
    const fleet = exampleFleet();
    const app = cdkApp();
    const stacks = CELLS.map((id) => new CellStack(app, `cell-${id}`, cellStackPropsOf(fleet, fleet.cells.find((c) => c.id === id)!)));
    const assembly: CloudAssembly = app.synth();
    const definitions = Object.fromEntries(CELLS.map((id, i) => [id, resourcesOf(assembly, stacks[i].stackName, 'AWS::ECS::TaskDefinition')
      .flatMap((t) => t.ContainerDefinitions as ContainerDefinition[]).find((d) => d.Name === MOVER_CONTAINER)!]));
    const image = (await buildContainerImage(assembly, definitions[CELLS[0]])).tag;

    pg = await startTestPostgres();
    tlsDir = await enableTestTls(pg);
    moto = await startMoto();
    s3 = await startLocalS3('orders-moves-image');
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mover-image-'));
    const secretArns: Record<string, string> = {};
    const queueUrls: Record<string, string> = {};
    for (const id of CELLS) {
      databases[id] = await pg.database(`mover_${id.replace(/-/g, '_')}`);
      const pool = testPool({ host: pg.server.host, port: pg.server.port, user: pg.server.user, password: pg.server.password, database: databases[id], max: 1 });
      try {
        await migrate(pool);
      } finally {
        await pool.end();
      }
      const region = fleet.cells.find((c) => c.id === id)!.region;
      const secrets = new SecretsManagerClient(motoClientConfig(moto, region));
      secretArns[id] = (await secrets.send(new CreateSecretCommand({ Name: `${id}-db`, SecretString: JSON.stringify({ username: pg.server.user, password: pg.server.password }) }))).ARN!;
      secrets.destroy();
      // The cell's work queue (QUEUE_URL, for the requeue step after the flip), in moto.
      const sqs = new SQSClient(motoClientConfig(moto, region));
      queueUrls[id] = (await sqs.send(new CreateQueueCommand({ QueueName: `${id}-work` }))).QueueUrl!;
      sqs.destroy();
    }

    // RunTask: the cell's mover container, started as ECS would (the template's definition and environment, the overrides).
    ecs.on(RunTaskCommand).callsFake(async (input: RunTaskCommandInput) => {
      const cell = input.cluster!.replace(/^mover-/, '');
      const def = definitions[cell];
      const overrides = Object.fromEntries(input.overrides!.containerOverrides![0].environment!.map((e) => [e.name!, e.value!]));
      const name = `mover-${process.pid}-${containers.length}`;
      containers.push(name);
      await runContainer({
        name, image, def, binds: [`${tlsDir}:/etc/ssl/test-db`],
        env: {
          ...environmentOf(def, { DB_HOST: '127.0.0.1', DB_NAME: databases[cell], DB_SECRET_ARN: secretArns[cell], QUEUE_URL: queueUrls[cell] }),
          // The template names the cell database's own port and name; the test's are others.
          DB_PORT: String(pg.server.port), DB_NAME: databases[cell],
          ...overrides,
          AWS_ENDPOINT_URL_SECRETS_MANAGER: moto.endpoint, AWS_ENDPOINT_URL_SQS: moto.endpoint, AWS_ENDPOINT_URL_S3: s3.endpoint, S3_FORCE_PATH_STYLE: 'true',
          AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', NODE_EXTRA_CA_CERTS: '/etc/ssl/test-db/ca.pem',
        },
      });
      return { tasks: [{ taskArn: `arn:aws:ecs:eu-west-1:111111111111:task/mover-${cell}/${name}` }], failures: [] };
    });
    ecs.on(DescribeTasksCommand).callsFake(async (input: DescribeTasksCommandInput) => {
      const taskArn = input.tasks![0];
      const state = await containerState(taskArn.split('/').pop()!);
      return { tasks: [{ taskArn, lastStatus: state.running ? 'RUNNING' : 'STOPPED', containers: [{ name: MOVER_CONTAINER, exitCode: state.running ? undefined : state.exitCode }] }] };
    });
  }, 1_200_000);

  afterAll(async () => {
    ecs.restore();
    if (process.env.KEEP_CONTAINERS !== '1') await removeAll(containers);
    await moto?.stop();
    await s3?.stop();
    await pg?.destroy();
    for (const dir of [tlsDir, workDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('copies, verifies and flips the tenant: rows in the target, the source fenced, every step a mover task of the image', async () => {
    const fleet = exampleFleet();
    const cells = Object.fromEntries(CELLS.map((id) => {
      const c = fleet.cells.find((x) => x.id === id)!;
      return [id, { id, account: c.account, region: c.region }];
    }));
    const s3client = localS3Client(s3);
    const runner = new EcsMoverRunner({
      s3: s3client, bucket: s3.bucket, bucketRegion: 'eu-west-1', cells, clock: systemClock, pollMs: 200,
      ecs: () => new ECSClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
      taskInfo: async (cell) => ({ cluster: `mover-${cell.id}`, taskDefinition: `orders-${cell.id}-mover`, container: MOVER_CONTAINER, subnets: ['subnet-1'], securityGroups: ['sg-1'] }),
    });
    const store = new LocalMoveStore(path.join(workDir, 'moves'));
    const mappingFile = path.join(workDir, 'mapping.json');
    const doc = initialMapping(CELLS.map((id) => ({ id, endpoint: `http://127.0.0.1:${19100 + CELLS.indexOf(id)}`, state: 'active' as const })), fleet.bucketCount, { now: new Date().toISOString() });
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    const mapping = () => {
      const parsed = parseMapping(fs.readFileSync(mappingFile, 'utf8'));
      if (!parsed.ok) throw new Error('invalid mapping in test');
      return parsed.document;
    };
    const tenant = Array.from({ length: 200 }, (_, i) => `acme-${i}`).find((t) => compileMapping(doc).lookup(t).cell === CELLS[0])!;
    const [source, target] = CELLS;
    const pool = (id: string) => testPool({ host: pg.server.host, port: pg.server.port, user: pg.server.user, password: pg.server.password, database: databases[id], max: 1 });
    const src = pool(source);
    const dst = pool(target);
    try {
      await src.query(`insert into items (id, tenant_id, data) select gen_random_uuid()::text, $1, jsonb_build_object('n', g) from generate_series(1, 123) g`, [tenant]);
      await src.query(`insert into items (id, tenant_id, data) select gen_random_uuid()::text, 'other', jsonb_build_object('n', g) from generate_series(1, 5) g`);
      const laneOf = async (moveId: string) => {
        const stored = await store.read(moveId);
        return { sourceAccount: cells[stored!.record.source].account, targetAccount: cells[stored!.record.target].account };
      };
      const deps = {
        store,
        handoff: new S3HandoffStore(s3client, s3.bucket),
        routing: new FileRoutingControl(mappingFile, async () => ({ local: mapping().version }), systemClock),
        cell: (id: string) => new EcsCellData(id, { runner, bucketCount: fleet.bucketCount, batchRows: 50, laneOf }),
        clock: systemClock,
        actor: 'image-test',
      };
      const planned = await planMove(deps, { subject: { kind: 'tenant', tenant }, target, reason: 'image test' });
      const done = await runMove(deps, planned.id);
      expect(done).toMatchObject({ source, target, status: 'retained', rowsCopied: 123 });
      expect((await dst.query(`select count(*)::int as n from items where tenant_id = $1`, [tenant])).rows[0].n).toBe(123);
      expect((await dst.query(`select count(*)::int as n from items where tenant_id = 'other'`)).rows[0].n).toBe(0);
      expect((await src.query(`select kind, value, moved_to from cf_moved_away`)).rows).toEqual([{ kind: 'tenant', value: tenant, moved_to: target }]);
      expect(compileMapping(mapping()).lookup(tenant).cell).toBe(target);
      // Every cell call ran as a container of the image, and each exited 0.
      expect(containers.length).toBeGreaterThan(4);
      for (const name of containers) {
        const state = await containerState(name);
        if (state.exitCode !== 0) throw new Error(`mover task ${name} exited ${state.exitCode}: ${await lastLogLine(name)}`);
      }
    } finally {
      await src.end();
      await dst.end();
    }
  });
});
