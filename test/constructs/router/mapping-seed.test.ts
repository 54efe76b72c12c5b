import { execFile } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as path from 'path';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { App, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { MappingBucket, MappingSeed } from '../../../lib/constructs/router/mapping-bucket';
import { handler, responseBody, SeedEvent, seedResponse, SeedResponse, sendResponse } from '../../../lib/runtime/handlers/mapping-seed-handler';
import { pinKey } from '../../../lib/domain/mapping';
import { groupKey, MappingStore, publishMapping, serializeMapping, versionKey } from '../../../lib/adapters/mapping-store';
import { cdkApp } from '../../support/fleet';
import { NOW, sampleMapping } from '../../support/mapping';
import { Moto, motoClientConfig, startMoto } from '../../support/moto';

/** What the fake S3 saw of one request. */
interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * A stand-in for S3 (path-style, on loopback) and for CloudFormation's presigned response URL
 * (`/response/...`). S3 answers are queued per test: a status (412 and 409 with S3's XML error, as
 * S3 sends them) or `hang` (never answers).
 */
class FakeAws {
  readonly seen: Seen[] = [];
  readonly responses: SeedResponse[] = [];
  s3Answers: (number | 'hang')[] = [];
  responseAnswers: number[] = [];
  private readonly server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      if (req.url?.startsWith('/response/')) {
        const status = this.responseAnswers.shift() ?? 200;
        if (status === 200) this.responses.push(JSON.parse(body) as SeedResponse);
        res.writeHead(status).end();
        return;
      }
      this.seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const answer = this.s3Answers.shift() ?? 200;
      if (answer === 'hang') return;
      if (answer === 200) {
        res.writeHead(200, { etag: '"abc"' }).end();
        return;
      }
      const code = { 403: 'AccessDenied', 409: 'ConditionalRequestConflict', 412: 'PreconditionFailed' }[answer] ?? 'InternalError';
      res
        .writeHead(answer, { 'content-type': 'application/xml' })
        .end(
          `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${code} from the stand-in</Message><RequestId>r1</RequestId></Error>`,
        );
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const DOCUMENT = '{\n  "schemaVersion": 1,\n  "version": 1\n}\n';

describe('MappingSeed handler', () => {
  const aws = new FakeAws();
  let endpoint: string;
  let s3: S3Client;
  beforeAll(async () => {
    endpoint = await aws.start();
    s3 = new S3Client({
      endpoint,
      forcePathStyle: true,
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' },
      maxAttempts: 1,
    });
  });
  afterEach(() => jest.restoreAllMocks());
  afterAll(async () => {
    s3.destroy();
    await aws.stop();
  });
  beforeEach(() => {
    // The handler logs one JSON line per seed (CloudWatch Logs in Lambda); not needed here.
    jest.spyOn(console, 'log').mockImplementation(() => undefined);
    aws.seen.length = 0;
    aws.responses.length = 0;
    aws.s3Answers = [];
    aws.responseAnswers = [];
  });

  const event = (requestType: SeedEvent['RequestType'], extra: Partial<SeedEvent> = {}): SeedEvent => ({
    RequestType: requestType,
    ResponseURL: `${endpoint}/response/1?X-Amz-Signature=x`,
    StackId: 'arn:aws:cloudformation:eu-west-1:222222222222:stack/orders-router-eu-west-1/0f0e0d0c-1111-2222-3333-444455556666',
    RequestId: 'req-1',
    LogicalResourceId: 'MappingSeedmappingsv1jsonPut46CA0C0F',
    ResourceProperties: { Bucket: 'orders-mappings-0f0e0d0c', Key: 'mappings/v1.json', Body: DOCUMENT, ContentType: 'application/json' },
    ...extra,
  });
  const context = { getRemainingTimeInMillis: () => 120_000 };

  it('creates with If-None-Match: * on the wire, and reports the key as the physical id', async () => {
    const response = await seedResponse(event('Create'), context, s3);
    expect(response).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: 'mappings/v1.json', Data: { Outcome: 'written' }, RequestId: 'req-1' });
    expect(aws.seen).toHaveLength(1);
    const [put] = aws.seen;
    expect(put.method).toBe('PUT');
    expect(put.url.split('?')[0]).toBe('/orders-mappings-0f0e0d0c/mappings/v1.json');
    expect(put.headers['if-none-match']).toBe('*');
    expect(put.headers['content-type']).toBe('application/json');
    expect(put.body).toBe(DOCUMENT);
  });

  it('takes 412 PreconditionFailed as "already there": success, nothing overwritten', async () => {
    aws.s3Answers = [412];
    const response = await seedResponse(event('Create'), context, s3);
    expect(response).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: 'mappings/v1.json', Data: { Outcome: 'exists' } });
    expect(aws.seen).toHaveLength(1);
    expect(aws.seen[0].headers['if-none-match']).toBe('*');
  });

  it('retries 409 ConditionalRequestConflict (a concurrent write), still conditionally', async () => {
    aws.s3Answers = [409, 409, 412];
    const response = await seedResponse(event('Create'), context, s3, { retryDelayMs: 10 });
    expect(response).toMatchObject({ Status: 'SUCCESS', Data: { Outcome: 'exists' } });
    expect(aws.seen.map((s) => s.headers['if-none-match'])).toEqual(['*', '*', '*']);
  });

  it("retries 403 AccessDenied for a while (a first deploy's new role and policies are not seen everywhere at once)", async () => {
    aws.s3Answers = [403, 403, 200];
    const response = await seedResponse(event('Create'), context, s3, { retryDelayMs: 10 });
    expect(response).toMatchObject({ Status: 'SUCCESS', Data: { Outcome: 'written' } });
    expect(aws.seen.map((s) => s.headers['if-none-match'])).toEqual(['*', '*', '*']);
  });

  it("fails the create with the reason and what to fix when S3 keeps refusing, keeping a physical id for the rollback's delete", async () => {
    aws.s3Answers = Array(100).fill(403);
    const response = await seedResponse(event('Create'), context, s3, { retryDelayMs: 10, accessDeniedMs: 200 });
    expect(aws.seen.length).toBeGreaterThan(1);
    expect(response.Status).toBe('FAILED');
    expect(response.PhysicalResourceId).toBe('mappings/v1.json');
    expect(response.Reason).toMatch(/s3:\/\/orders-mappings-0f0e0d0c\/mappings\/v1\.json failed: AccessDenied \(HTTP 403\)/);
    expect(response.Reason).toMatch(/s3:PutObject/);
  });

  it('answers FAILED before the Lambda would be stopped when S3 never answers', async () => {
    aws.s3Answers = ['hang'];
    // 1.5 s left after the 10 s kept back for answering.
    const response = await seedResponse(event('Create'), { getRemainingTimeInMillis: () => 11_500 }, s3);
    expect(response.Status).toBe('FAILED');
    expect(response.Reason).toMatch(/no answer from S3 within 1500 ms/);
  });

  it("does nothing on update (later documents are the operator's) and keeps the physical id", async () => {
    const response = await seedResponse(
      event('Update', {
        PhysicalResourceId: 'mappings/v1.json',
        ResourceProperties: { Bucket: 'orders-mappings-0f0e0d0c', Key: 'mappings/v1.json', Body: '{"changed":true}' },
      }),
      context,
      s3,
    );
    expect(response).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: 'mappings/v1.json' });
    expect(aws.seen).toEqual([]);
  });

  it("does nothing on delete (the bucket and its documents are retained), also for a failed create's rollback", async () => {
    for (const physical of ['mappings/v1.json', 'groups/main/mapping.json']) {
      const response = await seedResponse(event('Delete', { PhysicalResourceId: physical }), context, s3);
      expect(response).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: physical });
    }
    expect(aws.seen).toEqual([]);
  });

  it('fails a create whose properties are missing, saying which', async () => {
    const response = await seedResponse(event('Create', { ResourceProperties: { Bucket: 'b', Key: 'k' } }), context, s3);
    expect(response).toMatchObject({ Status: 'FAILED', PhysicalResourceId: 'k' });
    expect(response.Reason).toMatch(/missing properties Body/);
    expect(aws.seen).toEqual([]);
  });

  it('answers CloudFormation through the response URL, retrying a 5xx, within 4096 bytes', async () => {
    aws.responseAnswers = [503];
    const response: SeedResponse = {
      Status: 'FAILED',
      Reason: 'x'.repeat(10_000),
      PhysicalResourceId: 'k',
      StackId: 's',
      RequestId: 'r',
      LogicalResourceId: 'l',
    };
    await sendResponse(`${endpoint}/response/2`, response, 3, 10);
    expect(aws.responses).toHaveLength(1);
    expect(aws.responses[0]).toMatchObject({ Status: 'FAILED', PhysicalResourceId: 'k', RequestId: 'r' });
    expect(Buffer.byteLength(responseBody(response))).toBeLessThanOrEqual(4096);
    aws.responseAnswers = [403];
    await expect(sendResponse(`${endpoint}/response/3`, response, 3, 10)).rejects.toThrow(/could not answer CloudFormation \(HTTP 403\)/);
  });

  it('the entry point answers CloudFormation on the error path too', async () => {
    // An event without properties on Create: the handler's own client is never used.
    await handler(event('Create', { ResourceProperties: {} }), context);
    expect(aws.responses).toEqual([expect.objectContaining({ Status: 'FAILED', PhysicalResourceId: 'MappingSeedmappingsv1jsonPut46CA0C0F' })]);
  });
});

