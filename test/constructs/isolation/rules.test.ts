import { FleetFacts, ResourceView, StackRole, StackView } from '../../../lib/constructs/isolation/facts';
import {
  boundedCapacity,
  cellScopedRollback,
  cellTags,
  noCellToCellNetwork,
  noCrossCellAssume,
  noSharedReference,
  routerRoutesOnly,
  RuleContext,
  waveWatchesOwnCells,
} from '../../../lib/constructs/isolation/rules';

const facts: FleetFacts = {
  app: 'orders',
  cells: [
    { id: 'eu-1', account: '333333333331', cidr: '10.1.0.0/16' },
    { id: 'eu-1-b', account: '333333333332', cidr: '10.2.0.0/16' },
    { id: 'eu-2', account: '333333333333', cidr: '10.3.0.0/16' },
  ],
  routerAccount: '222222222222',
  toolingAccount: '111111111111',
};
const context: RuleContext = { facts, routerConfig: () => 'defaults\n  retries 0\n' };

function res(type: string, properties: Record<string, unknown> = {}, extra: Partial<ResourceView> = {}): ResourceView {
  return { logicalId: extra.logicalId ?? type.replace(/\W/g, ''), type, properties, ...extra };
}
function stack(role: StackRole, account: string, ...resources: ResourceView[]): StackView {
  return { role, account, resources: new Map(resources.map((r) => [r.logicalId, r])) };
}
const cell = (...resources: ResourceView[]) => stack({ kind: 'cell', cellId: 'eu-1' }, '333333333331', ...resources);

describe('CI1 noSharedReference', () => {
  const check = (r: ResourceView, s = cell(r)) => noSharedReference(r, s, context);

  it('passes on own names, own account ARNs, AWS service principals and the two allowed principals', () => {
    expect(check(res('AWS::SNS::Topic', { TopicName: 'orders-eu-1-alarms', KmsMasterKeyId: 'arn:aws:kms:eu-west-1:333333333331:key/k' }))).toEqual(
      [],
    );
    expect(
      check(
        res('AWS::S3::BucketPolicy', {
          PolicyDocument: { Statement: [{ Effect: 'Allow', Action: 's3:PutObject', Principal: { AWS: 'arn:aws:iam::156460612806:root' } }] },
        }),
      ),
    ).toEqual([]);
    expect(check(res('AWS::EC2::VPCEndpointServicePermissions', { AllowedPrincipals: ['arn:aws:iam::222222222222:root'] }))).toEqual([]);
    expect(
      check(
        res('AWS::IAM::Role', {
          AssumeRolePolicyDocument: {
            Statement: [{ Effect: 'Allow', Action: 'sts:AssumeRole', Principal: { AWS: 'arn:aws:iam::111111111111:root' } }],
          },
        }),
      ),
    ).toEqual([]);
  });

  it('fails on a key of another cell (two cells sharing a key)', () => {
    expect(check(res('AWS::SQS::Queue', { KmsMasterKeyId: 'arn:aws:kms:eu-west-1:333333333333:key/shared' }))).toEqual(['cell:eu-2']);
  });

  it('fails on an imported output, whoever exported it', () => {
    expect(check(res('AWS::SNS::Subscription', { TopicArn: { 'Fn::ImportValue': 'shared-topic-arn' } }))).toEqual(['import']);
  });

  it("fails on another cell's names, telling apart ids that prefix each other", () => {
    expect(check(res('AWS::Logs::SubscriptionFilter', { LogGroupName: '/aws/orders-eu-1-b/app' }))).toEqual(['cell:eu-1-b']);
    expect(check(res('AWS::CloudWatch::Alarm', { AlarmName: 'orders-eu-1-health' }))).toEqual([]);
    expect(check(res('AWS::SSM::Parameter', { Value: 'orders-cell-eu-2' }))).toEqual(['cell:eu-2']);
  });

  it('fails on a shared resource in an account outside the cell, and on the router or tooling account used elsewhere', () => {
    expect(check(res('AWS::Lambda::Function', { Role: 'arn:aws:iam::999999999999:role/shared' }))).toEqual(['account:999999999999']);
    expect(check(res('AWS::Logs::LogGroup', { KmsKeyId: { 'Fn::Join': ['', ['arn:aws:kms:eu-west-1:', '222222222222', ':key/k']] } }))).toEqual([
      'account:router',
    ]);
    expect(
      check(
        res('AWS::S3::BucketPolicy', {
          PolicyDocument: { Statement: [{ Effect: 'Allow', Action: 's3:*', Principal: { AWS: 'arn:aws:iam::111111111111:root' } }] },
        }),
      ),
    ).toEqual(['account:tooling']);
  });

  it('looks only at cell stacks', () => {
    const r = res('AWS::SQS::Queue', { KmsMasterKeyId: 'arn:aws:kms:eu-west-1:333333333333:key/shared' });
    expect(noSharedReference(r, stack({ kind: 'router' }, '222222222222', r), context)).toEqual([]);
  });
});

