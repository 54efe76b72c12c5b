import { execFile } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as path from 'path';
import { GetParameterCommand, ParameterNotFound, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { mockClient } from 'aws-sdk-client-mock';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CellEndpointLookup } from '../../../lib/constructs/router/cell-links';
import { LookupEvent, LookupResponse, lookupResponse } from '../../../lib/runtime/handlers/endpoint-lookup-handler';
import { cdkApp } from '../../support/fleet';
import { Moto, motoClientConfig, startMoto } from '../../support/moto';

/** An SDK error as the SDK throws it: name and HTTP status. */
const awsError = (name: string, status: number) =>
  Object.assign(new Error(`${name} from the stand-in`), { name, $metadata: { httpStatusCode: status } });
const STS_DENIED = () => awsError('AccessDenied', 403);
const SSM_DENIED = () => awsError('AccessDeniedException', 400);
const CREDENTIALS = { AccessKeyId: 'ASIATEST', SecretAccessKey: 'secret', SessionToken: 'token', Expiration: new Date(0) };
const ROLE = 'arn:aws:iam::111111111111:role/orders-c1-ep-reader';
const PARAMETER = '/orders/cell/c1/endpoint-service-name';
const SERVICE = 'com.amazonaws.vpce.eu-west-1.vpce-svc-0123456789abcdef0';

