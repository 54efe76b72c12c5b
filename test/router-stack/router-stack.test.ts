import * as fs from 'fs';
import { Stage } from 'aws-cdk-lib';
import { Template, Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { Fleet, generateFleet } from '../../lib/fleet';
import { CELLS_PER_DASHBOARD, RouterStack } from '../../lib/router-stack';
import { cdkApp, exampleFleet, exampleInput, resolve } from '../support/fleet';

describe('RouterStack', () => {
  let fleet: Fleet;
  let primary: RouterStack;
  let secondary: RouterStack;
  let t: Template;
  let t2: Template;
  beforeAll(() => {
    const base = exampleFleet();
    // Two cells of the primary region have their PrivateLink service names (after their first deploy).
    fleet = { ...base, cells: base.cells.map((c) => (c.id === 'eu-1' || c.id === 'eu-2' ? { ...c, endpointServiceName: `com.amazonaws.vpce.eu-west-1.vpce-svc-0${c.id === 'eu-1' ? '1' : '2'}23456789abcdef0` } : c)) };
    const app = cdkApp();
    primary = new RouterStack(app, 'router-eu-west-1', { fleet, region: 'eu-west-1' });
    secondary = new RouterStack(app, 'router-us-east-1', { fleet, region: 'us-east-1' });
    t = Template.fromStack(primary);
    t2 = Template.fromStack(secondary);
  });

  it('deploys into the router account, across three AZs', () => {
    expect(`${primary.account}/${primary.region}`).toBe('222222222222/eu-west-1');
    expect(new Set(Object.values(t.findResources('AWS::EC2::Subnet')).map((s) => s.Properties.AvailabilityZone))).toEqual(new Set(['eu-west-1a', 'eu-west-1b', 'eu-west-1c']));
    expect(() => new RouterStack(cdkApp(), 'r', { fleet: { ...fleet, regions: { ...fleet.regions, 'eu-west-1': { availabilityZones: ['eu-west-1a', 'eu-west-1b'] } } }, region: 'eu-west-1' })).toThrow(/at least 3 Availability Zones/);
  });

  it('keeps the mapping bucket versioned, encrypted, private, TLS-only, logged, with bounded old versions', () => {
    t.hasResourceProperties('AWS::S3::Bucket', {
      BucketName: 'orders-mappings-222222222222',
      VersioningConfiguration: { Status: 'Enabled' },
      BucketEncryption: Match.objectLike({}),
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      LoggingConfiguration: Match.objectLike({ DestinationBucketName: Match.anyValue() }),
      LifecycleConfiguration: { Rules: [Match.objectLike({ NoncurrentVersionExpiration: { NewerNoncurrentVersions: 20, NoncurrentDays: 1 } })] },
    });
    t2.resourcePropertiesCountIs('AWS::S3::Bucket', { BucketName: 'orders-mappings-222222222222' }, 0);
  });

  it('lets only the publisher role write documents', () => {
    const [policy] = Object.values(t.findResources('AWS::S3::BucketPolicy', { Properties: { Bucket: { Ref: Match.stringLikeRegexp('MappingsBucket') } } }));
    const statements = policy.Properties.PolicyDocument.Statement;
    expect(statements).toEqual(expect.arrayContaining([
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      expect.objectContaining({ Effect: 'Deny', Action: expect.arrayContaining(['s3:PutObject', 's3:DeleteObject']), Condition: { ArnNotEquals: { 'aws:PrincipalArn': { 'Fn::GetAtt': [expect.stringMatching(/Publisher/), 'Arn'] } } } }),
    ]));
    t.hasResourceProperties('AWS::IAM::Role', { RoleName: 'orders-mapping-publisher' });
  });

  it('lets each router group read only its own pointer and the immutable versions', () => {
    for (const template of [t, t2]) {
      for (const group of ['canary', 'main']) {
        const [policy] = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) => JSON.stringify(p.Properties.Roles).includes(`Group${group}TaskTaskRole`));
        expect(policy.Properties.PolicyDocument.Statement).toEqual([{
          Action: 's3:GetObject', Effect: 'Allow',
          Resource: [`arn:aws:s3:::orders-mappings-222222222222/groups/${group}/mapping.json`, 'arn:aws:s3:::orders-mappings-222222222222/mappings/*'],
        }]);
      }
    }
  });

  it('runs each router group as its own Fargate service, HAProxy and agent side by side, rolled out group by group', () => {
    const services = t.findResources('AWS::ECS::Service');
    type Service = { id: string; Properties: Record<string, unknown> & { ServiceName: string }; DependsOn?: string[] };
    const byName: Record<string, Service> = Object.fromEntries(Object.entries(services).map(([id, s]) => [s.Properties.ServiceName, { id, ...s } as Service]));
    expect(Object.keys(byName).sort()).toEqual(['orders-router-eu-west-1-canary', 'orders-router-eu-west-1-main']);
    expect(byName['orders-router-eu-west-1-canary'].Properties.DesiredCount).toBe(2);
    expect(byName['orders-router-eu-west-1-main'].Properties.DesiredCount).toBe(6);
    expect(byName['orders-router-eu-west-1-main'].DependsOn).toContain(byName['orders-router-eu-west-1-canary'].id);
    for (const s of Object.values(byName)) {
      expect(s.Properties.DeploymentConfiguration).toMatchObject({ DeploymentCircuitBreaker: { Enable: true, Rollback: true }, Alarms: { Enable: true, Rollback: true }, MinimumHealthyPercent: 100 });
      expect(s.Properties.LoadBalancers).toHaveLength(1);
    }
    const tasks = Object.values(t.findResources('AWS::ECS::TaskDefinition'));
    expect(tasks).toHaveLength(2);
    for (const task of tasks) {
      expect(task.Properties.ContainerDefinitions.map((c: { Name: string }) => c.Name)).toEqual(['haproxy', 'agent']);
      expect(task.Properties.Volumes).toEqual([{ Name: 'state' }]);
      // Both containers share the state volume as the same user, so the agent can write the maps HAProxy reads.
      for (const c of task.Properties.ContainerDefinitions) {
        expect(c).toMatchObject({ User: '99:99', MountPoints: [{ ContainerPath: '/var/lib/cell-router', SourceVolume: 'state', ReadOnly: false }] });
      }
      // HAProxy is the task; the agent dying must not take it down, so ECS restarts the agent in place.
      const [haproxy, agent] = task.Properties.ContainerDefinitions;
      expect(haproxy.Essential).toBe(true);
      expect(agent).toMatchObject({ Essential: false, RestartPolicy: { Enabled: true, RestartAttemptPeriod: 60, IgnoredExitCodes: [2] } });
      // The agent uses as many backend slots as the image's HAProxy has: the fleet's router.slots.
      expect(agent.Environment).toContainEqual({ Name: 'SLOTS', Value: String(fleet.router.slots) });
    }
    t.resourceCountIs('AWS::ApplicationAutoScaling::ScalingPolicy', 4 + 2); // CPU target + connection steps (2 policies) per group
  });

  it('puts every group behind one NLB that checks readiness on the agent', () => {
    t.resourceCountIs('AWS::ElasticLoadBalancingV2::LoadBalancer', 1);
    t.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', { Type: 'network', Scheme: 'internet-facing' });
    t.resourceCountIs('AWS::ElasticLoadBalancingV2::TargetGroup', 1);
    t.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', { Port: 8080, HealthCheckPort: '8081', HealthCheckPath: '/ready' });
  });

  it('reaches each cell through its own interface endpoint and security group', () => {
    t.resourceCountIs('AWS::EC2::VPCEndpoint', 3); // two cells + the S3 gateway endpoint
    const endpoints = Object.values(t.findResources('AWS::EC2::VPCEndpoint', { Properties: { VpcEndpointType: 'Interface' } }));
    expect(endpoints.map((e) => e.Properties.ServiceName).sort()).toEqual(['com.amazonaws.vpce.eu-west-1.vpce-svc-0123456789abcdef0', 'com.amazonaws.vpce.eu-west-1.vpce-svc-0223456789abcdef0']);
    const groups = endpoints.map((e) => JSON.stringify(e.Properties.SecurityGroupIds));
    expect(new Set(groups).size).toBe(2);
    t2.resourceCountIs('AWS::EC2::VPCEndpoint', 1);
  });

  it('alarms on router 5xx, rejected keys, stale mappings, rejected documents, unhealthy tasks, and per cell', () => {
    const names = Object.values(t.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties.AlarmName as string | undefined).filter((n): n is string => n !== undefined).sort();
    for (const group of ['canary', 'main']) {
      for (const kind of ['5xx', 'rejected-keys', 'stale-mapping', 'rejected-documents', 'unhealthy-tasks']) expect(names).toContain(`orders-router-eu-west-1-${group}-${kind}`);
    }
    for (const cell of ['canary-eu', 'eu-1', 'eu-2', 'eu-3']) expect(names).toContain(`orders-router-eu-west-1-cell-${cell}-errors`);
    expect(names.filter((n) => n.includes('-cell-us-'))).toEqual([]);
    t.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'orders-router-eu-west-1-main-stale-mapping', Threshold: 600, TreatMissingData: 'breaching' });
  });

  it('sends every router alarm, composites included, to an encrypted topic on ALARM and on OK', () => {
    const topics = t.findResources('AWS::SNS::Topic');
    const [topicId] = Object.entries(topics).find(([, r]) => r.Properties.TopicName === 'orders-router-eu-west-1-alarms')!;
    expect(topics[topicId].Properties.KmsMasterKeyId).toBeDefined();
    // Ours, by name (the services' target-tracking alarms belong to auto scaling and page nobody).
    const alarms = [...Object.values(t.findResources('AWS::CloudWatch::Alarm')), ...Object.values(t.findResources('AWS::CloudWatch::CompositeAlarm'))]
      .filter((a) => String(a.Properties.AlarmName).startsWith('orders-router-eu-west-1-'));
    expect(alarms.length).toBe(5 * 2 + 2 + 4); // five per group, a composite per group, one per cell of the region
    for (const alarm of alarms) {
      expect([alarm.Properties.AlarmActions, alarm.Properties.OKActions]).toEqual([[{ Ref: topicId }], [{ Ref: topicId }]]);
    }
    t.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true, KeyPolicy: Match.objectLike({ Statement: Match.arrayWith([Match.objectLike({ Principal: { Service: 'cloudwatch.amazonaws.com' } })]) }) });
  });

  it('has a dashboard with a row per cell and per router group', () => {
    const [dashboard] = Object.values(t.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const cell of ['canary-eu', 'eu-1', 'eu-2', 'eu-3']) expect(body).toContain(`cell ${cell}: requests`);
    for (const group of ['canary', 'main']) expect(body).toContain(`group ${group}: mapping version`);
  });

  it('pages the dashboard so that none exceeds CloudWatch\'s 500 widgets, whatever the number of cells', () => {
    const names = (tpl: Template) => Object.values(tpl.findResources('AWS::CloudWatch::Dashboard')).map((d) => d.Properties.DashboardName as string);
    expect(names(t)).toEqual(['orders-router-eu-west-1']);
    // 2 regions: the first gets cells 0, 2, 4, … (one more than a page and a half).
    const large = resolve(generateFleet(exampleInput(), 2 * (CELLS_PER_DASHBOARD + 80)));
    const stack = new RouterStack(cdkApp(), 'router-large', { fleet: large, region: 'eu-west-1' });
    const template = Template.fromStack(stack);
    const bodies = Object.values(template.findResources('AWS::CloudWatch::Dashboard')).map((d) => JSON.stringify(d.Properties.DashboardBody));
    const widgets = bodies.map((b) => (b.match(/\\"type\\":\\"metric\\"/g) ?? []).length);
    expect(names(template)).toEqual(['orders-router-eu-west-1', 'orders-router-eu-west-1-cells-2']);
    expect(stack.dashboards).toHaveLength(2);
    expect(widgets).toEqual([3 * CELLS_PER_DASHBOARD + 3 * large.router.groups.length, 3 * 80]);
    expect(Math.max(...widgets)).toBeLessThanOrEqual(500);
    for (const cell of large.cells.filter((c) => c.region === 'eu-west-1')) expect(bodies.some((b) => b.includes(`cell ${cell.id}: requests`))).toBe(true);
    // 230 cells in one region: the template as written still fits CloudFormation's 1 MB (compact JSON).
    const written = (stack.node.root as Stage).synth().getStackArtifact(stack.artifactId).templateFullPath;
    expect(fs.statSync(written).size).toBeLessThan(1_000_000);
  });

  it('has no unacknowledged AwsSolutions finding', () => {
    for (const stack of [primary, secondary]) expect(new AwsSolutionsChecks().validateScope(stack).violations.map((v) => v.ruleName)).toEqual([]);
  });
});