describe('CI2 cellTags', () => {
  it('passes with both tags, fails on a missing or wrong one, skips untaggable types', () => {
    expect(cellTags(res('AWS::SQS::Queue', {}, { tags: { cell: 'eu-1', app: 'orders' } }), cell(), context)).toEqual([]);
    expect(cellTags(res('AWS::SQS::Queue', {}, { tags: { cell: 'eu-2', app: 'orders' } }), cell(), context)).toEqual(['tag:cell']);
    expect(cellTags(res('AWS::SQS::Queue', {}, { tags: {} }), cell(), context)).toEqual(['tag:cell', 'tag:app']);
    expect(cellTags(res('AWS::IAM::Policy'), cell(), context)).toEqual([]);
  });
});

describe('CI3 boundedCapacity', () => {
  it('ECS: a scaling target needs a fixed maximum', () => {
    const service = res('AWS::ECS::Service', {}, { logicalId: 'Svc' });
    const bounded = res('AWS::ApplicationAutoScaling::ScalableTarget', { MaxCapacity: 6, ResourceId: { 'Fn::GetAtt': ['Svc', 'Name'] } });
    const unbounded = res('AWS::ApplicationAutoScaling::ScalableTarget', {
      MaxCapacity: { Ref: 'Param' },
      ResourceId: { 'Fn::GetAtt': ['Svc', 'Name'] },
    });
    expect(boundedCapacity(service, cell(service, bounded), context)).toEqual([]);
    expect(boundedCapacity(service, cell(service, unbounded), context)).toEqual(['max-capacity']);
  });

  it('ASG and database: fixed maximum size and class', () => {
    expect(boundedCapacity(res('AWS::AutoScaling::AutoScalingGroup', { MaxSize: '6' }), cell(), context)).toEqual([]);
    expect(boundedCapacity(res('AWS::AutoScaling::AutoScalingGroup', { MaxSize: { Ref: 'P' } }), cell(), context)).toEqual(['max-size']);
    expect(boundedCapacity(res('AWS::RDS::DBInstance', { DBInstanceClass: 'db.r6g.large' }), cell(), context)).toEqual([]);
    expect(boundedCapacity(res('AWS::RDS::DBCluster', { ServerlessV2ScalingConfiguration: { MinCapacity: 0.5 } }), cell(), context)).toEqual([
      'serverless-max',
    ]);
  });

  it('ALB: needs a WAF rate rule keyed on a header (per tenant)', () => {
    const alb = res('AWS::ElasticLoadBalancingV2::LoadBalancer', { Type: 'application' }, { logicalId: 'Alb' });
    const assoc = res('AWS::WAFv2::WebACLAssociation', { ResourceArn: { Ref: 'Alb' }, WebACLArn: { 'Fn::GetAtt': ['Acl', 'Arn'] } });
    const perTenant = res(
      'AWS::WAFv2::WebACL',
      {
        Rules: [
          { Statement: { RateBasedStatement: { Limit: 1000, AggregateKeyType: 'CUSTOM_KEYS', CustomKeys: [{ Header: { Name: 'x-tenant-id' } }] } } },
        ],
      },
      { logicalId: 'Acl' },
    );
    const perIp = res(
      'AWS::WAFv2::WebACL',
      { Rules: [{ Statement: { RateBasedStatement: { Limit: 1000, AggregateKeyType: 'IP' } } }] },
      { logicalId: 'Acl' },
    );
    expect(boundedCapacity(alb, cell(alb, assoc, perTenant), context)).toEqual([]);
    expect(boundedCapacity(alb, cell(alb, assoc, perIp), context)).toEqual(['per-tenant-waf']);
    expect(boundedCapacity(alb, cell(alb), context)).toEqual(['per-tenant-waf']);
  });
});

