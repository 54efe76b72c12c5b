import * as fs from 'fs';
import * as net from 'net';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { CloudAssembly } from 'aws-cdk-lib/cx-api';
import { cellStackPropsOf } from '../../../lib/app';
import { CellStack } from '../../../lib/constructs/cell';
import { until } from '../../support/cells';
import { missingContainerTools } from '../../support/containers';
import { buildContainerImage, ContainerDefinition, containerState, environmentOf, lastLogLine, removeAll, resourcesOf, runContainer, signal } from '../../support/ecs-task';
import { cdkApp, exampleFleet } from '../../support/fleet';
import { Moto, motoClientConfig, startMoto } from '../../support/moto';
import { enableTestTls, startTestPostgres, TestPostgres } from '../../support/postgres';
import { api } from '../../support/workload';

/**
 * The reference workload's image, as a Fargate cell's task definition runs it: its environment from
 * the synthesized template (no password in it: DB_SECRET_ARN names the secret, read from Secrets
 * Manager at connect time, and TLS to the database verified, DB_SSL being on with a secret), against
 * a real PostgreSQL with TLS, with moto standing in for Secrets Manager and SQS.
 *
 * What the test gives that AWS would: the values the template leaves to deploy time (database
 * endpoint, secret ARN, queue URL), the AWS endpoint and credentials, and the CA the test database's
 * certificate chains to (NODE_EXTRA_CA_CERTS pointed at it instead of the RDS bundle).
 */
const CELL = 'canary-eu';
const missing = missingContainerTools();
const describeImages = missing ? describe.skip : describe;
if (missing) test('the image tests can run here', () => { throw new Error(`image tests: ${missing}`); });

const NAME = `workload-${process.pid}`;

describeImages('the workload image, as a cell runs it', () => {
  let pg: TestPostgres;
  let moto: Moto;
  let certDir: string;
  let base: string;

  beforeAll(async () => {
    await removeAll([NAME]);
    const fleet = exampleFleet();
    const app = cdkApp();
    const stack = new CellStack(app, `cell-${CELL}`, cellStackPropsOf(fleet, fleet.cells.find((c) => c.id === CELL)!));
    const assembly: CloudAssembly = app.synth();
    const definitions = resourcesOf(assembly, stack.stackName, 'AWS::ECS::TaskDefinition').flatMap((t) => t.ContainerDefinitions as ContainerDefinition[]);
    const def = definitions.find((d) => (d.Environment ?? []).some((e) => e.Name === 'HEALTH_CHECK_PATH'))!;
    const image = (await buildContainerImage(assembly, def)).tag;

    pg = await startTestPostgres();
    const database = await pg.database('workload_image');
    // TLS on the test database: a certificate for 127.0.0.1 from a CA of the test's own.
    certDir = await enableTestTls(pg);

    moto = await startMoto();
    const region = fleet.cells.find((c) => c.id === CELL)!.region;
    const secrets = new SecretsManagerClient(motoClientConfig(moto, region));
    const secret = await secrets.send(new CreateSecretCommand({ Name: `${CELL}-db`, SecretString: JSON.stringify({ username: pg.server.user, password: pg.server.password }) }));
    const sqs = new SQSClient(motoClientConfig(moto, region));
    const queue = await sqs.send(new CreateQueueCommand({ QueueName: `${CELL}-work` }));
    secrets.destroy();
    sqs.destroy();

    const env: Record<string, string> = {
      // IDEMPOTENCY_TABLE: the example fleet's own table (cellResources); the reference workload does not read it.
      ...environmentOf(def, { DB_HOST: '127.0.0.1', DB_NAME: database, DB_SECRET_ARN: secret.ARN!, QUEUE_URL: queue.QueueUrl!, IDEMPOTENCY_TABLE: `${CELL}-idempotency-keys` }),
      // The template names the cell database's own (non-default) port and name; the test's are others.
      DB_PORT: String(pg.server.port), DB_NAME: database,
    };
    const port = Number(env.PORT);
    const free = await new Promise<boolean>((resolve) => {
      const probe = net.createServer().once('error', () => resolve(false)).listen(port, '0.0.0.0', () => probe.close(() => resolve(true)));
    });
    if (!free) throw new Error(`workload: port ${port} is in use on this machine; the container binds it (host network)`);
    expect(env).not.toHaveProperty('DB_PASSWORD');
    await runContainer({
      name: NAME, image, def, binds: [`${certDir}:/etc/ssl/test-db`],
      env: {
        ...env, AWS_ENDPOINT_URL: moto.endpoint, AWS_ACCESS_KEY_ID: 'testing', AWS_SECRET_ACCESS_KEY: 'testing',
        NODE_EXTRA_CA_CERTS: '/etc/ssl/test-db/ca.pem',
      },
    });
    base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 120_000;
    while ((await api(base, 'GET', env.HEALTH_CHECK_PATH)).status !== 200) {
      const state = await containerState(NAME);
      if (!state.running) throw new Error(`workload: container exited ${state.exitCode} before it was healthy: ${await lastLogLine(NAME)}`);
      if (Date.now() > deadline) throw new Error(`workload: ${env.HEALTH_CHECK_PATH} not 200 after 120 s: ${await lastLogLine(NAME)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }, 1_200_000);

  afterAll(async () => {
    if (process.env.KEEP_CONTAINERS !== '1') await removeAll([NAME]);
    await moto?.stop();
    await pg?.destroy();
    if (certDir) fs.rmSync(certDir, { recursive: true, force: true });
  });

  it('serves the items API per tenant from the database, over TLS with the password from the secret', async () => {
    const created = await api(base, 'POST', '/v1/items', 'acme', { name: 'from the image' });
    expect(created.status).toBe(201);
    expect((await api(base, 'GET', `/v1/items/${created.body.id}`, 'acme')).body).toMatchObject({ tenantId: 'acme', data: { name: 'from the image' } });
    // The work queue (SQS, its URL from the template) took the item's message and the consumer processed it.
    await until('the item to be processed through the queue', async () => (await api(base, 'GET', `/v1/items/${created.body.id}`, 'acme')).body.processedAt !== null, 60_000);
    // Another tenant does not see it.
    expect((await api(base, 'GET', `/v1/items/${created.body.id}`, 'globex')).status).toBe(404);
    const db = await pg.client('postgres');
    try {
      // The workload's sessions came over TLS.
      const { rows } = await db.query("select count(*)::int as n from pg_stat_ssl join pg_stat_activity using (pid) where ssl and usename = $1 and pid <> pg_backend_pid()", [pg.server.user]);
      expect(rows[0].n).toBeGreaterThan(0);
    } finally {
      await db.end();
    }
  });

  it('stops on SIGTERM after finishing, exit code 0', async () => {
    await signal(NAME, 'SIGTERM');
    await until('the workload to exit', async () => !(await containerState(NAME)).running, 60_000);
    expect((await containerState(NAME)).exitCode).toBe(0);
  });
});
