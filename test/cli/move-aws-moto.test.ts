import {
  CreateClusterCommand,
  DescribeTasksCommand,
  ECSClient,
  ListTasksCommand,
  RegisterTaskDefinitionCommand,
  StopTaskCommand,
} from '@aws-sdk/client-ecs';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { awsMoveContext, AwsMoveContext } from '../../lib/cli/move-aws';
import { Fleet } from '../../lib/domain/fleet';
import { MOVER_CONTAINER, MoverTaskInfo } from '../../lib/domain/names/move-bucket';
import { mappingBucketParameter, moveBucketParameter, moveOperatorRoleName, moverLauncherRoleName, moverParameter } from '../../lib/domain/names';
import { MoveRecord } from '../../lib/operations/moves';
import { exampleFleet } from '../support/fleet';
import { Moto, startMoto } from '../support/moto';

/**
 * `cellctl move`'s AWS wiring (lib/cli/move-aws.ts) against moto, end to end through the SDK's own
 * credential and endpoint handling (AWS_ENDPOINT_URL): the caller is not the move operator, so it
 * assumes `<app>-move-operator` in the router account (moto gives an assumed role its account's own
 * namespace), reads the move bucket and the mapping buckets from SSM there, keeps move records and
 * the hand-off in the move bucket, and runs a cell's mover with ECS RunTask in the cell's account
 * through its launcher role, reading the task's parameter from the cell's SSM.
 */