describe('CI4 cellScopedRollback', () => {
  const health = res('AWS::CloudWatch::CompositeAlarm', { AlarmName: 'orders-eu-1-health' }, { logicalId: 'Health' });
  const service = (alarms: unknown[]) =>
    res('AWS::ECS::Service', {
      DeploymentConfiguration: {
        DeploymentCircuitBreaker: { Enable: true, Rollback: true },
        Alarms: { Enable: true, Rollback: true, AlarmNames: alarms },
      },
    });

  it('ECS: circuit breaker and deployment alarms of the cell itself', () => {
    expect(cellScopedRollback(service([{ Ref: 'Health' }]), cell(health), context)).toEqual([]);
    expect(cellScopedRollback(service(['orders-eu-2-health']), cell(health), context)).toEqual(['alarm:orders-eu-2-health']);
    expect(cellScopedRollback(service(['orders-fleet-5xx']), cell(health), context)).toEqual(['alarm:orders-fleet-5xx']);
    expect(cellScopedRollback(res('AWS::ECS::Service', {}), cell(), context)).toEqual(['circuit-breaker', 'deployment-alarms']);
  });

  it("ASG: instance refresh on the cell's own alarm", () => {
    const asg = (alarms?: unknown[]) =>
      res(
        'AWS::AutoScaling::AutoScalingGroup',
        { MaxSize: 4 },
        {
          updatePolicy: alarms ? { AutoScalingInstanceRefresh: { Preferences: { AlarmSpecification: { Alarms: alarms } } } } : undefined,
        },
      );
    expect(cellScopedRollback(asg([{ Ref: 'Health' }]), cell(health), context)).toEqual([]);
    expect(cellScopedRollback(asg(), cell(health), context)).toEqual(['instance-refresh-alarms']);
  });
});

describe('CI5 waveWatchesOwnCells', () => {
  const deploy = (stackName: string) => ({ ActionTypeId: { Provider: 'CloudFormation' }, Configuration: { StackName: stackName } });
  const alarmRule = (name: string) => ({
    Conditions: [{ Rules: [{ RuleTypeId: { Provider: 'CloudWatchAlarm' }, Configuration: { AlarmName: name } }] }],
  });
  const bake = res(
    'AWS::CodeBuild::Project',
    { Source: { BuildSpec: "bake_targets=('eu-1 333333333331 eu-west-1 orders-eu-1-health orders-eu-1-bake-watcher')" } },
    { logicalId: 'Bake' },
  );
  const pipeline = (stage: Record<string, unknown>) =>
    res('AWS::CodePipeline::Pipeline', {
      Stages: [
        {
          Name: 'wave-1',
          Actions: [deploy('orders-cell-eu-1'), { ActionTypeId: { Provider: 'CodeBuild' }, Configuration: { ProjectName: { Ref: 'Bake' } } }],
          ...stage,
        },
      ],
    });
  const tooling = (p: ResourceView) => stack({ kind: 'pipeline' }, '111111111111', p, bake);

  it('passes when a wave bakes and rolls back on its own cells', () => {
    const p = pipeline({ OnSuccess: alarmRule('orders-eu-1-health') });
    expect(waveWatchesOwnCells(p, tooling(p), context)).toEqual([]);
  });

  it("fails on a wave watching a fleet-wide alarm or another wave's cell", () => {
    const fleetWide = pipeline({ OnSuccess: alarmRule('orders-fleet-5xx') });
    expect(waveWatchesOwnCells(fleetWide, tooling(fleetWide), context)).toEqual(['wave-1:orders-fleet-5xx']);
    const other = pipeline({ OnFailure: alarmRule('orders-eu-2-health') });
    expect(waveWatchesOwnCells(other, tooling(other), context)).toEqual(['wave-1:orders-eu-2-health']);
  });

  it("reads a step's bake targets only, not the protect step's list of stacks in the same project", () => {
    const withProtect = res(
      'AWS::CodeBuild::Project',
      {
        Source: {
          BuildSpec:
            "protect_targets=('orders-cell-eu-1 333333333331 eu-west-1 arn:aws:iam::333333333331:role/cdk-hnb659fds-deploy-role-333333333331-eu-west-1 orders-eu-1-protector')\nbake_targets=('eu-1 333333333331 eu-west-1 orders-eu-1-health orders-eu-1-bake-watcher')",
        },
      },
      { logicalId: 'Bake' },
    );
    const p = pipeline({});
    expect(waveWatchesOwnCells(p, stack({ kind: 'pipeline' }, '111111111111', p, withProtect), context)).toEqual([]);
  });

  it('fails on a bake step that watches a cell its wave does not deploy', () => {
    const otherBake = res(
      'AWS::CodeBuild::Project',
      { Source: { BuildSpec: "bake_targets=('eu-2 333333333333 eu-west-1 orders-eu-2-health orders-eu-2-bake-watcher')" } },
      { logicalId: 'Bake' },
    );
    const p = pipeline({});
    expect(waveWatchesOwnCells(p, stack({ kind: 'pipeline' }, '111111111111', p, otherBake), context)).toEqual(['wave-1:orders-eu-2-health']);
  });
});

