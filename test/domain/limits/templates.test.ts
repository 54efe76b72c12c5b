import {
  assemblyFindings,
  CfnTemplate,
  describeFinding,
  LIMITS,
  limitValue,
  policySize,
  renderForSize,
  templateFindings,
  TemplateUnderCheck,
} from '../../../lib/domain/limits';

const roleArns = (n: number) => Array.from({ length: n }, (_, i) => `arn:aws:iam::${String(100000000000 + i)}:role/orders-cell-${i}-mover-launcher`);
const check = (template: CfnTemplate, bytes = 1000) => templateFindings({ stack: 'orders-pipeline/stack', template, bytes });
const limitsOf = (template: CfnTemplate, bytes?: number) => check(template, bytes).map((f) => [f.resource, f.limit, f.size]);

describe('sizing a document as deployed', () => {
  it('renders intrinsics with realistic lengths and counts no whitespace', () => {
    expect(renderForSize({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::b/*']] })).toBe('arn:aws:s3:::b/*');
    expect(policySize({ Version: '2012-10-17' })).toBe('{"Version":"2012-10-17"}'.length);
    expect(String(renderForSize({ 'Fn::GetAtt': ['Role', 'Arn'] })).length).toBe(80);
  });
});

describe('templateFindings: every limit of lib/domain/limits on one template', () => {
  it('passes a template within every limit', () => {
    expect(check({ Resources: { Topic: { Type: 'AWS::SNS::Topic' } } })).toEqual([]);
  });

  it("finds the policies over IAM, S3, KMS, SNS and SQS limits, summing a role's inline policies", () => {
    const big = { Statement: [{ Effect: 'Allow', Action: 'sts:AssumeRole', Resource: roleArns(120) }] };
    const principals = { Statement: [{ Effect: 'Allow', Principal: { AWS: roleArns(400) }, Action: 's3:GetObject', Resource: '*' }] };
    expect(
      limitsOf({
        Resources: {
          Managed: { Type: 'AWS::IAM::ManagedPolicy', Properties: { PolicyDocument: big } },
          InlineA: { Type: 'AWS::IAM::Policy', Properties: { PolicyDocument: big, Roles: [{ Ref: 'R' }] } },
          InlineB: { Type: 'AWS::IAM::Policy', Properties: { PolicyDocument: big, Roles: [{ Ref: 'R' }] } },
          Bucket: { Type: 'AWS::S3::BucketPolicy', Properties: { PolicyDocument: principals } },
          Key: { Type: 'AWS::KMS::Key', Properties: { KeyPolicy: { Statement: [principals.Statement[0], principals.Statement[0]] } } },
          TopicPolicy: {
            Type: 'AWS::SNS::TopicPolicy',
            Properties: { PolicyDocument: { Statement: [principals.Statement[0], principals.Statement[0]] } },
          },
          QueuePolicy: { Type: 'AWS::SQS::QueuePolicy', Properties: { PolicyDocument: principals } },
        },
      }),
    ).toEqual([
      ['Managed', 'managedPolicy', expect.any(Number)],
      ['Bucket', 'bucketPolicy', expect.any(Number)],
      ['Key', 'keyPolicy', expect.any(Number)],
      ['TopicPolicy', 'topicPolicy', expect.any(Number)],
      ['QueuePolicy', 'queuePolicy', expect.any(Number)],
      ['role R', 'roleInlinePolicies', 2 * policySize(big)],
    ]);
  });

  it("finds names over IAM's lengths when they are literal, and leaves generated ones alone", () => {
    const name = `orders-${'c'.repeat(30)}-mover-launcher`;
    expect(
      limitsOf({
        Resources: {
          Long: { Type: 'AWS::IAM::Role', Properties: { RoleName: `${name}-${'x'.repeat(64 - name.length)}`, AssumeRolePolicyDocument: {} } },
          Joined: {
            Type: 'AWS::IAM::Role',
            Properties: { RoleName: { 'Fn::Join': ['-', [name, { Ref: 'AWS::Region' }]] }, AssumeRolePolicyDocument: {} },
          },
          Generated: {
            Type: 'AWS::IAM::Role',
            Properties: { RoleName: { 'Fn::Join': ['-', [name, { Ref: 'SomeResource' }]] }, AssumeRolePolicyDocument: {} },
          },
          Short: { Type: 'AWS::IAM::Role', Properties: { RoleName: 'orders-short', AssumeRolePolicyDocument: {} } },
        },
      }),
    ).toEqual([
      ['Long', 'roleName', 65],
      ['Joined', 'roleName', name.length + 15],
    ]);
  });

  it('counts resources, outputs and parameters per stack, and the template body', () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`R${i}`, { Type: 'AWS::SNS::Topic' }]));
    expect(limitsOf({ Resources: many(501), Outputs: many(201), Parameters: many(200) }, 1_000_001)).toEqual([
      ['template', 'templateBytes', 1_000_001],
      ['template', 'resources', 501],
      ['template', 'outputs', 201],
    ]);
  });

  it("holds a pipeline stage's template to what the CloudFormation action accepts, and not its nested stacks' or a stack cdk deploy sends", () => {
    const template = { Resources: { R: { Type: 'AWS::SNS::Topic' } } };
    const staged = { stack: 'orders-pipeline/routers-eu-west-1/router', template, deployedByPipeline: true };
    expect(templateFindings({ ...staged, bytes: 600_000 }).map((f) => [f.limit, f.value])).toEqual([['deployActionTemplateBytes', 512_000]]);
    expect(templateFindings({ ...staged, bytes: 512_000 })).toEqual([]);
    const parent = { template: { ...staged, bytes: 1000 }, resource: 'Links' };
    expect(templateFindings({ ...staged, stack: `${staged.stack}/Links`, bytes: 900_000, parent })).toEqual([]);
    expect(templateFindings({ stack: 'orders-pipeline', template, bytes: 900_000 })).toEqual([]);
  });

  it("counts a security group's rules, inline and as separate resources", () => {
    const ingress = Object.fromEntries(
      Array.from({ length: 41 }, (_, i) => [
        `In${i}`,
        { Type: 'AWS::EC2::SecurityGroupIngress', Properties: { GroupId: { 'Fn::GetAtt': ['Sg', 'GroupId'] } } },
      ]),
    );
    expect(
      limitsOf({
        Resources: {
          Sg: { Type: 'AWS::EC2::SecurityGroup', Properties: { SecurityGroupIngress: Array.from({ length: 20 }, () => ({})) } },
          ...ingress,
        },
      }),
    ).toEqual([['security group Sg', 'securityGroupRules', 61]]);
  });

  it('finds a pipeline over 50 stages or a stage over 50 actions, a dashboard over 500 widgets, a long composite rule, a large parameter', () => {
    const stage = (name: string, actions: number) => ({ Name: name, Actions: Array.from({ length: actions }, () => ({})) });
    const [before, after] = JSON.stringify({
      widgets: Array.from({ length: 501 }, (_, i) => ({ type: 'metric', properties: { region: i === 0 ? 'REGION' : 'eu-west-1' } })),
    }).split('REGION');
    expect(
      limitsOf({
        Resources: {
          Pipeline: {
            Type: 'AWS::CodePipeline::Pipeline',
            Properties: { Stages: [...Array.from({ length: 50 }, (_, i) => stage(`s${i}`, 1)), stage('wave', 51)] },
          },
          Dashboard: {
            Type: 'AWS::CloudWatch::Dashboard',
            Properties: { DashboardBody: { 'Fn::Join': ['', [before, { Ref: 'AWS::Region' }, after]] } },
          },
          Composite: {
            Type: 'AWS::CloudWatch::CompositeAlarm',
            Properties: { AlarmRule: Array.from({ length: 400 }, (_, i) => `ALARM("orders-cell-${i}-health")`).join(' OR ') },
          },
          Parameter: { Type: 'AWS::SSM::Parameter', Properties: { Type: 'String', Value: 'x'.repeat(4097) } },
          Advanced: { Type: 'AWS::SSM::Parameter', Properties: { Type: 'String', Tier: 'Advanced', Value: 'x'.repeat(4097) } },
          Build: { Type: 'AWS::CodeBuild::Project', Properties: { TimeoutInMinutes: 481 } },
        },
      }),
    ).toEqual([
      ['Pipeline', 'pipelineStages', 51],
      ['Pipeline stage wave', 'actionsPerStage', 51],
      ['Dashboard', 'dashboardWidgets', 501],
      ['Composite', 'compositeAlarmRule', expect.any(Number)],
      ['Parameter', 'ssmParameterValue', 4097],
      ['Build', 'codeBuildTimeout', 481],
    ]);
  });

  it('says where, how large, which limit with its page, and whether it is a declared quota', () => {
    const [finding] = check({
      Resources: { Managed: { Type: 'AWS::IAM::ManagedPolicy', Properties: { PolicyDocument: { Statement: [{ Resource: roleArns(150) }] } } } },
    });
    expect(describeFinding(finding)).toMatch(
      /^orders-pipeline\/stack: Managed policy document is \d+ characters; IAM managed policy document \(whitespace not counted\) is at most 6144 \(https:\/\/docs\.aws\.amazon\.com\/IAM\/latest\/UserGuide\/reference_iam-quotas\.html\)$/,
    );
  });
});

describe('assemblyFindings: interface endpoints per VPC, over a stack and its nested stacks', () => {
  const endpoints = (n: number, vpcId: unknown) =>
    Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`Ep${i}`, { Type: 'AWS::EC2::VPCEndpoint', Properties: { VpcEndpointType: 'Interface', VpcId: vpcId } }]),
    );
  function routerWithLinks(perNested: number[]): TemplateUnderCheck[] {
    const parent: TemplateUnderCheck = {
      stack: 'router-eu-west-1',
      bytes: 1,
      template: {
        Resources: {
          Vpc: { Type: 'AWS::EC2::VPC' },
          ...Object.fromEntries(
            perNested.map((_, i) => [`Links${i}`, { Type: 'AWS::CloudFormation::Stack', Properties: { Parameters: { VpcRef: { Ref: 'Vpc' } } } }]),
          ),
        },
      },
    };
    return [
      parent,
      ...perNested.map((n, i) => ({
        stack: `router-eu-west-1/Links${i}`,
        bytes: 1,
        template: { Parameters: { VpcRef: {} }, Resources: endpoints(n, { Ref: 'VpcRef' }) },
        parent: { template: parent, resource: `Links${i}` },
      })),
    ];
  }

  it("adds up the endpoints every nested stack puts in its parent's VPC, against the quota declared", () => {
    expect(assemblyFindings(routerWithLinks([30, 21]))).toEqual([
      { stack: 'router-eu-west-1', resource: 'VPC Vpc', measured: 'interface endpoints', size: 51, limit: 'interfaceEndpointsPerVpc', value: 50 },
    ]);
    expect(assemblyFindings(routerWithLinks([30, 21]), { interfaceEndpointsPerVpc: 100 })).toEqual([]);
    expect(limitValue('interfaceEndpointsPerVpc')).toBe(LIMITS.interfaceEndpointsPerVpc.value);
  });

  it('counts gateway endpoints and other VPCs apart', () => {
    const gateway = {
      stack: 's',
      bytes: 1,
      template: {
        Resources: Object.fromEntries(
          Array.from({ length: 60 }, (_, i) => [`G${i}`, { Type: 'AWS::EC2::VPCEndpoint', Properties: { VpcId: { Ref: 'Vpc' } } }]),
        ),
      },
    };
    const twoVpcs = {
      stack: 't',
      bytes: 1,
      template: {
        Resources: {
          ...endpoints(30, { Ref: 'A' }),
          ...Object.fromEntries(Object.entries(endpoints(30, { Ref: 'B' })).map(([k, v]) => [`B${k}`, v])),
        },
      },
    };
    expect(assemblyFindings([gateway, twoVpcs])).toEqual([]);
  });
});
