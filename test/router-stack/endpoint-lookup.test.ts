import { GetParameterCommand, ParameterNotFound, SSMClient } from '@aws-sdk/client-ssm';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { mockClient } from 'aws-sdk-client-mock';
import { LookupEvent, lookupResponse } from '../../lib/router-stack/endpoint-lookup-handler';

/** An SDK error as the SDK throws it: name and HTTP status. */
const awsError = (name: string, status: number) => Object.assign(new Error(`${name} from the stand-in`), { name, $metadata: { httpStatusCode: status } });
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
    sleep: async (ms: number) => { sleeps.push(ms); clock += ms; },
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

  it('reads the name in the cell\'s region as the reader role, and answers it as Parameter.Value with the fingerprinted physical id', async () => {
    sts.on(AssumeRoleCommand).resolves({ Credentials: CREDENTIALS });
    ssm.on(GetParameterCommand).resolves({ Parameter: { Name: PARAMETER, Value: SERVICE } });
    const response = await lookupResponse(event('Create'), context, clients(), options());
    expect(response).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: `c1:${PARAMETER}:0123456789abcdef`, Data: { 'Parameter.Value': SERVICE }, RequestId: 'req-1' });
    expect(sts.commandCalls(AssumeRoleCommand).map((c) => c.args[0].input)).toEqual([expect.objectContaining({ RoleArn: ROLE, RoleSessionName: 'endpoint-lookup-c1' })]);
    expect(ssm.commandCalls(GetParameterCommand).map((c) => c.args[0].input)).toEqual([{ Name: PARAMETER }]);
    expect(made).toEqual([{ region: 'us-east-1', accessKeyId: 'ASIATEST' }]);
    expect(sleeps).toEqual([]);
  });

  it('retries AccessDenied on AssumeRole and on the read while IAM propagates, then succeeds', async () => {
    sts.on(AssumeRoleCommand).rejectsOnce(STS_DENIED()).rejectsOnce(STS_DENIED()).resolves({ Credentials: CREDENTIALS });
    ssm.on(GetParameterCommand).rejectsOnce(SSM_DENIED()).rejectsOnce(SSM_DENIED()).resolves({ Parameter: { Name: PARAMETER, Value: SERVICE } });
    const response = await lookupResponse(event('Create'), context, clients(), options());
    expect(response).toMatchObject({ Status: 'SUCCESS', Data: { 'Parameter.Value': SERVICE } });
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(3);
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(3);
    // 1 s, then 2 s for each call.
    expect(sleeps).toEqual([1000, 2000, 1000, 2000]);
  });

  it('fails naming the role once AccessDenied lasts past a minute, keeping the physical id for the rollback\'s delete', async () => {
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
    expect((await lookupResponse(event('Create'), context, clients(), options())).Reason).toMatch(/assuming .* failed: RegionDisabledException \(HTTP 403\)/);
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('re-reads on update under the new fingerprint\'s id (a replacement), and does nothing on delete', async () => {
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
    const response = await lookupResponse(event('Create', { ResourceProperties: { CellId: 'c1', Region: 'us-east-1' } }), context, clients(), options());
    expect(response).toMatchObject({ Status: 'FAILED' });
    expect(response.Reason).toMatch(/missing properties RoleArn, ParameterName/);
    expect(sts.calls()).toHaveLength(0);
  });
});