describe('MappingSeed construct', () => {
  let app: App;
  let stack: Stack;
  let template: Template;
  let seed: MappingSeed;
  const aws = new FakeAws();
  let endpoint: string;
  beforeAll(async () => {
    endpoint = await aws.start();
    app = cdkApp({ bundling: true });
    stack = new Stack(app, 'seed', { env: { account: '222222222222', region: 'eu-west-1' } });
    const role = new iam.Role(stack, 'CustomResourceRole', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    const mappings = new MappingBucket(stack, 'Mappings', {
      namePrefix: 'orders-mappings',
      parameterName: '/orders/router/mapping-bucket',
      keptVersions: 3,
      writerRoleArns: [role.roleArn],
    });
    seed = new MappingSeed(stack, 'MappingSeed', { bucket: mappings.bucket, documentText: DOCUMENT, version: 1, groups: ['canary', 'main'], role });
    role.addToPolicy(new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: seed.keys.map((key) => mappings.bucket.arnForObjects(key)) }));
    template = Template.fromStack(stack);
  });
  afterAll(async () => {
    await aws.stop();
  });

  it('is one custom resource per key on its own bundled handler, bounded in time', () => {
    const seeds = template.findResources('Custom::MappingSeed');
    expect(Object.keys(seeds).sort()).toEqual([
      expect.stringMatching(/^MappingSeedgroupscanarymappingjsonPut/),
      expect.stringMatching(/^MappingSeedgroupsmainmappingjsonPut/),
      expect.stringMatching(/^MappingSeedmappingsv1jsonPut/),
    ]);
    const [fnId] = Object.keys(template.findResources('AWS::Lambda::Function'));
    for (const r of Object.values(seeds)) {
      expect(r.Properties).toMatchObject({
        ServiceToken: { 'Fn::GetAtt': [fnId, 'Arn'] },
        ServiceTimeout: '300',
        Body: DOCUMENT,
        ContentType: 'application/json',
      });
    }
    template.hasResourceProperties('AWS::Lambda::Function', { Runtime: 'nodejs24.x', Handler: 'index.handler', Timeout: 120 });
    // No AwsCustomResource (whose SDK is the runtime's) is left.
    expect(JSON.stringify(template.toJSON())).not.toMatch(/AWS679f53fac002430cb0da5b7982bd2287/);
  });

  it('lets a group pointer follow the groups already there: Follow on pointers only, and reads of the pointers alone', () => {
    for (const [id, r] of Object.entries(template.findResources('Custom::MappingSeed'))) {
      expect([id, r.Properties.Follow]).toEqual([id, id.startsWith('MappingSeedgroups') ? 'groups/' : undefined]);
    }
    const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap((p) => p.Properties.PolicyDocument.Statement) as {
      Action: string;
      Resource: unknown;
      Condition?: unknown;
    }[];
    const list = statements.find((st) => st.Action === 's3:ListBucket')!;
    expect(list.Condition).toEqual({ StringEquals: { 's3:prefix': 'groups/' } });
    const read = statements.find((st) => st.Action === 's3:GetObject')!;
    expect(JSON.stringify(read.Resource)).toMatch(/"\/groups\/\*"\]\]\}$/);
  });

  it('passes cdk-nag', () => {
    expect(new AwsSolutionsChecks().validateScope(stack).violations.map((v) => v.ruleName)).toEqual([]);
  });

  it('ships a bundle whose own SDK sends If-None-Match: * (run as Lambda would, against a stand-in S3)', async () => {
    const assembly = app.synth();
    // The function's code asset, as the asset manifest hands it to the publishing step.
    const [fn] = Object.values(template.findResources('AWS::Lambda::Function'));
    const manifest = JSON.parse(fs.readFileSync(path.join(assembly.directory, `${stack.artifactId}.assets.json`), 'utf8')) as {
      files: Record<string, { source: { path: string; packaging: string } }>;
    };
    const asset = manifest.files[(fn.Properties.Code.S3Key as string).replace(/\.zip$/, '')];
    expect(asset.source.packaging).toBe('zip');
    const bundle = path.join(assembly.directory, asset.source.path, 'index.js');
    // The SDK is inside the bundle, not resolved from node_modules.
    expect(fs.readFileSync(bundle, 'utf8')).toMatch(/If-None-Match/);
    const script = `require(${JSON.stringify(bundle)}).handler(JSON.parse(process.env.SEED_EVENT), { getRemainingTimeInMillis: () => 60000 }).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); })`;
    const seedEvent: SeedEvent = {
      RequestType: 'Create',
      ResponseURL: `${endpoint}/response/bundle`,
      StackId: 'stack',
      RequestId: 'req-b',
      LogicalResourceId: 'Seed',
      ResourceProperties: { Bucket: 'orders-mappings-0f0e0d0c', Key: 'groups/main/mapping.json', Body: DOCUMENT, ContentType: 'application/json' },
    };
    const run = () =>
      new Promise<void>((resolve, reject) => {
        execFile(
          process.execPath,
          ['-e', script],
          {
            cwd: path.dirname(bundle),
            env: {
              PATH: process.env.PATH,
              SEED_EVENT: JSON.stringify(seedEvent),
              AWS_REGION: 'eu-west-1',
              AWS_ACCESS_KEY_ID: 'AKIDTEST',
              AWS_SECRET_ACCESS_KEY: 'secret',
              AWS_ENDPOINT_URL_S3: endpoint,
              AWS_MAX_ATTEMPTS: '1',
            },
          },
          (error, _stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve()),
        );
      });
    aws.s3Answers = [200];
    await run();
    aws.s3Answers = [412];
    await run();
    expect(aws.seen.map((s) => [s.method, s.url.split('?')[0], s.headers['if-none-match']])).toEqual([
      ['PUT', '/orders-mappings-0f0e0d0c/groups/main/mapping.json', '*'],
      ['PUT', '/orders-mappings-0f0e0d0c/groups/main/mapping.json', '*'],
    ]);
    expect(aws.responses.map((r) => [r.Status, r.PhysicalResourceId, r.Data?.Outcome])).toEqual([
      ['SUCCESS', 'groups/main/mapping.json', 'written'],
      ['SUCCESS', 'groups/main/mapping.json', 'exists'],
    ]);
  });
});