describe('cellctl move on AWS, against moto', () => {
  let moto: Moto;
  let fleet: Fleet;
  const saved: Record<string, string | undefined> = {};
  const ENV = {
    AWS_ENDPOINT_URL: '',
    AWS_ACCESS_KEY_ID: 'testing',
    AWS_SECRET_ACCESS_KEY: 'testing',
    S3_FORCE_PATH_STYLE: 'true',
    AWS_PROFILE: undefined,
    AWS_SESSION_TOKEN: undefined,
  };

  /** SDK clients acting in `account` (an assumed role there), in `region`. */
  const as = async (account: string, role: string, region: string) => {
    const sts = new STSClient({ region, endpoint: moto.endpoint });
    const { Credentials: c } = await sts.send(new AssumeRoleCommand({ RoleArn: `arn:aws:iam::${account}:role/${role}`, RoleSessionName: 'seed' }));
    sts.destroy();
    const credentials = { accessKeyId: c!.AccessKeyId!, secretAccessKey: c!.SecretAccessKey!, sessionToken: c!.SessionToken };
    const config = { region, endpoint: moto.endpoint, credentials };
    return {
      s3: new S3Client({ ...config, forcePathStyle: true }),
      ssm: new SSMClient(config),
      ecs: new ECSClient(config),
      accessKeyId: credentials.accessKeyId,
    };
  };
  type Clients = Awaited<ReturnType<typeof as>>;
  const destroy = (c: Clients | undefined) => {
    if (c) for (const client of [c.s3, c.ssm, c.ecs]) client.destroy();
  };

  /** An EC2 Query API call to moto as `clients`' account (this project has no EC2 client); the text of the answer. */
  const ec2 = async (clients: Clients, region: string, params: Record<string, string>) => {
    const response = await fetch(moto.endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `AWS4-HMAC-SHA256 Credential=${clients.accessKeyId}/20261201/${region}/ec2/aws4_request, SignedHeaders=host, Signature=0`,
      },
      body: new URLSearchParams({ Version: '2016-11-15', ...params }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`EC2 ${params.Action}: ${response.status} ${text}`);
    return text;
  };

  const MOVES_BUCKET = 'orders-moves-222222222222-abcdef012345';
  let context: AwsMoveContext;
  let router: Clients;
  let source: Clients;
  let info: MoverTaskInfo;

  beforeAll(async () => {
    moto = await startMoto();
    for (const [k, v] of Object.entries({ ...ENV, AWS_ENDPOINT_URL: moto.endpoint })) {
      saved[k] = process.env[k];
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    fleet = exampleFleet();
    const home = Object.keys(fleet.regions)[0];
    // What the router stacks make, in the router account: the move bucket, each region's mapping bucket, the parameters naming them.
    router = await as(fleet.accounts.router, moveOperatorRoleName(fleet.app), home);
    await router.s3.send(new CreateBucketCommand({ Bucket: MOVES_BUCKET, CreateBucketConfiguration: { LocationConstraint: home as 'eu-west-1' } }));
    await router.ssm.send(new PutParameterCommand({ Name: moveBucketParameter(fleet.app), Value: MOVES_BUCKET, Type: 'String' }));
    for (const region of Object.keys(fleet.regions)) {
      const r = await as(fleet.accounts.router, moveOperatorRoleName(fleet.app), region);
      const bucket = `orders-mappings-${region}-abcdef012345`;
      await r.s3.send(
        new CreateBucketCommand({
          Bucket: bucket,
          ...(region === 'us-east-1' ? {} : { CreateBucketConfiguration: { LocationConstraint: region as 'eu-west-1' } }),
        }),
      );
      await r.ssm.send(new PutParameterCommand({ Name: mappingBucketParameter(fleet.app), Value: bucket, Type: 'String' }));
    }
    // What a cell stack makes, in the cell's account: the mover cluster, task definition and parameter.
    const cell = fleet.cells.find((c) => c.id === 'eu-1')!;
    source = await as(cell.account, moverLauncherRoleName(fleet.app, cell.id), cell.region);
    await source.ecs.send(new CreateClusterCommand({ clusterName: 'orders-eu-1-mover' }));
    await source.ecs.send(
      new RegisterTaskDefinitionCommand({
        // moto 5.2 sums the containers' own memory to place a task (a TypeError without it); Fargate takes the task's.
        family: 'orders-eu-1-mover',
        requiresCompatibilities: ['FARGATE'],
        networkMode: 'awsvpc',
        cpu: '256',
        memory: '512',
        containerDefinitions: [{ name: MOVER_CONTAINER, image: 'mover:latest', essential: true, memory: 512 }],
      }),
    );
    // The cell's private subnet and the mover's security group (moto checks that RunTask's exist).
    const vpc = /<vpcId>([^<]+)/.exec(await ec2(source, cell.region, { Action: 'CreateVpc', CidrBlock: cell.cidr }))![1];
    // DNS hostnames on, as in a cell VPC (aws-cdk-lib's default); moto 5.2.1 fails RunTask of an awsvpc task in a VPC without them.
    await ec2(source, cell.region, { Action: 'ModifyVpcAttribute', VpcId: vpc, 'EnableDnsHostnames.Value': 'true' });
    const subnet = /<subnetId>([^<]+)/.exec(
      await ec2(source, cell.region, { Action: 'CreateSubnet', VpcId: vpc, CidrBlock: cell.cidr.replace(/\/\d+$/, '/24') }),
    )![1];
    const group = /<groupId>([^<]+)/.exec(
      await ec2(source, cell.region, { Action: 'CreateSecurityGroup', VpcId: vpc, GroupName: 'mover', GroupDescription: 'mover' }),
    )![1];
    info = {
      cluster: 'orders-eu-1-mover',
      taskDefinition: 'orders-eu-1-mover',
      container: MOVER_CONTAINER,
      subnets: [subnet],
      securityGroups: [group],
    };
    await source.ssm.send(new PutParameterCommand({ Name: moverParameter(fleet.app, 'eu-1'), Value: JSON.stringify(info), Type: 'String' }));
    context = await awsMoveContext(fleet, { clock: { now: () => new Date(), sleep: (ms) => new Promise((r) => setTimeout(r, Math.min(ms, 50))) } });
  }, 60_000);

  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    destroy(router);
    destroy(source);
    await moto?.stop();
  });

  const record = (id: string): MoveRecord => ({
    id,
    subject: { kind: 'tenant', tenant: 'acme' },
    source: 'eu-1',
    target: 'eu-2',
    bucketCount: 16384,
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
  });

  it("keeps move records in the router account's move bucket, found through SSM, as the assumed operator role", async () => {
    expect(context.description).toBe(`s3://${MOVES_BUCKET}`);
    const created = await context.store.create(record('m-moto-1'));
    await expect(context.store.create(record('m-moto-1'))).rejects.toThrow(/m-moto-1/);
    const read = (await context.store.read('m-moto-1'))!;
    expect(read.tag).toBe(created.tag);
    await context.store.replace({ ...read.record, completed: 'cloned' }, read.tag);
    await expect(context.store.replace({ ...read.record, completed: 'caught-up' }, read.tag)).rejects.toThrow(/only one operator may drive a move/);
    await context.store.appendAudit('m-moto-1', { at: '2026-11-30T00:00:01.000Z', actor: 'a', event: 'planned' });
    expect((await context.store.readAudit('m-moto-1')).map((e) => e.event)).toEqual(['planned']);
    // Written as the assumed operator role of the router account (moto keeps one global bucket namespace and enforces no IAM, so this shows the wiring, not the grant).
    const listed = await router.s3.send(new ListObjectsV2Command({ Bucket: MOVES_BUCKET, Prefix: 'moves/m-moto-1/' }));
    expect((listed.Contents ?? []).map((o) => o.Key)).toEqual([
      expect.stringMatching(/^moves\/m-moto-1\/audit\/20261130T000001000Z-[0-9a-f]+\.json$/),
      'moves/m-moto-1/move.json',
    ]);
  });

  it("runs a cell's mover with ECS RunTask in the cell's account: request in, task started with the request's keys, result out", async () => {
    // The mover, as moto cannot run it: answer the request the runner wrote, then stop the task.
    const answered: string[] = [];
    let stop = false;
    const mover = (async () => {
      while (!stop) {
        const tasks = await source.ecs.send(new ListTasksCommand({ cluster: info.cluster, desiredStatus: 'RUNNING' }));
        const pending = await router.s3.send(new ListObjectsV2Command({ Bucket: MOVES_BUCKET, Prefix: 'tasks/' }));
        const requests = (pending.Contents ?? []).map((o) => o.Key!).filter((k) => k.endsWith('/request.json') && !answered.includes(k));
        if (requests.length > 0 && (tasks.taskArns ?? []).length > 0) {
          for (const key of requests) {
            const request = JSON.parse(
              await (await router.s3.send(new GetObjectCommand({ Bucket: MOVES_BUCKET, Key: key }))).Body!.transformToString(),
            );
            expect(request).toMatchObject({ op: 'schemaVersion', cell: 'eu-1' });
            await router.s3.send(
              new PutObjectCommand({
                Bucket: MOVES_BUCKET,
                Key: key.replace(/request\.json$/, 'result.json'),
                Body: JSON.stringify({ ok: true, value: 7 }),
              }),
            );
            answered.push(key);
          }
          for (const task of tasks.taskArns!) await source.ecs.send(new StopTaskCommand({ cluster: info.cluster, task, reason: 'done' }));
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      const cell = context.cell('eu-1', 16384);
      expect(
        await cell.schemaVersion().catch((e) => {
          throw new Error(`${e.message}\n${moto.log().slice(-3000)}`);
        }),
      ).toBe(7);
    } finally {
      stop = true;
      await mover;
    }
    // The request sits under the cell's account, as the mover task role may read it.
    const account = fleet.cells.find((c) => c.id === 'eu-1')!.account;
    expect(answered).toEqual([expect.stringMatching(new RegExp(`^tasks/${account}/\\d{17}-schemaversion-[0-9a-f]{8}/request\\.json$`))]);
    const stopped = await source.ecs.send(new ListTasksCommand({ cluster: info.cluster, desiredStatus: 'STOPPED' }));
    expect(stopped.taskArns).toHaveLength(1);
    // Started on Fargate in the cell's subnet, told where its request and result are.
    const [task] = (await source.ecs.send(new DescribeTasksCommand({ cluster: info.cluster, tasks: stopped.taskArns }))).tasks!;
    expect(task).toMatchObject({ launchType: 'FARGATE', startedBy: 'cellctl-move' });
    expect(JSON.stringify(task.attachments)).toContain(info.subnets[0]);
    const environment = Object.fromEntries(
      task.overrides!.containerOverrides!.find((o) => o.name === MOVER_CONTAINER)!.environment!.map((e) => [e.name, e.value]),
    );
    expect(environment).toEqual({
      MOVE_BUCKET: MOVES_BUCKET,
      MOVE_BUCKET_REGION: 'eu-west-1',
      MOVE_REQUEST_KEY: answered[0],
      MOVE_RESULT_KEY: answered[0].replace(/request\.json$/, 'result.json'),
    });
  });
});
