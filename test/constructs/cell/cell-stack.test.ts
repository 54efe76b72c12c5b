import { Template } from 'aws-cdk-lib/assertions';
import { cellStackPropsOf } from '../../../lib/app/cell-props';
import { CellStack } from '../../../lib/constructs/cell';
import { Fleet } from '../../../lib/domain/fleet';
import { cellStackName } from '../../../lib/domain/names';
import { EC2_CELL, FARGATE_CELL, SynthesizedCell, synthCells } from '../../support/cell';
import { cdkApp, exampleFleet } from '../../support/fleet';

/** Resource types that support tags and that every cell creates. */
const TAGGED_TYPES = [
  'AWS::EC2::VPC',
  'AWS::EC2::Subnet',
  'AWS::EC2::SecurityGroup',
  'AWS::EC2::NatGateway',
  'AWS::EC2::VPCEndpointService',
  'AWS::ElasticLoadBalancingV2::LoadBalancer',
  'AWS::ElasticLoadBalancingV2::TargetGroup',
  'AWS::SQS::Queue',
  'AWS::SecretsManager::Secret',
  'AWS::S3::Bucket',
  'AWS::Logs::LogGroup',
  'AWS::WAFv2::WebACL',
  'AWS::CloudWatch::Alarm',
  'AWS::CloudWatch::CompositeAlarm',
  'AWS::CloudWatch::Dashboard',
  'AWS::IAM::Role',
  'AWS::Lambda::Function',
];

