import * as fs from 'fs';
import * as path from 'path';
import { NestedStack, Stage } from 'aws-cdk-lib';
import { Template, Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { Fleet, generateFleet, seedMapping } from '../../../lib/domain/fleet';
import { lookup, validateMapping } from '../../../lib/domain/mapping';
import { serializeMapping } from '../../../lib/adapters/mapping-store';
import {
  CELLS_PER_DASHBOARD,
  CELLS_PER_LINK_STACK,
  CellLinksStack,
  RECORD_LANES,
  CONNECTION_USE_ALARM_PERCENT,
  CONNECTION_USE_STEPS,
  CONNECTION_USE_TARGET_PERCENT,
  RouterGroupsStack,
  RouterStack,
} from '../../../lib/constructs/router';
import { routerGroupsOf, routerGroupsStackPropsOf, routerStackPropsOf } from '../../../lib/app/router-props';
import { routerParameters } from '../../../lib/domain/names';
import { LIMITS } from '../../../lib/domain/limits';

import { connectionLimits, READY_PORT, renderHaproxyConfig } from '../../../lib/runtime/router';
import { cdkApp, exampleFleet, exampleInput, resolve, validInput } from '../../support/fleet';

describe('RouterStack', () => {
  let fleet: Fleet;
  let primary: RouterStack;
  let secondary: RouterStack;
  let t: Template;
  let t2: Template;
  /** The nested stacks holding each region's links to the cells (one for the example fleet). */
  let links: Template;
  let links2: Template;
  /** The group stacks: canary group and other groups, per region. */
  let canary: RouterGroupsStack;
  let rest: RouterGroupsStack;
  let gc: Template;
  let gr: Template;
  let gc2: Template;
  let gr2: Template;
  /** The group stacks' templates of the first region, canary first. */
  let groupTemplates: Template[];
  beforeAll(() => {
    fleet = exampleFleet();
    const app = cdkApp();
    primary = new RouterStack(app, 'router-eu-west-1', routerStackPropsOf(fleet, 'eu-west-1'));
    secondary = new RouterStack(app, 'router-us-east-1', routerStackPropsOf(fleet, 'us-east-1'));
    canary = new RouterGroupsStack(app, 'router-eu-west-1-canary-group', routerGroupsStackPropsOf(fleet, 'eu-west-1', 'canary'));
    rest = new RouterGroupsStack(app, 'router-eu-west-1-groups', routerGroupsStackPropsOf(fleet, 'eu-west-1', 'rest'));
    const canary2 = new RouterGroupsStack(app, 'router-us-east-1-canary-group', routerGroupsStackPropsOf(fleet, 'us-east-1', 'canary'));
    const rest2 = new RouterGroupsStack(app, 'router-us-east-1-groups', routerGroupsStackPropsOf(fleet, 'us-east-1', 'rest'));
    t = Template.fromStack(primary);
    t2 = Template.fromStack(secondary);
    gc = Template.fromStack(canary);
    gr = Template.fromStack(rest);
    gc2 = Template.fromStack(canary2);
    gr2 = Template.fromStack(rest2);
    groupTemplates = [gc, gr];
    links = Template.fromStack(primary.node.findChild('CellLinks1') as NestedStack);
    links2 = Template.fromStack(secondary.node.findChild('CellLinks1') as NestedStack);
  });

  /** Resources of one type across the first region's two group stacks. */
  const inGroups = (type: string, props?: object) => ({ ...gc.findResources(type, props), ...gr.findResources(type, props) });

  it('deploys into the router account, across three AZs', () => {
    expect(`${primary.account}/${primary.region}`).toBe('222222222222/eu-west-1');
    // By AZ ID: the same zones as the cells' endpoint services, whose accounts name zones differently.
    const subnets = Object.values(t.findResources('AWS::EC2::Subnet'));
    expect(new Set(subnets.map((s) => s.Properties.AvailabilityZoneId))).toEqual(new Set(['euw1-az1', 'euw1-az2', 'euw1-az3']));
    expect(subnets.filter((s) => s.Properties.AvailabilityZone !== undefined)).toEqual([]);
    expect(
      () =>
        new RouterStack(
          cdkApp(),
          'r',
          routerStackPropsOf({ ...fleet, regions: { ...fleet.regions, 'eu-west-1': { availabilityZones: ['euw1-az1', 'euw1-az2'] } } }, 'eu-west-1'),
        ),
    ).toThrow(/at least 3 Availability Zones/);
  });

  it('gives every region its own mapping bucket: versioned, encrypted, private, TLS-only, logged, bounded old versions', () => {
    for (const template of [t, t2]) {
      template.hasResourceProperties('AWS::S3::Bucket', {
        VersioningConfiguration: { Status: 'Enabled' },
        BucketEncryption: Match.objectLike({}),
        PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
        LoggingConfiguration: Match.objectLike({ DestinationBucketName: Match.anyValue() }),
        LifecycleConfiguration: {
          Rules: [
            Match.objectLike({ NoncurrentVersionExpiration: { NewerNoncurrentVersions: 20, NoncurrentDays: 1 } }),
            // The routers' served-version reports: heartbeats are worthless after a day; a report nobody refreshes for a week is a task that is gone.
            Match.objectLike({ Id: 'ServedReports', Prefix: 'served/', ExpirationInDays: 7, NoncurrentVersionExpiration: { NoncurrentDays: 1 } }),
            Match.objectLike({ Id: 'ServedReportMarkers', Prefix: 'served/', ExpiredObjectDeleteMarker: true }),
          ],
        },
      });
      // Named for `cellctl mapping publish` in this region's SSM, so it can find every region's bucket.
      template.hasResourceProperties('AWS::SSM::Parameter', {
        Name: '/orders/router/mapping-bucket',
        Value: { Ref: Match.stringLikeRegexp('^MappingsBucket') },
      });
    }
  });

  it('names the mapping bucket after its stack id, so a retried first create does not meet its retained predecessor', () => {
    const [bucket] = Object.values(
      t.findResources('AWS::S3::Bucket', { Properties: { VersioningConfiguration: { Status: 'Enabled' }, BucketName: Match.anyValue() } }),
    );
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(JSON.stringify(bucket.Properties.BucketName)).toMatch(
      /^\{"Fn::Join":\["",\["orders-mappings-222222222222-",\{"Fn::Select":\[4,\{"Fn::Split":\["-",\{"Fn::Select":\[2,\{"Fn::Split":\["\/",\{"Ref":"AWS::StackId"\}/,
    );
  });

  it("leaves the NLB's deletion protection to the pipeline (after the first successful deploy), through a role that may change only that NLB's attributes", () => {
    const [[lbId, lb]] = Object.entries(t.findResources('AWS::ElasticLoadBalancingV2::LoadBalancer'));
    expect(JSON.stringify(lb.Properties.LoadBalancerAttributes)).not.toContain('deletion_protection');
    const [[roleId, role]] = Object.entries(t.findResources('AWS::IAM::Role', { Properties: { RoleName: 'orders-router-eu-west-1-protector' } }));
    expect(role.Properties.AssumeRolePolicyDocument.Statement[0].Principal).toEqual({ AWS: `arn:aws:iam::${fleet.accounts.tooling}:root` });
    const [policy] = Object.values(t.findResources('AWS::IAM::Policy')).filter(
      (p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: roleId }]),
    );
    expect(policy.Properties.PolicyDocument.Statement).toEqual([
      expect.objectContaining({ Action: 'elasticloadbalancing:ModifyLoadBalancerAttributes', Resource: { Ref: lbId } }),
      // A read (no resource-level permission exists for it): a re-run skips what is already protected.
      expect.objectContaining({ Action: 'elasticloadbalancing:DescribeLoadBalancerAttributes', Resource: '*' }),
    ]);
  });

  it('lets only the publisher, the move operator (freeze, flip) and the seeding custom resource write documents', () => {
    for (const template of [t, t2]) {
      const [policy] = Object.values(
        template.findResources('AWS::S3::BucketPolicy', { Properties: { Bucket: { Ref: Match.stringLikeRegexp('MappingsBucket') } } }),
      );
      const statements = policy.Properties.PolicyDocument.Statement;
      expect(statements).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          expect.objectContaining({
            Effect: 'Deny',
            Action: expect.arrayContaining(['s3:PutObject', 's3:DeleteObject']),
            Condition: {
              ArnNotEquals: {
                'aws:PrincipalArn': [
                  { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::222222222222:role/orders-mapping-publisher']] },
                  { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::222222222222:role/orders-move-operator']] },
                  { 'Fn::GetAtt': [expect.stringMatching(/^CustomResourceRole/), 'Arn'] },
                ],
              },
            },
          }),
        ]),
      );
      // Under served/ only the router groups' task roles write, each only its own group's reports.
      const region = template === t ? 'eu-west-1' : 'us-east-1';
      const role = (group: string) => ({
        'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:iam::222222222222:role/orders-router-${region}-${group}-task`]],
      });
      const served = statements.filter((x: { Resource?: unknown }) => JSON.stringify(x.Resource ?? '').includes('/served/'));
      expect(
        served.map((x: { Effect: string; Resource: unknown; Condition: unknown }) => [
          x.Effect,
          JSON.stringify(x.Resource).match(/\/served\/[^"]*/)![0],
          x.Condition,
        ]),
      ).toEqual([
        ['Deny', '/served/*', { ArnNotEquals: { 'aws:PrincipalArn': [role('canary'), role('main')] } }],
        ['Deny', '/served/canary/*', { ArnNotEquals: { 'aws:PrincipalArn': role('canary') } }],
        ['Deny', '/served/main/*', { ArnNotEquals: { 'aws:PrincipalArn': role('main') } }],
      ]);
    }
  });

  it("holds one publisher role (in the first region) that finds and writes every region's bucket of this account", () => {
    t.hasResourceProperties('AWS::IAM::Role', { RoleName: 'orders-mapping-publisher' });
    t2.resourcePropertiesCountIs('AWS::IAM::Role', { RoleName: 'orders-mapping-publisher' }, 0);
    const [policy] = Object.values(t.findResources('AWS::IAM::Policy')).filter((p) => JSON.stringify(p.Properties.Roles).includes('PublisherRole'));
    const text = JSON.stringify(policy.Properties.PolicyDocument);
    expect(text).toContain(':s3:::orders-mappings-222222222222-*/mappings/*');
    expect(text).toContain('"s3:ResourceAccount":"222222222222"');
    for (const region of ['eu-west-1', 'us-east-1']) expect(text).toContain(`:ssm:${region}:222222222222:parameter/orders/router/mapping-bucket`);
  });

  it("keeps the router account's one-per-fleet resources in router.homeRegion, whatever the order of `regions`", () => {
    // A region added first: the home stays where it was.
    const reordered = resolve({ ...validInput(), regions: Object.fromEntries(Object.entries(validInput().regions).reverse()) });
    expect(Object.keys(reordered.regions)[0]).toBe('us-east-1');
    const app = cdkApp();
    const stacks = ['eu-west-1', 'us-east-1'].map((region) => new RouterStack(app, `home-${region}`, routerStackPropsOf(reordered, region)));
    const [eu, us] = stacks.map((stack) => Template.fromStack(stack));
    for (const name of ['orders-mapping-publisher', 'orders-move-operator']) {
      eu.resourcePropertiesCountIs('AWS::IAM::Role', { RoleName: name }, 1);
      us.resourcePropertiesCountIs('AWS::IAM::Role', { RoleName: name }, 0);
    }
    eu.resourcePropertiesCountIs('AWS::SSM::Parameter', { Name: '/orders/moves/bucket' }, 1);
    us.resourcePropertiesCountIs('AWS::SSM::Parameter', { Name: '/orders/moves/bucket' }, 0);
  });

  it("seeds the fleet's first mapping on create only, never over an existing object, with its own bundled SDK", () => {
    for (const stack of [primary, secondary]) {
      // In a nested stack of its own: the document inlined once per key would fill the router template.
      const seedStacks = stack.node.children.filter((c): c is NestedStack => c instanceof NestedStack && c.node.id === 'MappingSeedStack');
      expect(seedStacks).toHaveLength(1);
      const template = Template.fromStack(seedStacks[0]);
      expect(Template.fromStack(stack).findResources('Custom::MappingSeed')).toEqual({});
      const seeds = Object.values(template.findResources('Custom::MappingSeed'));
      expect(seeds).toHaveLength(1 + fleet.router.groups.length);
      // The seed handler (lib/runtime/handlers/mapping-seed-handler.ts, its tests in mapping-seed.test.ts)
      // writes each key with If-None-Match: * on create and does nothing on update or delete.
      const [handlerId] = Object.keys(
        Template.fromStack(stack).findResources('AWS::Lambda::Function', {
          Properties: { Description: Match.stringLikeRegexp('Seeds the mapping bucket') },
        }),
      );
      // The handler stays in the router stack (its role's policy grants it its log group); the nested stack gets its ARN.
      const [seedStackResource] = Object.entries(Template.fromStack(stack).findResources('AWS::CloudFormation::Stack'))
        .filter(([id]) => id.startsWith('MappingSeedStack'))
        .map(([, r]) => r.Properties.Parameters as Record<string, unknown>);
      const tokenParameter = Object.entries(seedStackResource).find(
        ([, v]) => JSON.stringify(v) === JSON.stringify({ 'Fn::GetAtt': [handlerId, 'Arn'] }),
      )![0];
      expect(seeds.map((r) => r.Properties.Key).sort()).toEqual(['groups/canary/mapping.json', 'groups/main/mapping.json', 'mappings/v1.json']);
      for (const r of seeds) {
        expect(r.Properties).toMatchObject({
          ServiceToken: { Ref: tokenParameter },
          Bucket: { Ref: expect.stringMatching(/MappingsBucket/) },
        });
        // Byte for byte what publish writes, so `cellctl mapping init` + publish finds it already there.
        expect(r.Properties.Body).toBe(serializeMapping(seedMapping(fleet)));
      }
    }
  });

  it('seeds a valid document that routes every bucket to a fleet cell, by names the router VPC resolves', () => {
    const doc = seedMapping(fleet);
    expect(validateMapping(doc)).toEqual([]);
    const covered = doc.buckets.reduce((n, r) => n + r.to - r.from + 1, 0);
    expect(covered).toBe(fleet.bucketCount);
    expect(lookup(doc, 'internal-smoke').cell).toBe('canary-eu');
    const named = new Set(Object.values(links.findResources('AWS::Route53::RecordSet')).map((r) => r.Properties.Name as string));
    for (const [id, cell] of Object.entries(doc.cells)) {
      expect(fleet.cells.map((c) => c.id)).toContain(id);
      expect(cell.endpoint).toBe(`http://${id}.orders.cells.internal`);
      expect(named).toContain(`${id}.orders.cells.internal.`);
    }
  });

  it('hands the group stacks what they need through SSM parameters, never an export, and splits the groups canary first', () => {
    expect([canary.stackName, rest.stackName]).toEqual(['orders-router-eu-west-1-canary-group', 'orders-router-eu-west-1-groups']);
    expect(routerGroupsOf(fleet, 'canary').map((g) => g.name)).toEqual(['canary']);
    expect(routerGroupsOf(fleet, 'rest').map((g) => g.name)).toEqual(['main']);
    const names = [
      routerParameters.clusterName('orders'),
      routerParameters.taskSubnetIds('orders'),
      routerParameters.taskSecurityGroupId('orders'),
      ...fleet.router.groups.map((g) => routerParameters.targetGroupArn('orders', g.name)),
    ];
    for (const template of [t, t2]) {
      const written = Object.values(template.findResources('AWS::SSM::Parameter')).map((p) => p.Properties.Name);
      expect(written).toEqual(expect.arrayContaining(names));
      // Nothing exported: a removed group or replaced target group can never be held by an import.
      expect(Object.values(template.toJSON().Outputs ?? {}).filter((o) => (o as { Export?: unknown }).Export)).toEqual([]);
    }
    const [taskSubnets] = Object.values(t.findResources('AWS::SSM::Parameter', { Properties: { Name: routerParameters.taskSubnetIds('orders') } }));
    expect(JSON.stringify(taskSubnets.Properties.Value)).toMatch(/^\{"Fn::Join":\[",",\[\{"Ref":"VpcroutersSubnet1/);
    const [tgArn] = Object.values(
      t.findResources('AWS::SSM::Parameter', { Properties: { Name: routerParameters.targetGroupArn('orders', 'main') } }),
    );
    expect(tgArn.Properties.Value).toEqual({ Ref: expect.stringMatching(/^Targetsmain/) });
    for (const [template, groups] of [
      [gc, ['canary']],
      [gr, ['main']],
    ] as const) {
      const json = JSON.stringify(template.toJSON());
      expect(json).not.toContain('Fn::ImportValue');
      // Read on every deploy of the group stack, from the parameters the router stack wrote.
      const parameters = Object.values(template.toJSON().Parameters as Record<string, { Type: string; Default?: string }>)
        .filter((p) => p.Type === 'AWS::SSM::Parameter::Value<String>' && !p.Default?.startsWith('/cdk-bootstrap/'))
        .map((p) => p.Default);
      expect(parameters.sort()).toEqual(
        [
          routerParameters.clusterName('orders'),
          routerParameters.taskSubnetIds('orders'),
          routerParameters.taskSecurityGroupId('orders'),
          routerParameters.zoneNetworks('orders'),
          '/orders/router/mapping-bucket',
          ...groups.map((g) => routerParameters.targetGroupArn('orders', g)),
        ].sort(),
      );
    }
  });

  it("lets each router group read only its own pointer and the immutable versions of its region's bucket, and list only its pointer's key", () => {
    for (const [template, group, region] of [
      [gc, 'canary', 'eu-west-1'],
      [gr, 'main', 'eu-west-1'],
      [gc2, 'canary', 'us-east-1'],
      [gr2, 'main', 'us-east-1'],
    ] as const) {
      {
        const [policy] = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
          JSON.stringify(p.Properties.Roles).includes(`Group${group}TaskRole`),
        );
        // Named: the region's mapping bucket policy names it as the only writer of the group's served/ reports.
        template.hasResourceProperties('AWS::IAM::Role', { RoleName: `orders-router-${region}-${group}-task` });
        // The region's bucket, by the name its router stack wrote to SSM.
        const bucket = { Ref: expect.stringMatching(/^SsmParameterValueordersroutermappingbucket/) };
        expect(policy.Properties.PolicyDocument.Statement).toEqual([
          {
            Action: 's3:GetObject',
            Effect: 'Allow',
            Resource: [
              { 'Fn::Join': ['', ['arn:aws:s3:::', bucket, `/groups/${group}/mapping.json`]] },
              { 'Fn::Join': ['', ['arn:aws:s3:::', bucket, '/mappings/*']] },
              // The region's zones document (ZoneWeightsFollower).
              { 'Fn::Join': ['', ['arn:aws:s3:::', bucket, `/zones/${region}.json`]] },
            ],
          },
          {
            // Exactly the zones document's key, as for the pointer.
            Action: 's3:ListBucket',
            Effect: 'Allow',
            Condition: { StringEquals: { 's3:prefix': `zones/${region}.json` } },
            Resource: { 'Fn::Join': ['', ['arn:aws:s3:::', bucket]] },
          },
          {
            // Exactly its pointer's key: on S3's 403 the agent lists it to tell "not published yet" from "denied".
            Action: 's3:ListBucket',
            Effect: 'Allow',
            Condition: { StringEquals: { 's3:prefix': `groups/${group}/mapping.json` } },
            Resource: { 'Fn::Join': ['', ['arn:aws:s3:::', bucket]] },
          },
          {
            // Its tasks' reports of the version they serve (what a move waits on), under its group's prefix only.
            Action: 's3:PutObject',
            Effect: 'Allow',
            Resource: { 'Fn::Join': ['', ['arn:aws:s3:::', bucket, `/served/${group}/*`]] },
          },
          {
            // Its target group's health, for a full task's readiness (FullReadinessGate); the action takes no resource.
            Action: 'elasticloadbalancing:DescribeTargetHealth',
            Effect: 'Allow',
            Resource: '*',
          },
        ]);
      }
      const [task] = Object.values(template.findResources('AWS::ECS::TaskDefinition'));
      const agent = task.Properties.ContainerDefinitions.find((c: { Name: string }) => c.Name === 'agent');
      expect(agent.Environment).toEqual(
        expect.arrayContaining([
          { Name: 'MAPPING_BUCKET', Value: { Ref: expect.stringMatching(/^SsmParameterValueordersroutermappingbucket/) } },
          { Name: 'AWS_REGION', Value: region },
          { Name: 'TARGET_GROUP_ARN', Value: expect.anything() },
          // Its zones: the router stack's endpoint subnets by AZ ID, and the region whose zones document it follows.
          { Name: 'REGION', Value: region },
          { Name: 'ZONE_NETWORKS', Value: { Ref: expect.stringMatching(/^SsmParameterValueordersrouterzonenetworks/) } },
        ]),
      );
    }
  });

  it("publishes the cell endpoints' subnets by AZ ID, in the fleet's zone order, for the agents' zonal servers", () => {
    for (const [stack, template] of [
      [primary, t],
      [secondary, t2],
    ] as const) {
      const [parameter] = Object.values(
        template.findResources('AWS::SSM::Parameter', { Properties: { Name: routerParameters.zoneNetworks('orders') } }),
      );
      const networks = JSON.parse(parameter.Properties.Value as string) as Record<string, string[]>;
      expect(Object.keys(networks)).toEqual(fleet.regions[stack.region].availabilityZones);
      // Each zone's endpoint subnet (a /23), then its router task subnet (a /24: a task finds its own
      // zone by it, router.zoneAffinity), both as CloudFormation creates them in that zone.
      const subnets = Object.values(template.findResources('AWS::EC2::Subnet')).map(
        (r) => r.Properties as { AvailabilityZoneId: string; CidrBlock: string },
      );
      for (const [zone, [endpoints, tasks]] of Object.entries(networks)) {
        expect(subnets).toContainEqual(expect.objectContaining({ AvailabilityZoneId: zone, CidrBlock: endpoints }));
        expect(subnets).toContainEqual(expect.objectContaining({ AvailabilityZoneId: zone, CidrBlock: tasks }));
        expect([endpoints.split('/')[1], tasks.split('/')[1]]).toEqual(['23', '24']);
      }
      expect(new Set(Object.values(networks).flat()).size).toBe(2 * Object.keys(networks).length);
    }
  });

  it('runs each router group as its own Fargate service, HAProxy and agent side by side, rolled out group by group', () => {
    // None in the router stack: each group's service is in its group stack.
    t.resourceCountIs('AWS::ECS::Service', 0);
    expect(Object.values(gc.findResources('AWS::ECS::Service')).map((x) => x.Properties.ServiceName)).toEqual(['orders-router-eu-west-1-canary']);
    const services = inGroups('AWS::ECS::Service');
    type Service = { id: string; Properties: Record<string, unknown> & { ServiceName: string }; DependsOn?: string[] };
    const byName: Record<string, Service> = Object.fromEntries(
      Object.entries(services).map(([id, s]) => [s.Properties.ServiceName, { id, ...s } as Service]),
    );
    expect(Object.keys(byName).sort()).toEqual(['orders-router-eu-west-1-canary', 'orders-router-eu-west-1-main']);
    expect(byName['orders-router-eu-west-1-canary'].Properties.DesiredCount).toBe(2);
    expect(byName['orders-router-eu-west-1-main'].Properties.DesiredCount).toBe(6);
    for (const s of Object.values(byName)) {
      expect(s.Properties.DeploymentConfiguration).toMatchObject({
        DeploymentCircuitBreaker: { Enable: true, Rollback: true },
        Alarms: { Enable: true, Rollback: true },
        MinimumHealthyPercent: 100,
      });
      expect(s.Properties.LoadBalancers).toHaveLength(1);
    }
    // Deployments roll back on the group's own 5xx metric alarm, never on a composite (no ECS
    // reference says DeploymentAlarms takes one) nor on one that is in ALARM while a first start runs.
    for (const [template, group] of [
      [gc, 'canary'],
      [gr, 'main'],
    ] as const) {
      const [service] = Object.values(template.findResources('AWS::ECS::Service'));
      const [[alarmId]] = Object.entries(
        template.findResources('AWS::CloudWatch::Alarm', { Properties: { AlarmName: `orders-router-eu-west-1-${group}-5xx` } }),
      );
      expect(service.Properties.DeploymentConfiguration.Alarms.AlarmNames).toEqual([{ Ref: alarmId }]);
      expect(
        Object.keys(template.findResources('AWS::CloudWatch::CompositeAlarm')).some((id) =>
          JSON.stringify(service.Properties.DeploymentConfiguration).includes(id),
        ),
      ).toBe(false);
    }
    const tasks = Object.values(inGroups('AWS::ECS::TaskDefinition'));
    expect(tasks).toHaveLength(2);
    for (const task of tasks) {
      expect(task.Properties.ContainerDefinitions.map((c: { Name: string }) => c.Name)).toEqual(['haproxy', 'agent']);
      expect(task.Properties.Volumes).toEqual([{ Name: 'state' }, { Name: 'agent-tmp' }]);
      // Both containers share the state volume as the same user, so the agent can write the maps HAProxy
      // reads; neither can write its root file system.
      for (const c of task.Properties.ContainerDefinitions) {
        expect(c).toMatchObject({ User: '99:99', ReadonlyRootFilesystem: true });
        expect(c.MountPoints).toContainEqual({ ContainerPath: '/var/lib/cell-router', SourceVolume: 'state', ReadOnly: false });
      }
      // HAProxy is the task; the agent dying must not take it down, so ECS restarts the agent in place.
      const [haproxy, agent] = task.Properties.ContainerDefinitions;
      expect(haproxy.Essential).toBe(true);
      expect(agent).toMatchObject({ Essential: false, RestartPolicy: { Enabled: true, RestartAttemptPeriod: 60, IgnoredExitCodes: [2] } });
      // The agent uses as many backend slots as the image's HAProxy has: the fleet's router.slots.
      expect(agent.Environment).toContainEqual({ Name: 'SLOTS', Value: String(fleet.router.slots) });
      expect(agent.Environment).toContainEqual({ Name: 'CELL_MAX_CONN', Value: String(fleet.router.cellMaxConn) });
      // HAProxy's connection limit follows from the task memory, and the descriptors it needs are there.
      const limits = connectionLimits(task.Properties.Memory === undefined ? 0 : Number(task.Properties.Memory));
      expect(haproxy.Ulimits).toEqual([{ Name: 'nofile', SoftLimit: limits.nofile, HardLimit: limits.nofile }]);
      // Soft stop (SIGUSR1) gets 30 s; HAProxy's hard-stop-after (25 s) ends in-flight requests before SIGKILL.
      expect(haproxy.StopTimeout).toBe(30);
      expect(
        renderHaproxyConfig({
          bind: { address: '0.0.0.0', port: 1 },
          adminSocket: 'ipv4@127.0.0.1:1',
          stateDir: '/s',
          partitionKey: fleet.partitionKey,
          bucketCount: 1024,
          slots: 1,
          cellMaxConn: 1,
          healthCheckPath: '/',
        }),
      ).toContain('hard-stop-after 25000ms');
      expect(haproxy.PortMappings.map((p: { ContainerPort: number }) => p.ContainerPort)).toEqual([8080, 8081]);
    }
  });

  it("scales each group on its own tasks' connection use: the average task tracked, the busiest task stepped before readiness turns off", () => {
    const policies = Object.values(inGroups('AWS::ApplicationAutoScaling::ScalingPolicy'));
    // Per group: CPU and connection-use target tracking, one step policy (scale-out only).
    expect(policies).toHaveLength(3 * fleet.router.groups.length);
    for (const group of fleet.router.groups) {
      const dims = [{ Name: 'RouterGroup', Value: group.name }];
      expect(
        policies.map((p) => p.Properties.TargetTrackingScalingPolicyConfiguration?.CustomizedMetricSpecification).filter(Boolean),
      ).toContainEqual({ Namespace: 'CellRouter', MetricName: 'ConnectionUsePercent', Dimensions: dims, Statistic: 'Average' });
      const tracking = policies.find(
        (p) =>
          JSON.stringify(p.Properties.TargetTrackingScalingPolicyConfiguration?.CustomizedMetricSpecification?.Dimensions) === JSON.stringify(dims),
      )!;
      expect(tracking.Properties.TargetTrackingScalingPolicyConfiguration.TargetValue).toBe(CONNECTION_USE_TARGET_PERCENT);
      // The step alarm watches the busiest task of this group (no NLB-wide flow count) and fires below 90%.
      const [stepAlarm] = Object.values(
        inGroups('AWS::CloudWatch::Alarm', {
          Properties: {
            MetricName: 'ConnectionUsePercent',
            Statistic: 'Maximum',
            Dimensions: dims,
            ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          },
        }),
      ).filter((a) => a.Properties.AlarmName === undefined);
      expect(stepAlarm.Properties.Threshold).toBe(CONNECTION_USE_STEPS[0]);
      expect(CONNECTION_USE_STEPS[1]).toBeLessThan(90);
    }
    const steps = policies.filter((p) => p.Properties.PolicyType === 'StepScaling');
    expect(steps.map((p) => p.Properties.StepScalingPolicyConfiguration.StepAdjustments)).toEqual(
      fleet.router.groups.map(() => [
        { MetricIntervalLowerBound: 0, MetricIntervalUpperBound: CONNECTION_USE_STEPS[1] - CONNECTION_USE_STEPS[0], ScalingAdjustment: 1 },
        { MetricIntervalLowerBound: CONNECTION_USE_STEPS[1] - CONNECTION_USE_STEPS[0], ScalingAdjustment: 2 },
      ]),
    );
    for (const template of [t, ...groupTemplates]) expect(JSON.stringify(template.toJSON())).not.toContain('ActiveFlowCount');
  });

  it("lets the pipeline's bake step (tooling account) read the router alarms, and nothing else", () => {
    const [role] = Object.values(t.findResources('AWS::IAM::Role', { Properties: { RoleName: 'orders-router-eu-west-1-bake-watcher' } }));
    expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain(':iam::111111111111:root');
    expect(primary.groupHealthAlarms).toEqual([
      { group: 'canary', alarmName: 'orders-router-eu-west-1-canary-health' },
      { group: 'main', alarmName: 'orders-router-eu-west-1-main-health' },
    ]);
    gc.hasResourceProperties('AWS::CloudWatch::CompositeAlarm', { AlarmName: 'orders-router-eu-west-1-canary-health' });
    expect(canary.groupHealthAlarms).toEqual([primary.groupHealthAlarms[0]]);
    expect(rest.groupHealthAlarms).toEqual([primary.groupHealthAlarms[1]]);
  });

  it("gives each group its own target group behind one NLB, forwarding by the groups' weights", () => {
    t.resourceCountIs('AWS::ElasticLoadBalancingV2::LoadBalancer', 1);
    t.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', { Type: 'network', Scheme: 'internet-facing' });
    const groups = t.findResources('AWS::ElasticLoadBalancingV2::TargetGroup');
    expect(Object.keys(groups)).toHaveLength(fleet.router.groups.length);
    // Flow logs of the router VPC record rejected traffic only (accepted flows would cost more than the routers).
    expect(Object.values(t.findResources('AWS::EC2::FlowLog')).map((f) => f.Properties.TrafficType)).toEqual(['REJECT']);
    for (const group of Object.values(groups)) {
      // HAProxy's readiness, proxy protocol v2 with accept-proxy, open connections kept when a target turns unhealthy.
      expect(group.Properties).toMatchObject({
        Port: 8080,
        Protocol: 'TCP',
        TargetType: 'ip',
        HealthCheckProtocol: 'HTTP',
        HealthCheckPort: String(READY_PORT),
        HealthCheckPath: '/ready',
      });
      expect(group.Properties.TargetGroupAttributes).toEqual(
        expect.arrayContaining([
          { Key: 'proxy_protocol_v2.enabled', Value: 'true' },
          { Key: 'target_health_state.unhealthy.connection_termination.enabled', Value: 'false' },
          // The ECS stop timeout: a stopping task's open requests finish before the NLB forgets it.
          { Key: 'deregistration_delay.timeout_seconds', Value: '30' },
        ]),
      );
    }
    // Each service registers in its own group's target group only.
    // (by the ARN the router stack wrote to SSM for that group).
    const services = Object.values(inGroups('AWS::ECS::Service'));
    for (const group of fleet.router.groups) {
      const service = services.find((s) => s.Properties.ServiceName === `orders-router-eu-west-1-${group.name}`)!;
      expect(service.Properties.LoadBalancers).toEqual([
        {
          ContainerName: 'haproxy',
          ContainerPort: 8080,
          TargetGroupArn: { Ref: expect.stringMatching(new RegExp(`^SsmParameterValueordersroutergroups${group.name}targetgrouparn`)) },
        },
      ]);
    }
    // The listener's default action: every group's target group with its weight (weight = tasks by default).
    const [listener] = Object.values(t.findResources('AWS::ElasticLoadBalancingV2::Listener'));
    expect(listener.Properties.DefaultActions).toEqual([
      {
        Type: 'forward',
        ForwardConfig: {
          TargetGroups: fleet.router.groups.map((g) => ({
            TargetGroupArn: { Ref: expect.stringMatching(new RegExp(`^Targets${g.name}`)) },
            Weight: g.tasks,
          })),
        },
      },
    ]);
  });

  it('forwards by the configured weights, and a drained group (weight 0) keeps its target group and tasks', () => {
    const drained = resolve({
      ...validInput(),
      router: {
        ...validInput().router,
        groups: [
          { name: 'canary', tasks: 2, weight: 0 },
          { name: 'main', tasks: 6, weight: 900 },
          { name: 'extra', tasks: 3, weight: 99 },
        ],
      },
    });
    const app = cdkApp();
    const drainedRouter = new RouterStack(app, 'router-weights', routerStackPropsOf(drained, 'eu-west-1'));
    const drainedCanaryStack = new RouterGroupsStack(app, 'router-weights-canary', routerGroupsStackPropsOf(drained, 'eu-west-1', 'canary'));
    const drainedRestStack = new RouterGroupsStack(app, 'router-weights-groups', routerGroupsStackPropsOf(drained, 'eu-west-1', 'rest'));
    const template = Template.fromStack(drainedRouter);
    const [listener] = Object.values(template.findResources('AWS::ElasticLoadBalancingV2::Listener'));
    expect(listener.Properties.DefaultActions[0].ForwardConfig.TargetGroups.map((g: { Weight: number }) => g.Weight)).toEqual([0, 900, 99]);
    template.resourceCountIs('AWS::ElasticLoadBalancingV2::TargetGroup', 3);
    // The drained canary keeps running in its own stack; the other two groups share one stack and
    // roll out one after the other (extra waits for main to be stable).
    const drainedCanary = Template.fromStack(drainedCanaryStack);
    expect(Object.values(drainedCanary.findResources('AWS::ECS::Service')).map((s) => s.Properties.DesiredCount)).toEqual([2]);
    const others = Object.entries(Template.fromStack(drainedRestStack).findResources('AWS::ECS::Service'));
    expect(others.map(([, s]) => [s.Properties.ServiceName, s.Properties.DesiredCount])).toEqual([
      ['orders-router-eu-west-1-main', 6],
      ['orders-router-eu-west-1-extra', 3],
    ]);
    expect(others[1][1].DependsOn).toContain(others[0][0]);
  });

  it('reaches every cell of the fleet from every region, across regions over PrivateLink', () => {
    for (const [template, region] of [
      [links, 'eu-west-1'],
      [links2, 'us-east-1'],
    ] as const) {
      const endpoints = Object.values(template.findResources('AWS::EC2::VPCEndpoint', { Properties: { VpcEndpointType: 'Interface' } }));
      expect(endpoints).toHaveLength(fleet.cells.length);
      const lookups = template.findResources('Custom::CellEndpointServiceName');
      for (const cell of fleet.cells) {
        const [lookupId, lookup] = Object.entries(lookups).find(
          ([, l]) => l.Properties.ParameterName === `/orders/cell/${cell.id}/endpoint-service-name`,
        )!;
        // Read at deploy time in the cell's own account and region, nothing copied by hand, by the
        // router stack's own bundled handler (which retries AccessDenied while IAM propagates).
        expect(lookup.Properties).toMatchObject({
          CellId: cell.id,
          Region: cell.region,
          RoleArn: `arn:aws:iam::${cell.account}:role/orders-${cell.id}-ep-reader`,
          ServiceTimeout: '300',
        });
        expect(JSON.stringify(lookup.Properties.ServiceToken)).toMatch(/CellEndpointLookupHandler/);
        const endpoint = endpoints.find(
          (e) => JSON.stringify(e.Properties.ServiceName) === JSON.stringify({ 'Fn::GetAtt': [lookupId, 'Parameter.Value'] }),
        )!;
        expect(endpoint.Properties.ServiceRegion).toBe(cell.region === region ? undefined : cell.region);
        expect(endpoint.Properties.PrivateDnsEnabled).toBe(false);
      }
    }
    t.resourceCountIs('AWS::EC2::VPCEndpoint', 1); // the S3 gateway endpoint; the cells' are in the nested stack
    // One lookup handler per router stack, bundled; no AwsCustomResource provider is left.
    t.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('endpoint service name'),
      Runtime: 'nodejs24.x',
      Timeout: 120,
    });
    for (const template of [t, links, t2, links2]) expect(JSON.stringify(template.toJSON())).not.toMatch(/AWS679f53fac002430cb0da5b7982bd2287/);
  });

  it("puts the cells' endpoints in a /23 subnet per AZ of their own, apart from the router tasks' /24", () => {
    const subnets = t.findResources('AWS::EC2::Subnet');
    const tier = (name: string) => Object.entries(subnets).filter(([id]) => id.startsWith(`Vpc${name}Subnet`));
    expect(tier('cellendpoints').map(([, s]) => s.Properties.CidrBlock.split('/')[1])).toEqual(['23', '23', '23']);
    expect(tier('routers').map(([, s]) => s.Properties.CidrBlock.split('/')[1])).toEqual(['24', '24', '24']);
    const endpointSubnets = new Set(
      Object.values(links.findResources('AWS::EC2::VPCEndpoint')).flatMap((e) => (e.Properties.SubnetIds as { Ref: string }[]).map((r) => r.Ref)),
    );
    expect([...endpointSubnets].every((ref) => /cellendpointsSubnet/.test(ref))).toBe(true);
    expect(endpointSubnets.size).toBe(3);
  });

  it('names every cell in a private zone of the router VPC, aliasing its interface endpoint', () => {
    for (const [template, nested] of [
      [t, links],
      [t2, links2],
    ]) {
      template.hasResourceProperties('AWS::Route53::HostedZone', {
        Name: 'orders.cells.internal.',
        VPCs: [Match.objectLike({ VPCId: { Ref: Match.stringLikeRegexp('^Vpc') } })],
      });
      const records = Object.values(nested.findResources('AWS::Route53::RecordSet'));
      expect(records.map((r) => r.Properties.Name).sort()).toEqual(fleet.cells.map((c) => `${c.id}.orders.cells.internal.`).sort());
      for (const r of records)
        expect([r.Properties.Type, JSON.stringify(r.Properties.AliasTarget.DNSName)]).toEqual(['A', expect.stringContaining('DnsEntries')]);
    }
  });

  it('lets only the router tasks use the cell endpoints', () => {
    const [sg] = Object.entries(t.findResources('AWS::EC2::SecurityGroup')).filter(([, g]) =>
      String(g.Properties.GroupDescription).includes('interface endpoints to the cells'),
    );
    const ingress = Object.values(t.findResources('AWS::EC2::SecurityGroupIngress')).filter((i) =>
      JSON.stringify(i.Properties.GroupId).includes(sg[0]),
    );
    expect(ingress.map((i) => [i.Properties.FromPort, i.Properties.SourceSecurityGroupId['Fn::GetAtt'][0]])).toEqual([
      [80, expect.stringMatching(/^TaskSecurityGroup/)],
    ]);
    expect(sg[1].Properties.SecurityGroupEgress).toEqual([expect.objectContaining({ CidrIp: '255.255.255.255/32' })]);
  });

  it('alarms on router 5xx, rejected keys, stale mappings, rejected documents, unhealthy tasks, and per cell', () => {
    const names = Object.values({ ...t.findResources('AWS::CloudWatch::Alarm'), ...inGroups('AWS::CloudWatch::Alarm') })
      .map((a) => a.Properties.AlarmName as string | undefined)
      .filter((n): n is string => n !== undefined)
      .sort();
    for (const group of ['canary', 'main']) {
      for (const kind of ['5xx', 'rejected-keys', 'stale-mapping', 'rejected-documents', 'unhealthy-tasks', 'connection-use', 'unhealthy-targets'])
        expect(names).toContain(`orders-router-eu-west-1-${group}-${kind}`);
    }
    // Every cell, wherever it lives: a region's routers send traffic to all of them.
    const cellAlarms = Object.values(links.findResources('AWS::CloudWatch::Alarm'))
      .map((a) => a.Properties.AlarmName as string)
      .sort();
    expect(cellAlarms).toEqual(fleet.cells.map((c) => `orders-router-eu-west-1-cell-${c.id}-errors`).sort());
    gr.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'orders-router-eu-west-1-main-stale-mapping',
      Threshold: 600,
      TreatMissingData: 'breaching',
    });
    // Per task, before saturation: the busiest task above 80% (readiness turns off at 90%).
    gr.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'orders-router-eu-west-1-main-connection-use',
      MetricName: 'ConnectionUsePercent',
      Statistic: 'Maximum',
      Threshold: CONNECTION_USE_ALARM_PERCENT,
      Dimensions: [{ Name: 'RouterGroup', Value: 'main' }],
    });
    // The group's own target group's failed readiness checks (with the target groups, in the router stack).
    const [unhealthy] = Object.values(
      t.findResources('AWS::CloudWatch::Alarm', { Properties: { AlarmName: 'orders-router-eu-west-1-main-unhealthy-targets' } }),
    );
    expect(unhealthy.Properties).toMatchObject({ Namespace: 'AWS/NetworkELB', MetricName: 'UnHealthyHostCount' });
    expect(JSON.stringify(unhealthy.Properties.Dimensions)).toMatch(/"TargetGroup".*Targetsmain/);
  });

  it('sends every router alarm, composites included, to an encrypted topic on ALARM and on OK', () => {
    const topics = t.findResources('AWS::SNS::Topic');
    const [topicId] = Object.entries(topics).find(([, r]) => r.Properties.TopicName === 'orders-router-eu-west-1-alarms')!;
    expect(topics[topicId].Properties.KmsMasterKeyId).toBeDefined();
    // Ours, by name (the services' target-tracking alarms belong to auto scaling and page nobody).
    const ours = (template: Template) =>
      [
        ...Object.values(template.findResources('AWS::CloudWatch::Alarm')),
        ...Object.values(template.findResources('AWS::CloudWatch::CompositeAlarm')),
      ].filter((a) => String(a.Properties.AlarmName).startsWith('orders-router-eu-west-1-'));
    const alarms = ours(t);
    expect(alarms.length).toBe(2); // the target groups' readiness alarms, one per group
    for (const alarm of alarms) {
      expect([alarm.Properties.AlarmActions, alarm.Properties.OKActions]).toEqual([[{ Ref: topicId }], [{ Ref: topicId }]]);
    }
    // The groups' alarms, in their stacks, notify the same topic by its ARN (its name is fixed).
    const groupAlarms = groupTemplates.flatMap(ours);
    expect(groupAlarms.length).toBe(6 * 2 + 2); // six per group, a composite per group
    const topicArn = { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':sns:eu-west-1:222222222222:orders-router-eu-west-1-alarms']] };
    for (const alarm of groupAlarms) expect([alarm.Properties.AlarmActions, alarm.Properties.OKActions]).toEqual([[topicArn], [topicArn]]);
    // The per-cell alarms live with the cells' links (nested stack), notifying the same topic.
    const [linksStack] = Object.entries(t.findResources('AWS::CloudFormation::Stack'))
      .filter(([id]) => id.startsWith('CellLinks1'))
      .map(([, r]) => r);
    const topicParameter = Object.entries(linksStack.Properties.Parameters as Record<string, unknown>).find(
      ([, v]) => JSON.stringify(v) === JSON.stringify({ Ref: topicId }),
    )![0];
    const cellAlarms = Object.values(links.findResources('AWS::CloudWatch::Alarm'));
    expect(cellAlarms).toHaveLength(fleet.cells.length);
    for (const alarm of cellAlarms)
      expect([alarm.Properties.AlarmActions, alarm.Properties.OKActions]).toEqual([[{ Ref: topicParameter }], [{ Ref: topicParameter }]]);
    t.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: Match.objectLike({ Statement: Match.arrayWith([Match.objectLike({ Principal: { Service: 'cloudwatch.amazonaws.com' } })]) }),
    });
  });

  it('has one dashboard, in the router stack, with a row per cell and per router group', () => {
    const [dashboard] = Object.values(t.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const cell of fleet.cells) expect(body).toContain(`cell ${cell.id}: requests`);
    for (const group of ['canary', 'main']) expect(body).toContain(`group ${group}: mapping version`);
  });

  it("pages the dashboard into nested stacks and batches the cell links, so that no dashboard, template or stack passes its limit and the router's own template stays small", () => {
    const names = (tpl: Template) => Object.values(tpl.findResources('AWS::CloudWatch::Dashboard')).map((d) => d.Properties.DashboardName as string);
    expect(names(t)).toEqual(['orders-router-eu-west-1']);
    // Every region links every cell: two pages and a half of cells.
    const count = 2 * CELLS_PER_DASHBOARD + 80;
    const large = resolve({ ...generateFleet(exampleInput(), count), quotas: { interfaceEndpointsPerVpc: count } });
    const stack = new RouterStack(cdkApp(), 'router-large', routerStackPropsOf(large, 'eu-west-1'));
    const nested = stack.node.children.filter((c): c is NestedStack => c instanceof NestedStack);
    const pages = nested.filter((n) => n.node.id.startsWith('CellDashboard'));
    const dashboards = [Template.fromStack(stack), ...pages.map((p) => Template.fromStack(p))].flatMap((tpl) =>
      Object.values(tpl.findResources('AWS::CloudWatch::Dashboard')),
    );
    const bodies = dashboards.map((d) => JSON.stringify(d.Properties.DashboardBody));
    const widgets = bodies.map((b) => (b.match(/\\"type\\":\\"metric\\"/g) ?? []).length);
    // New names for the pages past the first: a page moved between stacks under its old name would be deleted by name.
    expect(dashboards.map((d) => d.Properties.DashboardName)).toEqual([
      'orders-router-eu-west-1',
      'orders-router-eu-west-1-cell-page-2',
      'orders-router-eu-west-1-cell-page-3',
    ]);
    expect(stack.dashboards).toHaveLength(3);
    expect(widgets).toEqual([3 * CELLS_PER_DASHBOARD + 4 * large.router.groups.length, 3 * CELLS_PER_DASHBOARD, 3 * 80]);
    expect(Math.max(...widgets)).toBeLessThanOrEqual(500);
    for (const cell of large.cells) expect(bodies.filter((b) => b.includes(`cell ${cell.id}: requests`))).toHaveLength(1);
    // The first page links the others.
    for (const page of [2, 3]) expect(bodies[0]).toContain(`(#dashboards:name=orders-router-eu-west-1-cell-page-${page})`);
    // 380 cells: four nested stacks of links; every template under CloudFormation's 500 resources and 1 MB.
    expect(nested.filter((n) => n instanceof CellLinksStack)).toHaveLength(Math.ceil(large.cells.length / CELLS_PER_LINK_STACK));
    const assembly = (stack.node.root as Stage).synth();
    for (const s of [stack, ...nested]) {
      expect(Object.keys(Template.fromStack(s).toJSON().Resources).length).toBeLessThan(500);
    }
    const written = assembly.getStackArtifact(stack.artifactId).templateFullPath;
    // What grows with the cells is nested: the router's own template holds the first dashboard page
    // (full at 150 cells) and one nested stack resource per 100 or 150 more, about half the action's 512 KB.
    expect(fs.statSync(written).size).toBeLessThan(LIMITS.deployActionTemplateBytes.value * 0.6);
    for (const n of nested) expect(fs.statSync(path.join(assembly.directory, n.templateFile)).size).toBeLessThan(LIMITS.templateBytes.value);
  });

  it(`creates the cells' names ${RECORD_LANES} at a time (Route 53 takes 5 changes a second per account): each after the one ${RECORD_LANES} before it`, () => {
    const [links] = primary.node.children.filter((c): c is CellLinksStack => c instanceof CellLinksStack);
    const resources = Template.fromStack(links).toJSON().Resources as Record<string, { Type: string; DependsOn?: string[] }>;
    const records = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Route53::RecordSet');
    expect(records.length).toBeGreaterThan(RECORD_LANES);
    const ids = records.map(([id]) => id);
    records.forEach(([, record], i) => {
      const on = (record.DependsOn ?? []).filter((d) => resources[d]?.Type === 'AWS::Route53::RecordSet');
      expect(on).toEqual(i < RECORD_LANES ? [] : [ids[i - RECORD_LANES]]);
    });
  });

  it('has no unacknowledged AwsSolutions finding', () => {
    for (const stack of [primary, secondary, canary, rest])
      expect(new AwsSolutionsChecks().validateScope(stack).violations.map((v) => v.ruleName)).toEqual([]);
  });
});
