import { Template, Match } from 'aws-cdk-lib/assertions';
import { initialMapping } from '../../../lib/domain/mapping';
import { RouterGroupsStack, RouterGroupsStackProps, RouterStack, RouterStackProps } from '../../../lib/constructs/router';
import { cdkApp } from '../../support/fleet';

/**
 * The router stacks built from their own props alone, written by hand as another CDK app would: no
 * fleet file, no adapter. Two cells in two regions, two groups.
 */
const CELLS = [
  { id: 'a-1', region: 'eu-west-1', account: '222222222201', port: 80 },
  { id: 'b-1', region: 'us-east-1', account: '222222222202', port: 443 },
];
const PROPS: RouterStackProps = {
  app: 'shop',
  region: 'eu-west-1',
  account: '111111111111',
  toolingAccount: '333333333333',
  availabilityZones: ['euw1-az1', 'euw1-az2', 'euw1-az3'],
  cidr: '10.200.0.0/16',
  groups: [
    { name: 'canary', weight: 1 },
    { name: 'main', weight: 9 },
  ],
  cells: CELLS,
  mappingBucketPrefix: 'shop-mappings',
  keptMappingVersions: 5,
  seedMapping: initialMapping(
    CELLS.map((c, i) => ({ id: c.id, state: 'active' as const, canary: i === 0, endpoint: `http://${c.id}.shop.internal` })),
    1024,
    { now: '1970-01-01T00:00:00.000Z' },
  ),
};
const GROUPS: RouterGroupsStackProps = {
  app: 'shop',
  region: 'eu-west-1',
  account: '111111111111',
  availabilityZones: PROPS.availabilityZones,
  part: 'rest',
  groups: [{ name: 'main', tasks: 2 }],
  routing: {
    partitionKey: { source: 'header', name: 'x-tenant-id' },
    bucketCount: 1024,
    slots: 4,
    zones: 3,
    cellMaxConn: 100,
    queueTimeoutMs: 2000,
    tenantMaxConn: 10,
    cellHealthCheckPath: '/health',
  },
  stalenessMinutes: 10,
};

describe('RouterStack and RouterGroupsStack from their own props', () => {
  let plain: Template;
  let home: Template;
  let groups: Template;
  let staying: Template;
  let homeStack: RouterStack;
  beforeAll(() => {
    const app = cdkApp();
    const plainStack = new RouterStack(app, 'router', PROPS);
    homeStack = new RouterStack(app, 'router-home', {
      ...PROPS,
      homeOf: ['eu-west-1', 'us-east-1'],
      certificateArn: 'arn:aws:acm:eu-west-1:111111111111:certificate/abc',
      cellZoneName: 'shop.cells.internal',
    });
    const groupsStack = new RouterGroupsStack(app, 'groups', GROUPS);
    const stayingStack = new RouterGroupsStack(app, 'groups-staying', { ...GROUPS, routing: { ...GROUPS.routing, fullTaskLeaves: false } });
    [plain, home, groups, staying] = [plainStack, homeStack, groupsStack, stayingStack].map((stack) => Template.fromStack(stack));
  });

  it('names the stack and its roles from `app` and `region`', () => {
    plain.hasResourceProperties('AWS::IAM::Role', { RoleName: 'shop-router-eu-west-1-custom-resources' });
    plain.hasResourceProperties('AWS::IAM::Role', { RoleName: 'shop-router-eu-west-1-bake-watcher' });
    plain.hasResourceProperties('AWS::SNS::Topic', { TopicName: 'shop-router-eu-west-1-alarms' });
    expect(homeStack.stackName).toBe('shop-router-eu-west-1');
  });

  it('forwards to one target group per group by weight, on port 80 without a certificate and TLS 443 with one', () => {
    plain.resourceCountIs('AWS::ElasticLoadBalancingV2::TargetGroup', 2);
    plain.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', {
      Port: 80,
      Protocol: 'TCP',
      DefaultActions: [{ Type: 'forward', ForwardConfig: { TargetGroups: [Match.objectLike({ Weight: 1 }), Match.objectLike({ Weight: 9 })] } }],
    });
    home.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', { Port: 443, Protocol: 'TLS' });
  });

  it("reaches every cell it is given, on each cell's port, and names them in the zone only when given one", () => {
    expect(homeStack.cellLinks.size).toBe(2);
    const [endpoints] = Object.keys(
      home.findResources('AWS::EC2::SecurityGroup', { Properties: { GroupDescription: 'shop-router-eu-west-1: interface endpoints to the cells' } }),
    );
    const ports = Object.values(
      home.findResources('AWS::EC2::SecurityGroupIngress', { Properties: { GroupId: { 'Fn::GetAtt': [endpoints, 'GroupId'] } } }),
    ).map((r) => r.Properties.FromPort);
    expect(ports.sort()).toEqual([443, 80]);
    home.resourceCountIs('AWS::Route53::HostedZone', 1);
    plain.resourceCountIs('AWS::Route53::HostedZone', 0);
  });

  it('holds the publisher and the move bucket only in the home region', () => {
    home.hasResourceProperties('AWS::IAM::Role', { RoleName: 'shop-mapping-publisher' });
    home.hasResourceProperties('AWS::IAM::Role', { RoleName: 'shop-move-operator' });
    expect(Object.keys(plain.findResources('AWS::IAM::Role', { Properties: { RoleName: 'shop-mapping-publisher' } }))).toEqual([]);
    expect(homeStack.publisher).toBeDefined();
    expect(homeStack.moves).toBeDefined();
  });

  it("builds each group's service from the routing it is given", () => {
    groups.hasResourceProperties('AWS::ECS::Service', { ServiceName: 'shop-router-eu-west-1-main', DesiredCount: 2 });
    groups.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'shop-router-eu-west-1-main-stale-mapping', Threshold: 600 });
    groups.hasResourceProperties('AWS::CloudWatch::CompositeAlarm', { AlarmName: 'shop-router-eu-west-1-main-health' });
  });

  it("lets a full task leave its group's rotation by default, and never with fullTaskLeaves false (no target group given, no ELB call allowed)", () => {
    const agentEnvironment = (t: Template) =>
      (
        Object.values(t.findResources('AWS::ECS::TaskDefinition'))[0].Properties.ContainerDefinitions as {
          Name: string;
          Environment: { Name: string }[];
        }[]
      )
        .find((c) => c.Name === 'agent')!
        .Environment.map((e) => e.Name);
    const statements = (t: Template) => JSON.stringify(Object.values(t.findResources('AWS::IAM::Policy')).map((p) => p.Properties.PolicyDocument));
    expect(agentEnvironment(groups)).toContain('TARGET_GROUP_ARN');
    expect(statements(groups)).toContain('elasticloadbalancing:DescribeTargetHealth');
    expect(agentEnvironment(staying)).not.toContain('TARGET_GROUP_ARN');
    expect(statements(staying)).not.toContain('elasticloadbalancing:DescribeTargetHealth');
  });

  it('refuses props it cannot build, naming the field', () => {
    expect(() => new RouterStack(cdkApp(), 'r', { ...PROPS, availabilityZones: ['euw1-az1', 'euw1-az2'] })).toThrow(
      /at least 3 Availability Zones; availabilityZones lists 2/,
    );
    expect(() => new RouterStack(cdkApp(), 'r', { ...PROPS, groups: [] })).toThrow(/groups is empty/);
    expect(() => new RouterGroupsStack(cdkApp(), 'g', { ...GROUPS, groups: [] })).toThrow(/groups is empty/);
  });
});
