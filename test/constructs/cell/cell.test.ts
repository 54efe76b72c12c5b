import * as fs from 'fs';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Cell, CellProps } from '../../../lib/constructs/cell';
import { TestStack } from '../../support/cell';
import { cdkApp } from '../../support/fleet';

const NGINX = 'public.ecr.aws/nginx/nginx:latest';

/** A cell described by its own props alone: no fleet file, a registry image, its own port, health path and variables. */
function plainProps(overrides: Partial<CellProps> = {}): CellProps {
  return {
    app: 'shop',
    cellId: 'blue-1',
    network: { cidr: '10.20.0.0/20', availabilityZones: ['euw1-az1', 'euw1-az2'] },
    compute: { cpu: 512, memoryMiB: 1024, capacity: { min: 1, desired: 2, max: 4 } },
    workload: { image: ecs.ContainerImage.fromRegistry(NGINX), containerPort: 8081, healthCheckPath: '/ready', environment: { GREETING: 'hello' } },
    database: { engine: 'rds-postgresql', instanceClass: 't4g.medium' },
    routing: { routerAccount: '210987654321' },
    limits: { requestsPerSecond: 200, tenantRequestsPer5Min: 3000 },
    ...overrides,
  };
}

type Resource = { Properties: Record<string, any> };
const only = (template: Template, type: string): Resource => {
  const found = Object.values(template.findResources(type)) as Resource[];
  expect(found).toHaveLength(1);
  return found[0];
};
/** The workload's task definition (the mover has its own). */
const workloadTask = (template: Template): Resource => {
  const found = (Object.values(template.findResources('AWS::ECS::TaskDefinition')) as Resource[]).filter((t) =>
    t.Properties.ContainerDefinitions.some((c: { Name: string }) => c.Name === 'Workload'),
  );
  expect(found).toHaveLength(1);
  return found[0];
};
const environmentOf = (container: { Environment: { Name: string; Value: unknown }[] }) =>
  Object.fromEntries(container.Environment.map((e) => [e.Name, e.Value]));
/** Every IAM action granted to the roles of the cell's compute (its logical ids start with `rolePrefix`). */
const computeActions = (template: Template, rolePrefix: string) =>
  Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((p) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref.startsWith(rolePrefix)))
    .flatMap((p) => p.Properties.PolicyDocument.Statement)
    .flatMap((st: { Action: string | string[] }) => [st.Action].flat());