/**
 * The seed of a group added after the fleet published, against moto's S3 (listing, conditional
 * writes): the new group's pointer starts on the document the existing groups are on.
 */
describe('MappingSeed handler: a group added later follows the version in force (moto)', () => {
  let moto: Moto;
  let s3: S3Client;
  let store: MappingStore;
  const BUCKET = 'orders-mappings-follow';
  beforeAll(async () => {
    moto = await startMoto();
    s3 = new S3Client({ ...motoClientConfig(moto, 'eu-west-1'), forcePathStyle: true });
    store = new MappingStore(s3, BUCKET);
  });
  afterAll(async () => {
    s3?.destroy();
    await moto?.stop();
  });
  beforeEach(async () => {
    jest.spyOn(console, 'log').mockImplementation(() => undefined);
    await moto.reset();
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET, CreateBucketConfiguration: { LocationConstraint: 'eu-west-1' } }));
  });
  afterEach(() => jest.restoreAllMocks());

  const v1 = sampleMapping(4);
  const create = (key: string, follow = true): SeedEvent => ({
    RequestType: 'Create',
    ResponseURL: 'http://unused',
    StackId: 'stack',
    RequestId: `req-${key}`,
    LogicalResourceId: key.replace(/[^A-Za-z0-9]/g, ''),
    ResourceProperties: {
      Bucket: BUCKET,
      Key: key,
      Body: serializeMapping(v1),
      ContentType: 'application/json',
      ...(follow ? { Follow: 'groups/' } : {}),
    },
  });
  const context = { getRemainingTimeInMillis: () => 120_000 };

  it('seeds version 1 on a first deploy, every pointer at once', async () => {
    const responses = await Promise.all(
      [versionKey(1), groupKey('canary'), groupKey('main')].map((key) => seedResponse(create(key, key.startsWith('groups/')), context, s3)),
    );
    expect(responses.map((r) => r.Status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
    for (const group of ['canary', 'main']) expect((await store.readGroup(group))!.document).toEqual(v1);
  });

  it('gives a group added later the version the existing groups are on, not version 1; the lowest while a publish is under way', async () => {
    const groups = ['canary', 'main'];
    await publishMapping(store, v1, { groups, bakeSeconds: 0 });
    const v2 = pinKey(v1, 'tenant-1', Object.keys(v1.cells)[1], NOW);
    const v3 = pinKey(v2, 'tenant-2', Object.keys(v1.cells)[2], NOW);
    await publishMapping(store, v2, { groups, bakeSeconds: 0 });
    const added = await seedResponse(create(groupKey('tail')), context, s3);
    expect(added).toMatchObject({ Status: 'SUCCESS', Data: { Outcome: 'followed', Version: 2 } });
    expect((await store.readGroup('tail'))!.document).toEqual(v2);
    // A publish under way: canary on v3, the others on v2. A group added now starts on v2, which every group has reached.
    await publishMapping(store, v3, { groups: [...groups, 'tail'], onlyGroup: 'canary', bakeSeconds: 0 });
    expect(await seedResponse(create(groupKey('late')), context, s3)).toMatchObject({ Data: { Outcome: 'followed', Version: 2 } });
    // The publish goes on over the added groups as over any other.
    await publishMapping(store, v3, { groups: [...groups, 'tail', 'late'], bakeSeconds: 0 });
    for (const group of [...groups, 'tail', 'late']) expect((await store.readGroup(group))!.document.version).toBe(3);
  });

  it('leaves an existing pointer alone (an operator published to the group before it was deployed)', async () => {
    await publishMapping(store, v1, { groups: ['canary', 'main', 'tail'], bakeSeconds: 0 });
    const v2 = pinKey(v1, 'tenant-1', Object.keys(v1.cells)[1], NOW);
    await publishMapping(store, v2, { groups: ['canary', 'main', 'tail'], onlyGroup: 'tail', bakeSeconds: 0 });
    expect(await seedResponse(create(groupKey('tail')), context, s3)).toMatchObject({ Data: { Outcome: 'exists' } });
    expect((await store.readGroup('tail'))!.document.version).toBe(2);
  });

  it('fails, saying which pointer, when a pointer it would follow is not a mapping', async () => {
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: groupKey('main'), Body: 'not json' }));
    const failed = await seedResponse(create(groupKey('tail')), context, s3);
    expect(failed).toMatchObject({ Status: 'FAILED' });
    expect(failed.Reason).toMatch(/s3:\/\/orders-mappings-follow\/groups\/main\/mapping.json holds no mapping version/);
    await expect(store.readGroup('tail')).resolves.toBeUndefined();
  });
});
