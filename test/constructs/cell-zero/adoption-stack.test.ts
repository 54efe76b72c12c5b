import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { NestedStack } from 'aws-cdk-lib';
import { Template, Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { addFleet, cellZeroStackProps, FleetStacks, isolationChecksPropsOf } from '../../../lib/app';
import { cfnLintFindings } from '../../../lib/app/audit';
import { CellZeroStack } from '../../../lib/constructs/cell-zero';
import { Fleet, resolveFleet } from '../../../lib/domain/fleet';
import { CellIsolationChecks } from '../../../lib/constructs/isolation';
import { MappingDocument } from '../../../lib/domain/mapping';
import { cdkApp } from '../../support/fleet';
import { CELL_ZERO_ACCOUNT, cellZeroConfig, cellZeroInput } from '../../support/cell-zero';

/** Types the adoption stack may create: its own NLB path, parameter, roles, mover, alarms. Nothing that edits what exists. */
const OWN_TYPES = new Set([
  'AWS::ElasticLoadBalancingV2::LoadBalancer',
  'AWS::ElasticLoadBalancingV2::TargetGroup',
  'AWS::ElasticLoadBalancingV2::Listener',
  'AWS::EC2::VPCEndpointService',
  'AWS::EC2::VPCEndpointServicePermissions',
  'AWS::EC2::SecurityGroup',
  'AWS::S3::Bucket',
  'AWS::S3::BucketPolicy',
  'AWS::SSM::Parameter',
  'AWS::IAM::Role',
  'AWS::IAM::Policy',
  'AWS::KMS::Key',
  'AWS::ECS::Cluster',
  'AWS::ECS::TaskDefinition',
  'AWS::Logs::LogGroup',
  'AWS::CloudWatch::Alarm',
  'AWS::CloudWatch::CompositeAlarm',
  'AWS::SNS::Topic',
  'AWS::SNS::TopicPolicy',
]);

describe("cell zero's adoption stack", () => {
  let fleet: Fleet;
  let stacks: FleetStacks;
  let zero: CellZeroStack;
  let template: Template;
  const lb = cellZeroConfig().loadBalancer;
  const db = cellZeroConfig().database;

  beforeAll(() => {
    // Three cells over the example's two regions: enough for the routers of both to link cell zero.
    const input = cellZeroInput();
    fleet = resolveFleet({ ...input, cells: input.cells.filter((c) => ['canary-eu', 'eu-1', 'us-1'].includes(c.id)) });
    const app = cdkApp();
    stacks = addFleet(app, fleet, { audit: false });
    zero = stacks.cellZero!;
    template = Template.fromStack(zero);
  });

  it("deploys into the existing stack's account and region, tagged as cell zero", () => {
    expect(`${zero.stackName} ${zero.account}/${zero.region}`).toBe(`orders-cell-zero-adoption ${CELL_ZERO_ACCOUNT}/eu-west-1`);
    template.hasResourceProperties('AWS::SSM::Parameter', { Tags: { cell: 'zero', app: 'orders' } });
  });

  it('puts an internal NLB in front of the existing ALB: an ALB-type target on its listener port', () => {
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', {
      Type: 'network',
      Scheme: 'internal',
      Subnets: cellZeroConfig().vpc.privateSubnetIds,
    });
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', {
      TargetType: 'alb',
      Protocol: 'TCP',
      Port: 8080,
      VpcId: cellZeroConfig().vpc.id,
      Targets: [{ Id: lb.arn, Port: 8080 }],
      HealthCheckProtocol: 'HTTP',
      HealthCheckPath: fleet.workload.healthCheckPath,
    });
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', { Port: 80, Protocol: 'TCP' });
  });

  it('publishes it as an endpoint service only the router account may use, from every router region', () => {
    template.hasResourceProperties('AWS::EC2::VPCEndpointService', { AcceptanceRequired: false, SupportedRegions: ['us-east-1'] });
    template.hasResourceProperties('AWS::EC2::VPCEndpointServicePermissions', {
      AllowedPrincipals: ['arn:aws:iam::222222222222:root'],
    });
  });

  it("records the service name where the routers read a cell's, behind the same reader role", () => {
    template.hasResourceProperties('AWS::SSM::Parameter', { Name: '/orders/cell/zero/endpoint-service-name' });
    template.hasResourceProperties('AWS::IAM::Role', { RoleName: 'orders-zero-ep-reader' });
  });

  it('runs the mover on the existing database and secret, in the security group the database already admits', () => {
    const defs = template.findResources('AWS::ECS::TaskDefinition');
    const env = Object.values(defs)[0].Properties.ContainerDefinitions[0].Environment as { Name: string; Value: unknown }[];
    expect(Object.fromEntries(env.map((e) => [e.Name, e.Value]))).toMatchObject({
      CELL_ID: 'zero',
      DB_HOST: db.host,
      DB_PORT: '5432',
      DB_NAME: 'orders',
      DB_SECRET_ARN: db.secretArn,
    });
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Action: 'secretsmanager:GetSecretValue', Resource: db.secretArn })]) },
    });
    template.hasResourceProperties('AWS::IAM::Role', { RoleName: 'orders-zero-mover-launcher' });
    const parameter = Object.values(template.findResources('AWS::SSM::Parameter', { Properties: { Name: '/orders/cell/zero/mover' } }));
    expect(JSON.stringify(parameter[0]?.Properties.Value)).toContain(db.clientSecurityGroupId);
  });

  it("names its health alarm like a cell's, from the existing ALB's metrics, and lets the pipeline read it", () => {
    template.hasResourceProperties('AWS::CloudWatch::CompositeAlarm', { AlarmName: 'orders-zero-health' });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'orders-zero-error-rate',
      Metrics: Match.arrayWith([
        Match.objectLike({
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({ Dimensions: [{ Name: 'LoadBalancer', Value: 'app/orders-prod/50dc6c495c0c9188' }] }),
          }),
        }),
      ]),
    });
    template.hasOutput('HealthAlarmName', { Value: { Ref: Match.anyValue() } });
    template.hasResourceProperties('AWS::IAM::Role', { RoleName: 'orders-zero-bake-watcher' });
  });

  it('changes nothing of the existing stack: only its own resource types, no rule on an existing group, no listener on the existing ALB', () => {
    const resources = template.toJSON().Resources as Record<string, { Type: string; Properties?: Record<string, unknown> }>;
    expect([...new Set(Object.values(resources).map((r) => r.Type))].filter((t) => !OWN_TYPES.has(t))).toEqual([]);
    for (const r of Object.values(resources)) {
      if (r.Type === 'AWS::ElasticLoadBalancingV2::Listener') expect(r.Properties?.LoadBalancerArn).toEqual({ Ref: expect.any(String) });
    }
    // The existing security group appears only in the mover's run parameters, never as a group this stack edits.
    const mentions = Object.entries(resources)
      .filter(([, r]) => JSON.stringify(r).includes(db.clientSecurityGroupId))
      .map(([, r]) => r.Type);
    expect(mentions).toEqual(['AWS::SSM::Parameter']);
  });

  it('passes the AwsSolutions and cell-isolation packs', () => {
    for (const pack of [new AwsSolutionsChecks(), new CellIsolationChecks(undefined, isolationChecksPropsOf(fleet))]) {
      const report = pack.validateScope(zero);
      expect([pack.constructor.name, report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`)]).toEqual([
        pack.constructor.name,
        [],
      ]);
    }
  });

  it('is a cell to the isolation pack: naming another cell from it is a finding', () => {
    const app = cdkApp();
    const other = new CellZeroStack(app, 'other', cellZeroStackProps(fleet));
    new ssm.StringParameter(other, 'Leak', { stringValue: 'orders-eu-1-health' });
    Template.fromStack(other); // tags are applied (by aspects) at synthesis
    const report = new CellIsolationChecks(undefined, isolationChecksPropsOf(fleet)).validateScope(other);
    expect(report.violations.map((v) => v.ruleName)).toEqual(['CellIsolation-CI1[cell:eu-1]']);
  });

  it('passes cfn-lint', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cell-zero-lint-'));
    try {
      const file = path.join(dir, `${zero.stackName}.template.json`);
      fs.writeFileSync(file, JSON.stringify(template.toJSON()));
      expect(
        cfnLintFindings([file])
          .filter((f) => !f.acknowledgement)
          .map((f) => `${f.rule} ${f.resource}: ${f.description}`),
      ).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is linked by every region's routers like a cell, and the routers' seed maps every bucket to it", () => {
    for (const router of stacks.routers) {
      const link = router.cellLinks.get('zero');
      expect(link).toBeDefined();
      const nested = Template.fromStack(link!.node.scope as never);
      nested.hasResourceProperties('Custom::CellEndpointServiceName', {
        CellId: 'zero',
        Region: 'eu-west-1',
        ParameterName: '/orders/cell/zero/endpoint-service-name',
        RoleArn: `arn:aws:iam::${CELL_ZERO_ACCOUNT}:role/orders-zero-ep-reader`,
      });
      nested.hasResourceProperties(
        'AWS::EC2::VPCEndpoint',
        router.region === 'eu-west-1' ? { ServiceRegion: Match.absent() } : { ServiceRegion: 'eu-west-1' },
      );
      const seeds = Object.values(Template.fromStack(router.node.findChild('MappingSeedStack') as NestedStack).findResources('Custom::MappingSeed'));
      expect(seeds.length).toBeGreaterThan(0);
      for (const seed of seeds) {
        const doc = JSON.parse(String(seed.Properties.Body)) as MappingDocument;
        expect(doc.buckets).toEqual([{ from: 0, to: 16383, cell: 'zero' }]);
      }
    }
  });
});