describe('CI6 routerRoutesOnly', () => {
  const task = res('AWS::ECS::TaskDefinition', { ContainerDefinitions: [{ Name: 'haproxy' }, { Name: 'agent' }] });
  const router = stack({ kind: 'router' }, '222222222222', task);
  it('checks the router configuration on router tasks', () => {
    expect(routerRoutesOnly(task, router, context)).toEqual([]);
    expect(routerRoutesOnly(task, router, { facts, routerConfig: () => 'defaults\n  retries 3\n  option redispatch\n' })).toEqual([
      'retries',
      'redispatch',
    ]);
    expect(routerRoutesOnly(task, cell(task), { facts, routerConfig: () => 'defaults\n  retries 3\n' })).toEqual([]);
  });
});

describe('CI7 noCrossCellAssume', () => {
  const policy = (statement: Record<string, unknown>) => res('AWS::IAM::Policy', { PolicyDocument: { Statement: [statement] } });
  it('passes on own-account roles and service principals', () => {
    expect(
      noCrossCellAssume(policy({ Effect: 'Allow', Action: 'sts:AssumeRole', Resource: 'arn:aws:iam::333333333331:role/x' }), cell(), context),
    ).toEqual([]);
    expect(noCrossCellAssume(policy({ Effect: 'Allow', Action: 'sqs:SendMessage', Resource: '*' }), cell(), context)).toEqual([]);
  });
  it('fails on assuming a role in another account or anywhere, and on trusting another cell', () => {
    expect(
      noCrossCellAssume(policy({ Effect: 'Allow', Action: ['sts:AssumeRole'], Resource: 'arn:aws:iam::333333333333:role/x' }), cell(), context),
    ).toEqual(['assume:333333333333']);
    expect(noCrossCellAssume(policy({ Effect: 'Allow', Action: '*', Resource: '*' }), cell(), context)).toEqual(['assume:*']);
    const role = res('AWS::IAM::Role', {
      AssumeRolePolicyDocument: { Statement: [{ Effect: 'Allow', Action: 'sts:AssumeRole', Principal: { AWS: 'arn:aws:iam::333333333333:root' } }] },
    });
    expect(noCrossCellAssume(role, cell(), context)).toEqual(['principal:eu-2']);
  });
});

describe('CI8 noCellToCellNetwork', () => {
  it('passes on own-range rules and egress to the internet; fails on peering and rules to another cell', () => {
    expect(
      noCellToCellNetwork(
        res('AWS::EC2::SecurityGroup', { SecurityGroupEgress: [{ CidrIp: '0.0.0.0/0' }], SecurityGroupIngress: [{ CidrIp: '10.1.0.0/16' }] }),
        cell(),
        context,
      ),
    ).toEqual([]);
    expect(noCellToCellNetwork(res('AWS::EC2::SecurityGroupEgress', { CidrIp: '10.3.4.5/32' }), cell(), context)).toEqual(['cidr:eu-2']);
    expect(noCellToCellNetwork(res('AWS::EC2::VPCPeeringConnection', {}), cell(), context)).toEqual(['VPCPeeringConnection']);
  });
});