describe('Custom::CellEndpointServiceName handler', () => {
  const sts = mockClient(STSClient);
  const ssm = mockClient(SSMClient);
  /** A clock that only the handler's sleeps move, and the sleeps it asked for. */
  let clock: number;
  let sleeps: number[];
  const options = () => ({
    now: () => clock,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      clock += ms;
    },
  });
  /** The regions and credentials SSM clients were made with. */
  let made: { region: string; accessKeyId: string }[];
  const clients = () => ({
    sts: new STSClient({ region: 'eu-west-1' }),
    ssm: (region: string, credentials: { accessKeyId: string; secretAccessKey: string; sessionToken: string }) => {
      made.push({ region, accessKeyId: credentials.accessKeyId });
      return new SSMClient({ region, credentials });
    },
  });
  const context = { getRemainingTimeInMillis: () => 120_000 };
  const event = (requestType: LookupEvent['RequestType'], extra: Partial<LookupEvent> = {}): LookupEvent => ({
    RequestType: requestType,
    ResponseURL: 'http://unused',
    StackId: 'arn:aws:cloudformation:eu-west-1:222222222222:stack/orders-router-eu-west-1-CellLinks1/0f0e0d0c',
    RequestId: 'req-1',
    LogicalResourceId: 'Cellc1ServiceNameRead0A1B2C3D',
    ResourceProperties: { CellId: 'c1', RoleArn: ROLE, Region: 'us-east-1', ParameterName: PARAMETER, Fingerprint: '0123456789abcdef' },
    ...extra,
  });

  beforeEach(() => {
    sts.reset();
    ssm.reset();
    clock = 1_000_000;
    sleeps = [];
    made = [];
    jest.spyOn(console, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());
  afterAll(() => {
    sts.restore();
    ssm.restore();
  });

  it("reads the name in the cell's region as the reader role, and answers it as Parameter.Value with the fingerprinted physical id", async () => {
    sts.on(AssumeRoleCommand).resolves({ Credentials: CREDENTIALS });
    ssm.on(GetParameterCommand).resolves({ Parameter: { Name: PARAMETER, Value: SERVICE } });
    const response = await lookupResponse(event('Create'), context, clients(), options());
    expect(response).toMatchObject({
      Status: 'SUCCESS',
      PhysicalResourceId: `c1:${PARAMETER}:0123456789abcdef`,
      Data: { 'Parameter.Value': SERVICE },
      RequestId: 'req-1',
    });
    expect(sts.commandCalls(AssumeRoleCommand).map((c) => c.args[0].input)).toEqual([
      expect.objectContaining({ RoleArn: ROLE, RoleSessionName: 'endpoint-lookup-c1' }),
    ]);
    expect(ssm.commandCalls(GetParameterCommand).map((c) => c.args[0].input)).toEqual([{ Name: PARAMETER }]);
    expect(made).toEqual([{ region: 'us-east-1', accessKeyId: 'ASIATEST' }]);
    expect(sleeps).toEqual([]);
  });

  it('retries AccessDenied on AssumeRole and on the read while IAM propagates, then succeeds', async () => {
    sts.on(AssumeRoleCommand).rejectsOnce(STS_DENIED()).rejectsOnce(STS_DENIED()).resolves({ Credentials: CREDENTIALS });
    ssm
      .on(GetParameterCommand)
      .rejectsOnce(SSM_DENIED())
      .rejectsOnce(SSM_DENIED())
      .resolves({ Parameter: { Name: PARAMETER, Value: SERVICE } });
    const response = await lookupResponse(event('Create'), context, clients(), options());
    expect(response).toMatchObject({ Status: 'SUCCESS', Data: { 'Parameter.Value': SERVICE } });
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(3);
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(3);
    // 1 s, then 2 s for each call.
    expect(sleeps).toEqual([1000, 2000, 1000, 2000]);
  });

  it("fails naming the role once AccessDenied lasts past a minute, keeping the physical id for the rollback's delete", async () => {
    sts.on(AssumeRoleCommand).rejects(STS_DENIED());
    const response = await lookupResponse(event('Create'), context, clients(), options());
    expect(response.Status).toBe('FAILED');
    expect(response.PhysicalResourceId).toBe(`c1:${PARAMETER}:0123456789abcdef`);
    expect(response.Reason).toContain(`Cell c1: assuming ${ROLE} failed: AccessDenied (HTTP 403)`);
    expect(response.Reason).toMatch(/cell stack must be deployed first/);
    // Retried until the next wait would pass the minute, and not after.
    expect(sleeps.reduce((a, b) => a + b, 0)).toBeLessThan(60_000);
    expect(sleeps.reduce((a, b) => a + b, 0) + Math.min(1000 * (sleeps.length + 1), 10_000)).toBeGreaterThanOrEqual(60_000);
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(sleeps.length + 1);
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(0);
  });

  it('shares the minute between AssumeRole and the read', async () => {
    sts.on(AssumeRoleCommand).rejectsOnce(STS_DENIED()).resolves({ Credentials: CREDENTIALS });
    ssm.on(GetParameterCommand).rejects(SSM_DENIED());
    const response = await lookupResponse(event('Update', { PhysicalResourceId: `c1:${PARAMETER}` }), context, clients(), options());
    expect(response.Status).toBe('FAILED');
    expect(response.Reason).toContain(`reading ${PARAMETER} in us-east-1 as ${ROLE} failed: AccessDeniedException (HTTP 400)`);
    expect(sleeps.reduce((a, b) => a + b, 0)).toBeLessThan(60_000);
  });

  it('fails at once on any other error', async () => {
    sts.on(AssumeRoleCommand).resolves({ Credentials: CREDENTIALS });
    ssm.on(GetParameterCommand).rejects(new ParameterNotFound({ message: 'not found', $metadata: { httpStatusCode: 400 } }));
    const response = await lookupResponse(event('Create'), context, clients(), options());
    expect(response).toMatchObject({ Status: 'FAILED' });
    expect(response.Reason).toContain(`reading ${PARAMETER} in us-east-1 as ${ROLE} failed: ParameterNotFound`);
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(1);
    expect(sleeps).toEqual([]);
    sts.reset();
    sts.on(AssumeRoleCommand).rejects(awsError('RegionDisabledException', 403));
    expect((await lookupResponse(event('Create'), context, clients(), options())).Reason).toMatch(
      /assuming .* failed: RegionDisabledException \(HTTP 403\)/,
    );
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it("re-reads on update under the new fingerprint's id (a replacement), and does nothing on delete", async () => {
    sts.on(AssumeRoleCommand).resolves({ Credentials: CREDENTIALS });
    ssm.on(GetParameterCommand).resolves({ Parameter: { Name: PARAMETER, Value: SERVICE } });
    const updated = await lookupResponse(event('Update', { PhysicalResourceId: `c1:${PARAMETER}:aaaaaaaaaaaaaaaa` }), context, clients(), options());
    expect(updated).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: `c1:${PARAMETER}:0123456789abcdef` });
    sts.reset();
    ssm.reset();
    const deleted = await lookupResponse(event('Delete', { PhysicalResourceId: `c1:${PARAMETER}:aaaaaaaaaaaaaaaa` }), context, clients(), options());
    expect(deleted).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: `c1:${PARAMETER}:aaaaaaaaaaaaaaaa` });
    expect(sts.calls()).toHaveLength(0);
    expect(ssm.calls()).toHaveLength(0);
  });

  it('fails a create whose properties are missing, saying which', async () => {
    const response = await lookupResponse(
      event('Create', { ResourceProperties: { CellId: 'c1', Region: 'us-east-1' } }),
      context,
      clients(),
      options(),
    );
    expect(response).toMatchObject({ Status: 'FAILED' });
    expect(response.Reason).toMatch(/missing properties RoleArn, ParameterName/);
    expect(sts.calls()).toHaveLength(0);
  });
});