describe('Cell from its own props, in a bare stack', () => {
  let fargate: Template;
  let ec2: Template;
  let defaults: Template;
  let app: App;
  beforeAll(() => {
    app = cdkApp();
    const fargateStack = new TestStack(app, 'fargate');
    const apiKey = secretsmanager.Secret.fromSecretNameV2(fargateStack, 'ApiKey', 'shop/api-key');
    new Cell(
      fargateStack,
      'Cell',
      plainProps({
        workload: { ...plainProps().workload, secrets: { API_KEY: ecs.Secret.fromSecretsManager(apiKey) } },
      }),
    );
    const ec2Stack = new TestStack(app, 'ec2');
    new Cell(
      ec2Stack,
      'Cell',
      plainProps({ compute: { kind: 'ec2', cpu: 512, memoryMiB: 1024, instanceType: 't3.small', capacity: { min: 2, desired: 2, max: 3 } } }),
    );
    const defaultsStack = new TestStack(app, 'defaults');
    new Cell(defaultsStack, 'Cell', plainProps({ workload: { image: ecs.ContainerImage.fromRegistry(NGINX) } }));
    // Every stack exists before the first Template.fromStack: synthesis freezes the tree.
    fargate = Template.fromStack(fargateStack);
    ec2 = Template.fromStack(ec2Stack);
    defaults = Template.fromStack(defaultsStack);
  });

  it("runs the given image on the given port, sized by the compute props, with the cell's variables and the workload's own", () => {
    const task = workloadTask(fargate);
    expect(task.Properties).toMatchObject({ Cpu: '512', Memory: '1024' });
    const [container] = task.Properties.ContainerDefinitions;
    expect(container.Image).toBe(NGINX);
    expect(container.PortMappings).toEqual([{ ContainerPort: 8081, Protocol: 'tcp' }]);
    expect(environmentOf(container)).toMatchObject({
      GREETING: 'hello',
      CELL_ID: 'blue-1',
      PORT: '8081',
      HEALTH_CHECK_PATH: '/ready',
      DB_PORT: '5433',
      BUCKET_COUNT: '16384',
    });
    expect(container.Secrets).toEqual([{ Name: 'API_KEY', ValueFrom: expect.stringContaining(':secret:shop/api-key') }]);
  });

  it('checks health on the given path and port, and lets only the load balancer reach that port', () => {
    fargate.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', { Port: 8081, TargetType: 'ip', HealthCheckPath: '/ready' });
    fargate.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      FromPort: 8081,
      ToPort: 8081,
      SourceSecurityGroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('CellEntryLoadBalancerSecurityGroup'), 'GroupId'] },
    });
  });

  it('names everything after the app and the cell id, and admits only the router account to its endpoint service', () => {
    const alarms = Object.values(fargate.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties.AlarmName as string);
    expect(alarms.length).toBeGreaterThan(5);
    expect(alarms.filter((name) => !name.startsWith('shop-blue-1-'))).toEqual([]);
    fargate.hasResourceProperties('AWS::IAM::Role', { RoleName: 'shop-blue-1-mover' });
    fargate.hasResourceProperties('AWS::EC2::VPCEndpointServicePermissions', { AllowedPrincipals: ['arn:aws:iam::210987654321:root'] });
  });

  it('pulls a registry image without ECR: no pull grant, no login', () => {
    const fargateExecution = computeActions(fargate, 'CellComputeTaskExecutionRole');
    expect(fargateExecution).toContain('logs:PutLogEvents');
    expect(fargateExecution.filter((a) => a.startsWith('ecr:'))).toEqual([]);
    const userData = JSON.stringify(only(ec2, 'AWS::EC2::LaunchTemplate').Properties.LaunchTemplateData.UserData);
    expect(userData).toContain(`-p 8081:8081`);
    expect(userData).toContain(NGINX);
    expect(userData).toContain("-e GREETING='hello'");
    expect(userData).not.toContain('docker login');
    const instance = computeActions(ec2, 'CellComputeInstanceRole');
    expect(instance).toContain('secretsmanager:GetSecretValue');
    expect(instance.filter((a) => a.startsWith('ecr:'))).toEqual([]);
  });

  it('registers instances on the ec2 kind, of the given type and count', () => {
    ec2.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', { Port: 8081, TargetType: 'instance', HealthCheckPath: '/ready' });
    ec2.hasResourceProperties('AWS::AutoScaling::AutoScalingGroup', { MinSize: '2', MaxSize: '3' });
    ec2.hasResourceProperties('AWS::EC2::LaunchTemplate', { LaunchTemplateData: Match.objectLike({ InstanceType: 't3.small' }) });
    ec2.resourceCountIs('AWS::ECS::Service', 0);
  });

  it("builds no workload image asset for a registry image (the mover's is the only one)", () => {
    const assembly = app.synth();
    const manifest = JSON.parse(fs.readFileSync(path.join(assembly.directory, 'fargate.assets.json'), 'utf8')) as {
      dockerImages: Record<string, unknown>;
    };
    const images = Object.keys(manifest.dockerImages);
    expect(images).toHaveLength(1);
    const mover = (Object.values(fargate.findResources('AWS::ECS::TaskDefinition')) as Resource[]).find((t) =>
      t.Properties.ContainerDefinitions.some((c: { Name: string }) => c.Name === 'Mover'),
    )!;
    expect(JSON.stringify(mover)).toContain(images[0]);
  });

  it.each<[string, Partial<CellProps>, RegExp]>([
    ['an id that cannot go into names', { cellId: 'Blue_1' }, /Cell Blue_1: cellId `Blue_1` must match/],
    [
      'a variable the cell sets itself',
      { workload: { image: ecs.ContainerImage.fromRegistry(NGINX), environment: { CELL_ID: 'x' } } },
      /`CELL_ID` is already set/,
    ],
    [
      'secrets on the ec2 kind',
      {
        compute: { kind: 'ec2', cpu: 256, memoryMiB: 512, capacity: { min: 1, desired: 1, max: 1 } },
        workload: {
          image: ecs.ContainerImage.fromRegistry(NGINX),
          secrets: { K: ecs.Secret.fromSecretsManager(secretsmanager.Secret.fromSecretNameV2(new TestStack(), 'S', 's')) },
        },
      },
      /workload\.secrets needs the fargate compute kind/,
    ],
    [
      'a health check path that is not a path',
      { workload: { image: ecs.ContainerImage.fromRegistry(NGINX), healthCheckPath: 'ready' } },
      /healthCheckPath `ready` must start with \//,
    ],
  ])('refuses %s with one line naming the prop', (_what, overrides, error) => {
    expect(() => new Cell(new TestStack(), 'Cell', plainProps(overrides))).toThrow(error);
  });

  it("defaults the port and health path to aws-cdk's and the load balancer's (80, /)", () => {
    defaults.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', { Port: 80, HealthCheckPath: '/' });
    const [container] = workloadTask(defaults).Properties.ContainerDefinitions;
    expect(environmentOf(container)).toMatchObject({ PORT: '80', HEALTH_CHECK_PATH: '/' });
  });
});