describe('CellStack', () => {
  let fleet: Fleet;
  let cells: Record<string, SynthesizedCell>;
  beforeAll(() => {
    fleet = exampleFleet();
    cells = synthCells([FARGATE_CELL, EC2_CELL], fleet);
  });

  it("deploys into the cell's own account and region under a cell-scoped name", () => {
    const { stack } = cells[FARGATE_CELL];
    const model = fleet.cells.find((c) => c.id === FARGATE_CELL)!;
    expect(stack.account).toBe(model.account);
    expect(stack.region).toBe(model.region);
    expect(stack.stackName).toBe(cellStackName(fleet.app, FARGATE_CELL));
    expect(stack.terminationProtection).toBe(true);
    expect(stack.availabilityZones).toEqual(['euw1-az1', 'euw1-az2', 'euw1-az3']);
    // Placed by AZ ID: the routers' endpoints (another account) land in the same physical zones.
    const subnets = Object.values(cells[FARGATE_CELL].template.findResources('AWS::EC2::Subnet'));
    expect(new Set(subnets.map((s) => s.Properties.AvailabilityZoneId))).toEqual(new Set(['euw1-az1', 'euw1-az2', 'euw1-az3']));
    expect(subnets.filter((s) => s.Properties.AvailabilityZone !== undefined)).toEqual([]);
  });

  it.each([FARGATE_CELL, EC2_CELL])('%s: tags every taggable resource with its cell id', (id) => {
    const template: Template = cells[id].template;
    const resources = template.toJSON().Resources as Record<string, { Type: string; Properties?: { Tags?: unknown } }>;
    let checked = 0;
    for (const [logicalId, resource] of Object.entries(resources)) {
      const tags = resource.Properties?.Tags;
      if (tags === undefined) {
        expect([logicalId, TAGGED_TYPES.includes(resource.Type)]).toEqual([logicalId, false]);
        continue;
      }
      checked += 1;
      const pairs = Array.isArray(tags)
        ? Object.fromEntries(tags.map((t: { Key: string; Value: string }) => [t.Key, t.Value]))
        : (tags as Record<string, string>);
      expect([logicalId, pairs.cell]).toEqual([logicalId, id]);
    }
    expect(checked).toBeGreaterThan(40);
  });

  it('outputs the endpoint, the PrivateLink service name and the health alarm name', () => {
    const template = cells[FARGATE_CELL].template;
    const outputs = template.toJSON().Outputs;
    expect(Object.keys(outputs).sort()).toEqual(['Endpoint', 'EndpointServiceName', 'HealthAlarmName']);
    expect(JSON.stringify(outputs.Endpoint.Value)).toContain('http://');
    expect(outputs.HealthAlarmName.Export).toBeUndefined();
  });

  it("records its endpoint service name where the router stacks read it at deploy time, for the router account's router roles only", () => {
    const template = cells[FARGATE_CELL].template;
    const [parameter] = Object.values(
      template.findResources('AWS::SSM::Parameter', { Properties: { Name: `/orders/cell/${FARGATE_CELL}/endpoint-service-name` } }),
    );
    expect(JSON.stringify(parameter.Properties.Value)).toMatch(
      /^\{"Fn::Join":\[".",\["com.amazonaws.vpce",\{"Ref":"AWS::Region"\},\{"Ref":"CellEntryEndpointService/,
    );
    const [role] = Object.values(template.findResources('AWS::IAM::Role', { Properties: { RoleName: `orders-${FARGATE_CELL}-ep-reader` } }));
    expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      expect.objectContaining({
        Principal: { AWS: `arn:aws:iam::${fleet.accounts.router}:root` },
        Condition: { ArnLike: { 'aws:PrincipalArn': `arn:aws:iam::${fleet.accounts.router}:role/orders-router-*` } },
      }),
    ]);
    const [policy] = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
      JSON.stringify(p.Properties.Roles).includes('EndpointRecordReader'),
    );
    expect(policy.Properties.PolicyDocument.Statement.map((st: { Action: unknown }) => st.Action)).toEqual(['ssm:GetParameter']);
  });

  it.each([
    [FARGATE_CELL, 'DBCluster', ['rds:DescribeDBClusters', 'rds:ModifyDBCluster']],
    [EC2_CELL, 'DBInstance', ['rds:DescribeDBInstances', 'rds:ModifyDBInstance']],
  ])(
    '%s: leaves deletion protection out of the template and lets the tooling account switch it on for exactly its load balancers and database (%s)',
    (id, dbType, dbAction) => {
      const template = cells[id].template;
      // A failed first create must be able to delete them (no ROLLBACK_FAILED): no deletion protection in the template.
      for (const lb of Object.values(template.findResources('AWS::ElasticLoadBalancingV2::LoadBalancer'))) {
        expect(JSON.stringify(lb.Properties.LoadBalancerAttributes ?? [])).not.toContain('deletion_protection');
      }
      expect(JSON.stringify(template.findResources(`AWS::RDS::${dbType}`))).not.toContain('DeletionProtection');
      const [roleId, role] = Object.entries(template.findResources('AWS::IAM::Role', { Properties: { RoleName: `orders-${id}-protector` } }))[0];
      expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
        expect.objectContaining({ Principal: { AWS: `arn:aws:iam::${fleet.accounts.tooling}:root` } }),
      ]);
      const [policy] = Object.values(template.findResources('AWS::IAM::Policy')).filter(
        (p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: roleId }]),
      );
      const statements = policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[];
      // The changes on exactly its resources; the reads that let a re-run skip what is protected.
      expect(statements.map((st) => st.Action)).toEqual([
        'elasticloadbalancing:ModifyLoadBalancerAttributes',
        'elasticloadbalancing:DescribeLoadBalancerAttributes',
        dbAction,
      ]);
      const lbs = Object.keys(template.findResources('AWS::ElasticLoadBalancingV2::LoadBalancer')).sort();
      expect((statements[0].Resource as { Ref: string }[]).map((r) => r.Ref).sort()).toEqual(lbs);
      expect(statements[1].Resource).toBe('*');
      const [db] = Object.keys(template.findResources(`AWS::RDS::${dbType}`));
      expect(JSON.stringify(statements[2].Resource)).toContain(`"Ref":"${db}"`);
    },
  );

  it("refuses an env that does not name the cell's account and region (the roles other accounts assume are written for them)", () => {
    const props = cellStackPropsOf(
      fleet,
      fleet.cells.find((c) => c.id === FARGATE_CELL)!,
    );
    expect(() => new CellStack(cdkApp(), 'NoAccount', { ...props, env: { region: 'eu-west-1' } })).toThrow(
      `CellStack ${FARGATE_CELL}: env needs the cell's own account and region`,
    );
  });
});