/**
 * The bundled handler as Lambda runs it (its own SDK inside), against moto's STS and SSM: it assumes
 * the cell's reader role in the cell's account and reads the parameter in the cell's region, and
 * answers CloudFormation through the response URL (a stand-in on loopback).
 */
describe('CellEndpointLookup construct', () => {
  let app: App;
  let stack: Stack;
  let template: Template;
  let moto: Moto;
  const answers: LookupResponse[] = [];
  const responder = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      answers.push(JSON.parse(body) as LookupResponse);
      res.writeHead(200).end();
    });
  });
  let responseUrl: string;
  beforeAll(async () => {
    app = cdkApp({ bundling: true });
    stack = new Stack(app, 'lookup', { env: { account: '222222222222', region: 'eu-west-1' } });
    const role = new iam.Role(stack, 'CustomResourceRole', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    new CellEndpointLookup(stack, 'CellEndpointLookup', { role });
    template = Template.fromStack(stack);
    moto = await startMoto();
    await new Promise<void>((resolve) => responder.listen(0, '127.0.0.1', resolve));
    responseUrl = `http://127.0.0.1:${(responder.address() as AddressInfo).port}/response`;
  });
  afterAll(async () => {
    await moto?.stop();
    responder.closeAllConnections();
    await new Promise<void>((resolve) => responder.close(() => resolve()));
  });

  it('is a bundled function with its own log group, and passes cdk-nag', () => {
    template.hasResourceProperties('AWS::Lambda::Function', { Runtime: 'nodejs24.x', Handler: 'index.handler', Timeout: 120 });
    template.resourceCountIs('AWS::Logs::LogGroup', 1);
    expect(new AwsSolutionsChecks().validateScope(stack).violations.map((v) => v.ruleName)).toEqual([]);
  });

  it("ships a bundle that assumes the reader role and reads the name in the cell's region", async () => {
    const assembly = app.synth();
    const [fn] = Object.values(template.findResources('AWS::Lambda::Function'));
    const manifest = JSON.parse(fs.readFileSync(path.join(assembly.directory, `${stack.artifactId}.assets.json`), 'utf8')) as {
      files: Record<string, { source: { path: string } }>;
    };
    const bundle = path.join(assembly.directory, manifest.files[(fn.Properties.Code.S3Key as string).replace(/\.zip$/, '')].source.path, 'index.js');
    // The parameter, written in the cell's account (moto keeps accounts apart by the assumed role's).
    const sts = new STSClient(motoClientConfig(moto, 'eu-west-1'));
    const { Credentials: c } = await sts.send(new AssumeRoleCommand({ RoleArn: ROLE, RoleSessionName: 'cell-stack' }));
    const cellSsm = new SSMClient({
      ...motoClientConfig(moto, 'us-east-1'),
      credentials: { accessKeyId: c!.AccessKeyId!, secretAccessKey: c!.SecretAccessKey!, sessionToken: c!.SessionToken! },
    });
    await cellSsm.send(new PutParameterCommand({ Name: PARAMETER, Value: SERVICE, Type: 'String' }));
    sts.destroy();
    cellSsm.destroy();
    const lookupEvent: LookupEvent = {
      RequestType: 'Create',
      ResponseURL: responseUrl,
      StackId: 'stack',
      RequestId: 'req-b',
      LogicalResourceId: 'Cellc1ServiceNameRead',
      ResourceProperties: { CellId: 'c1', RoleArn: ROLE, Region: 'us-east-1', ParameterName: PARAMETER, Fingerprint: '0123456789abcdef' },
    };
    const script = `require(${JSON.stringify(bundle)}).handler(JSON.parse(process.env.LOOKUP_EVENT), { getRemainingTimeInMillis: () => 60000 }).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); })`;
    await new Promise<void>((resolve, reject) => {
      execFile(
        process.execPath,
        ['-e', script],
        {
          cwd: path.dirname(bundle),
          env: {
            PATH: process.env.PATH,
            LOOKUP_EVENT: JSON.stringify(lookupEvent),
            AWS_REGION: 'eu-west-1',
            AWS_ACCESS_KEY_ID: 'testing',
            AWS_SECRET_ACCESS_KEY: 'testing',
            AWS_ENDPOINT_URL: moto.endpoint,
            AWS_MAX_ATTEMPTS: '1',
          },
        },
        (error, _stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}\n${moto.log()}`)) : resolve()),
      );
    });
    expect(answers).toEqual([
      expect.objectContaining({ Status: 'SUCCESS', PhysicalResourceId: `c1:${PARAMETER}:0123456789abcdef`, Data: { 'Parameter.Value': SERVICE } }),
    ]);
  });
});
