import { GetParameterCommand, ParameterNotFound, SSMClient } from '@aws-sdk/client-ssm';
import { Template } from 'aws-cdk-lib/assertions';
import { mockClient } from 'aws-sdk-client-mock';
import { RouterStack } from '../../../lib/constructs/router';
import { routerStackPropsOf } from '../../../lib/app/router-props';
import { GuardEvent, guardResponse, homeRegionChangeReason } from '../../../lib/runtime/handlers/home-region-guard-handler';
import { cdkApp, exampleFleet } from '../../support/fleet';

const PARAMETER = '/orders/router/home-region';

describe('Custom::RouterHomeRegionGuard handler: a deploy that changes router.homeRegion fails before anything moves', () => {
  const ssm = mockClient(SSMClient);
  let clock: number;
  const options = () => ({ now: () => clock, sleep: async (ms: number) => void (clock += ms) });
  const context = { getRemainingTimeInMillis: () => 120_000 };
  const event = (requestType: GuardEvent['RequestType'], homeRegion = 'eu-west-1'): GuardEvent => ({
    RequestType: requestType,
    ResponseURL: 'http://unused',
    StackId: 'arn:aws:cloudformation:us-east-1:222222222222:stack/orders-router-us-east-1/0f0e0d0c',
    RequestId: 'req-1',
    LogicalResourceId: 'HomeRegionGuardCheck1A2B3C4D',
    ...(requestType === 'Create' ? {} : { PhysicalResourceId: `${PARAMETER}:guard` }),
    ResourceProperties: { ParameterName: PARAMETER, HomeRegion: homeRegion },
  });
  const answer = (e: GuardEvent) => guardResponse(e, context, new SSMClient({ region: 'us-east-1' }), options());

  beforeEach(() => {
    ssm.reset();
    clock = 1_000_000;
    jest.spyOn(console, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  it('lets a first deploy through (no parameter yet), and a deploy with the home region it was deployed with', async () => {
    ssm.on(GetParameterCommand).rejects(new ParameterNotFound({ message: 'not found', $metadata: {} }));
    expect(await answer(event('Create'))).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: `${PARAMETER}:guard`, Data: { Previous: '' } });
    ssm.reset();
    ssm.on(GetParameterCommand, { Name: PARAMETER }).resolves({ Parameter: { Value: 'eu-west-1' } });
    expect(await answer(event('Update'))).toMatchObject({ Status: 'SUCCESS', Data: { Previous: 'eu-west-1' } });
  });

  it('fails an update that asks for another home region, saying where the home is and how to put it back', async () => {
    ssm.on(GetParameterCommand, { Name: PARAMETER }).resolves({ Parameter: { Value: 'eu-west-1' } });
    const response = await answer(event('Update', 'us-east-1'));
    expect(response.Status).toBe('FAILED');
    expect(response.Reason).toBe(homeRegionChangeReason('eu-west-1', 'us-east-1'));
    expect(response.Reason).toContain('Set router.homeRegion back to eu-west-1 in cells.config.ts');
  });

  it('retries a read refused while its policy propagates, fails naming the grant on any other error, and reads nothing on delete', async () => {
    const denied = Object.assign(new Error('not yet'), { name: 'AccessDeniedException', $metadata: { httpStatusCode: 400 } });
    ssm
      .on(GetParameterCommand)
      .rejectsOnce(denied)
      .resolves({ Parameter: { Value: 'eu-west-1' } });
    expect((await answer(event('Update'))).Status).toBe('SUCCESS');
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(2);
    ssm.reset();
    ssm.on(GetParameterCommand).rejects(Object.assign(new Error('boom'), { name: 'InternalServerError', $metadata: { httpStatusCode: 500 } }));
    const failed = await answer(event('Update'));
    expect(failed.Status).toBe('FAILED');
    expect(failed.Reason).toMatch(
      /^Reading \/orders\/router\/home-region failed: InternalServerError \(HTTP 500\): boom\. The stack's custom resource role must be allowed ssm:GetParameter/,
    );
    ssm.reset();
    expect((await answer(event('Delete'))).Status).toBe('SUCCESS');
    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(0);
  });
});

describe("every router stack guards router.homeRegion before the home region's resources", () => {
  const fleet = exampleFleet();
  const app = cdkApp();
  const stacks = Object.keys(fleet.regions).map((region) => ({
    region,
    stack: new RouterStack(app, `router-${region}`, routerStackPropsOf(fleet, region)),
  }));
  const templates = stacks.map(({ region, stack }) => ({ region, template: Template.fromStack(stack) }));

  it("keeps this deploy's home region in each region's parameter, written only after the guard compared it", () => {
    for (const { template } of templates) {
      const guards = template.findResources('Custom::RouterHomeRegionGuard');
      expect(Object.values(guards).map((g) => g.Properties)).toEqual([
        expect.objectContaining({ ParameterName: PARAMETER, HomeRegion: fleet.router.homeRegion }),
      ]);
      const [guardId] = Object.keys(guards);
      const parameters = Object.values(template.findResources('AWS::SSM::Parameter', { Properties: { Name: PARAMETER } }));
      expect(parameters).toHaveLength(1);
      expect(parameters[0].Properties.Value).toBe(fleet.router.homeRegion);
      expect(parameters[0].DependsOn).toContain(guardId);
    }
  });

  it("makes the home region's publisher and move operator roles and move bucket wait for the guard; the guard may read only its parameter", () => {
    const home = templates.find((t) => t.region === fleet.router.homeRegion)!.template;
    const [guardId] = Object.keys(home.findResources('Custom::RouterHomeRegionGuard'));
    const resources = home.toJSON().Resources as Record<string, { Type: string; Properties?: Record<string, unknown>; DependsOn?: string[] }>;
    const named = (type: string, name: string, key: string) => Object.values(resources).find((r) => r.Type === type && r.Properties?.[key] === name)!;
    for (const role of ['orders-mapping-publisher', 'orders-move-operator'])
      expect(named('AWS::IAM::Role', role, 'RoleName').DependsOn).toContain(guardId);
    const moveBuckets = Object.entries(resources).filter(([id, r]) => r.Type === 'AWS::S3::Bucket' && id.startsWith('Moves'));
    expect(moveBuckets.length).toBeGreaterThan(0);
    for (const [, bucket] of moveBuckets) expect(bucket.DependsOn).toContain(guardId);
    // The access-log bucket's policy names the move bucket: it changes with the home region too.
    const logPolicies = Object.entries(resources).filter(([id, r]) => r.Type === 'AWS::S3::BucketPolicy' && id.startsWith('MappingsAccessLogs'));
    expect(logPolicies).toHaveLength(1);
    expect(logPolicies[0][1].DependsOn).toContain(guardId);
    const text = JSON.stringify(home.findResources('AWS::IAM::Policy'));
    expect(text).toContain(`parameter${PARAMETER}`);
    expect(text).not.toMatch(/"ssm:GetParameter","Effect":"Allow","Resource":"\*"/);
  });
});
