import { NestedStack } from 'aws-cdk-lib';
import { Template, Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { addFleet, FleetStacks } from '../../lib/app';
import { Fleet, laneStackResources, resolveFleet } from '../../lib/domain/fleet';
import { shardRecordName } from '../../lib/domain/names';
import { fleetProtectTargets } from '../../lib/operations/protect/targets';
import { cdkApp, validInput } from '../support/fleet';
import { LoadBalancerPaths, SecurityPaths, TemplateJson } from '../support/security-paths';

/**
 * A fleet with shuffle-sharded lanes (router.lanes: 8 lanes, 2 per tenant): per region, lane 1's
 * NLB, target group and service in the canary group stack, lanes 2-8 in the other group stack with
 * the 28 shard names; the router stack keeps the VPC, the cell links and the mapping bucket and has
 * no NLB. Synthesized once.
 */
describe('router lanes', () => {
  let fleet: Fleet;
  let stacks: FleetStacks;
  let nlbs: LoadBalancerPaths[];
  const template = (name: string) => Template.fromStack([...stacks.routers, ...stacks.routerGroups].find((s) => s.stackName === name)!);

  beforeAll(() => {
    const input = validInput();
    fleet = resolveFleet({
      ...input,
      cells: input.cells.filter((c) => ['canary-eu', 'eu-1', 'us-1'].includes(c.id)),
      router: {
        ...input.router,
        groups: undefined,
        lanes: { count: 8, perTenant: 2, hostedZone: { id: 'Z0123456789ABCDEFGHIJ', name: 'lanes.example.com' } },
      },
    });
    const app = cdkApp();
    stacks = addFleet(app, fleet, { audit: false });
    const assembly = app.synth();
    nlbs = new SecurityPaths(
      assembly.stacks.map((s) => ({ name: s.stackName, region: s.environment.region, template: s.template as TemplateJson })),
    ).networkLoadBalancers();
  });

  it('gives every lane an NLB of its own with zonal shift and access logs, in its group stack; the router stack has none', () => {
    template('orders-router-eu-west-1').resourceCountIs('AWS::ElasticLoadBalancingV2::LoadBalancer', 0);
    template('orders-router-eu-west-1-canary-group').resourceCountIs('AWS::ElasticLoadBalancingV2::LoadBalancer', 1);
    const rest = template('orders-router-eu-west-1-groups');
    rest.resourceCountIs('AWS::ElasticLoadBalancingV2::LoadBalancer', 7);
    rest.resourceCountIs('AWS::ElasticLoadBalancingV2::TargetGroup', 7);
    rest.resourceCountIs('AWS::ECS::Service', 7);
    rest.allResourcesProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', {
      Scheme: 'internet-facing',
      LoadBalancerAttributes: Match.arrayWith([
        { Key: 'zonal_shift.config.enabled', Value: 'true' },
        { Key: 'access_logs.s3.enabled', Value: 'true' },
        { Key: 'access_logs.s3.prefix', Value: 'nlb' },
      ]),
    });
    // Zonal shift with cross-zone on needs TCP target groups without connection termination for unhealthy targets.
    rest.allResourcesProperties('AWS::ElasticLoadBalancingV2::TargetGroup', {
      Protocol: 'TCP',
      TargetGroupAttributes: Match.arrayWith([{ Key: 'target_health_state.unhealthy.connection_termination.enabled', Value: 'false' }]),
    });
    // At least one task per zone in every lane.
    rest.allResourcesProperties('AWS::ECS::Service', { DesiredCount: 3 });
    // The log bucket admits the delivery service for the lanes' logs.
    template('orders-router-eu-west-1').hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Principal: { Service: 'delivery.logs.amazonaws.com' }, Action: 's3:PutObject' })]),
      },
    });
  });

  it('lets clients reach every lane, and traffic and readiness checks reach its tasks, through the security groups as ELB applies them', () => {
    const lanes = nlbs.filter((n) => n.loadBalancer.startsWith('orders-router-'));
    expect(lanes).toHaveLength(16);
    const blocked = lanes.flatMap((n) =>
      n.listeners.flatMap((l) => [
        ...(l.clientsAdmitted ? [] : [`${n.loadBalancer}:${l.port}: clients refused`]),
        ...l.targets.flatMap((t) =>
          t.paths.flatMap((p) => [
            ...(p.leavesLoadBalancer ? [] : [`${n.loadBalancer} ${p.purpose} on ${p.port}: refused on the way out`]),
            ...(p.admittedByTarget === false ? [`${n.loadBalancer} ${p.purpose} on ${p.port}: refused by the tasks`] : []),
          ]),
        ),
      ]),
    );
    expect(blocked).toEqual([]);
    expect(lanes.every((n) => n.listeners.length === 1 && n.listeners[0].targets.length === 1)).toBe(true);
  });

  it('names every shard once per region: a weighted alias to each of its lanes, target health evaluated', () => {
    const rest = template('orders-router-eu-west-1-groups');
    rest.resourceCountIs('AWS::Route53::RecordSetGroup', 28);
    const groups = Object.values(rest.findResources('AWS::Route53::RecordSetGroup')) as { Properties: { RecordSets: Record<string, unknown>[] } }[];
    const names = groups.map((g) => g.Properties.RecordSets[0].Name);
    expect(new Set(names).size).toBe(28);
    expect(names).toContain(`${shardRecordName([1, 2], 'eu-west-1', 'lanes.example.com')}.`);
    for (const g of groups) {
      expect(g.Properties.RecordSets).toHaveLength(2);
      for (const r of g.Properties.RecordSets)
        expect(r).toMatchObject({
          Type: 'A',
          Weight: 1,
          AliasTarget: { EvaluateTargetHealth: true },
          SetIdentifier: expect.stringMatching(/^lane-[1-8]$/),
        });
    }
    // Lane 1 is the canary stack's: read from its SSM parameter, not its construct.
    expect(JSON.stringify(rest.toJSON().Parameters)).toContain('/orders/router/lanes/1/dns-name');
    const canary = template('orders-router-eu-west-1-canary-group');
    canary.resourceCountIs('AWS::Route53::RecordSetGroup', 0);
    // The canary stack deploys first: it must not read the other lanes' parameters (CloudFormation
    // resolves every SSM-typed parameter, used or not, and they do not exist yet).
    expect(JSON.stringify(canary.toJSON().Parameters)).not.toContain('/lanes/');
    // Ten at a time: each group after the tenth waits for the one ten before it (Route 53 throttling).
    const ids = Object.keys(rest.findResources('AWS::Route53::RecordSetGroup'));
    const waits = ids.map((id) => ((rest.toJSON().Resources[id].DependsOn ?? []) as string[]).filter((d) => ids.includes(d)));
    expect(waits.filter((w) => w.length > 0)).toHaveLength(28 - 10);
  });

  it('holds as many resources as the fleet check counts for the lanes stack, and refuses lanes that would not fit', () => {
    const rest = template('orders-router-eu-west-1-groups');
    expect(Object.keys(rest.toJSON().Resources)).toHaveLength(laneStackResources(8, 28));
    const input = validInput();
    const lanes = (l: Record<string, unknown>) => () => resolveFleet({ ...input, router: { ...input.router, groups: undefined, lanes: l as never } });
    expect(lanes({ count: 16, perTenant: 4, maxOverlap: 2, hostedZone: { id: 'Z0123456789ABCDEFGHIJ', name: 'lanes.example.com' } })).toThrow(
      "router.lanes: lanes 2-16 and 140 shard names would be 532 resources in each region's second router group stack, over CloudFormation's 500; drop hostedZone",
    );
    expect(lanes({ count: 24, perTenant: 2 })).toThrow(/would be 600 resources .*; use at most 20 lanes/);
    expect(lanes({ count: 16, perTenant: 4, maxOverlap: 2 })).not.toThrow();
  });

  it("alarms on each lane's readiness in its own stack; each lane rolls back on its own 5xx", () => {
    const canary = template('orders-router-eu-west-1-canary-group');
    canary.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'orders-router-eu-west-1-lane-1-unhealthy-targets',
      MetricName: 'UnHealthyHostCount',
    });
    canary.hasResourceProperties('AWS::ECS::Service', {
      DeploymentConfiguration: Match.objectLike({
        Alarms: { AlarmNames: [{ Ref: Match.stringLikeRegexp('^lane15xx') }], Enable: true, Rollback: true },
      }),
    });
    canary.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'orders-router-eu-west-1-lane-1-5xx' });
  });

  it("watches each cell through the agent's across-group metric: 8 lanes would pass the 10 metrics one alarm may sum", () => {
    const router = stacks.routers.find((s) => s.stackName === 'orders-router-eu-west-1')!;
    const links = router.node.children.filter((c) => c instanceof NestedStack);
    const alarms = links.flatMap((l) => Object.values(Template.fromStack(l as NestedStack).findResources('AWS::CloudWatch::Alarm')));
    expect(alarms.length).toBe(3);
    for (const a of alarms) {
      const metrics = (a.Properties.Metrics as { MetricStat?: { Metric: { Dimensions: unknown[] } } }[]).filter((m) => m.MetricStat);
      expect(metrics).toHaveLength(2);
      for (const m of metrics) expect(m.MetricStat!.Metric.Dimensions).toEqual([{ Name: 'Cell', Value: expect.any(String) }]);
    }
  });

  it('protects every lane NLB after the first deploy through a role of its group stack', () => {
    const canary = template('orders-router-eu-west-1-canary-group');
    canary.hasResourceProperties('AWS::IAM::Role', { RoleName: 'orders-router-eu-west-1-canary-protector' });
    canary.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: 'elasticloadbalancing:ModifyLoadBalancerAttributes',
            Resource: { Ref: Match.stringLikeRegexp('^Lane1LoadBalancer') },
          }),
        ]),
      },
    });
    expect(
      fleetProtectTargets(fleet)
        .filter((t) => t.stackName.startsWith('orders-router-eu-west-1'))
        .map((t) => [t.stackName, t.deletionProtectorRole]),
    ).toEqual([
      // No NLB in the router stack, so no protector role there to assume.
      ['orders-router-eu-west-1', undefined],
      ['orders-router-eu-west-1-canary-group', 'orders-router-eu-west-1-canary-protector'],
      ['orders-router-eu-west-1-groups', 'orders-router-eu-west-1-lanes-protector'],
    ]);
  });

  it('lets the publisher write the lane assignments and read the lane names, and raises no cdk-nag finding in the router and lane stacks', () => {
    template('orders-router-eu-west-1').hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: ['s3:GetObject', 's3:PutObject'],
            Resource: Match.arrayWith([{ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::orders-mappings-222222222222-*/lanes/*']] }]),
          }),
        ]),
      },
    });
    // ... and read each lane's NLB name in every region (`cellctl lanes where`).
    template('orders-router-eu-west-1').hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: 'ssm:GetParameters',
            Resource: [
              'arn:aws:ssm:eu-west-1:222222222222:parameter/orders/router/lanes/*',
              'arn:aws:ssm:us-east-1:222222222222:parameter/orders/router/lanes/*',
            ],
          }),
        ]),
      },
    });
    for (const stack of [...stacks.routers, ...stacks.routerGroups]) {
      const violations = new AwsSolutionsChecks().validateScope(stack).violations.map((v) => v.ruleName);
      expect([stack.stackName, violations]).toEqual([stack.stackName, []]);
    }
  });
});
