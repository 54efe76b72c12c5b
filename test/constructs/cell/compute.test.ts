import { Match, Template } from 'aws-cdk-lib/assertions';
import { EC2_CELL, FARGATE_CELL, synthBareCells } from '../../support/cell';
import { exampleFleetWithoutExtension } from '../../support/fleet';

/**
 * The request-path signals that gate deployments; queue signals and free storage only page. The 5xx
 * rate and unhealthy targets gate through their variants that tolerate a first start.
 */
const GATE = ['deploy-error-rate', 'latency-p99', 'deploy-unhealthy-hosts', 'database-cpu', 'database-connections'];

/** Logical ids of the cell's gating metric alarms, in GATE order. */
function gateIds(template: Template, cell: string): string[] {
  const alarms = template.findResources('AWS::CloudWatch::Alarm');
  return GATE.map((signal) => Object.entries(alarms).find(([, a]) => a.Properties.AlarmName === `orders-${cell}-${signal}`)![0]);
}

describe('CellCompute', () => {
  let fargate: Template;
  let ec2: Template;
  beforeAll(() => {
    const cells = synthBareCells([FARGATE_CELL, EC2_CELL], exampleFleetWithoutExtension(), { fleetImage: true });
    fargate = cells[FARGATE_CELL].template;
    ec2 = cells[EC2_CELL].template;
  });

  describe('Fargate shape', () => {
    it('sizes the service from the shape', () => {
      fargate.hasResourceProperties('AWS::ECS::TaskDefinition', { Cpu: '1024', Memory: '2048', RequiresCompatibilities: ['FARGATE'] });
      fargate.hasResourceProperties('AWS::ECS::Service', { DesiredCount: 3, LaunchType: 'FARGATE' });
      fargate.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', { MinCapacity: 2, MaxCapacity: 12 });
    });

    it('rolls back on the circuit breaker and on each request-path metric alarm, never the composite or a queue alarm', () => {
      const ids = gateIds(fargate, FARGATE_CELL);
      fargate.hasResourceProperties('AWS::ECS::Service', {
        DeploymentConfiguration: Match.objectLike({
          DeploymentCircuitBreaker: { Enable: true, Rollback: true },
          Alarms: { AlarmNames: ids.map((id) => ({ Ref: id })), Enable: true, Rollback: true },
          MinimumHealthyPercent: 100,
        }),
      });
      const service = Object.values(fargate.findResources('AWS::ECS::Service'))[0];
      const names = JSON.stringify(service.Properties.DeploymentConfiguration.Alarms);
      for (const id of Object.keys(fargate.findResources('AWS::CloudWatch::CompositeAlarm'))) expect(names).not.toContain(id);
    });

    it('keeps tasks private and reachable only from the ALB', () => {
      fargate.hasResourceProperties('AWS::ECS::Service', {
        NetworkConfiguration: { AwsvpcConfiguration: Match.objectLike({ AssignPublicIp: 'DISABLED' }) },
      });
      fargate.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
        FromPort: 8080,
        ToPort: 8080,
        GroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('ComputeSecurityGroup'), 'GroupId'] },
        SourceSecurityGroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('EntryLoadBalancerSecurityGroup'), 'GroupId'] },
      });
    });

    it('gives the workload its environment contract and no secret values (rotation-safe: read at connect time)', () => {
      const task = Object.values(fargate.findResources('AWS::ECS::TaskDefinition'))[0];
      const container = task.Properties.ContainerDefinitions[0];
      expect(container.Secrets).toBeUndefined();
      const env = Object.fromEntries(container.Environment.map((e: { Name: string; Value: unknown }) => [e.Name, e.Value]));
      expect(Object.keys(env).sort()).toEqual([
        'AWS_REGION',
        'BUCKET_COUNT',
        'CELL_ID',
        'DB_HOST',
        'DB_NAME',
        'DB_PORT',
        'DB_SECRET_ARN',
        'HEALTH_CHECK_PATH',
        'PARTITION_KEY',
        'PORT',
        'QUEUE_URL',
      ]);
      expect(env).toMatchObject({
        CELL_ID: 'canary-eu',
        PORT: '8080',
        HEALTH_CHECK_PATH: '/healthz',
        DB_PORT: '5433',
        DB_NAME: 'cell',
        BUCKET_COUNT: '16384',
        PARTITION_KEY: '{"source":"header","name":"x-tenant-id"}',
      });
      expect(env.DB_HOST).toEqual({ 'Fn::GetAtt': [expect.stringMatching(/^CellDataCluster/), 'Endpoint.Address'] });
      expect(env.DB_SECRET_ARN).toEqual({ Ref: expect.stringMatching(/^CellDataClusterSecret/) });
      expect(env.QUEUE_URL).toEqual({ Ref: expect.stringMatching(/^CellQueuesWork/) });
    });

    it('lets the task role read the one database secret, decrypting only through Secrets Manager', () => {
      const task = Object.values(fargate.findResources('AWS::ECS::TaskDefinition'))[0];
      const taskRole = task.Properties.TaskRoleArn['Fn::GetAtt'][0];
      const policies = Object.values(fargate.findResources('AWS::IAM::Policy')).filter((p) =>
        p.Properties.Roles.some((r: { Ref: string }) => r.Ref === taskRole),
      );
      const statements = policies.flatMap((p) => p.Properties.PolicyDocument.Statement);
      const secretRead = statements.filter((st) => [st.Action].flat().some((a: string) => a.startsWith('secretsmanager:')));
      expect(secretRead).toEqual([
        expect.objectContaining({ Action: 'secretsmanager:GetSecretValue', Resource: { Ref: expect.stringMatching(/^CellDataClusterSecret/) } }),
      ]);
      expect(statements).toContainEqual(
        expect.objectContaining({
          Action: 'kms:Decrypt',
          Condition: { StringEquals: { 'kms:ViaService': 'secretsmanager.eu-west-1.amazonaws.com' } },
        }),
      );
      // The execution role resolves no secrets any more.
      const executionRole = task.Properties.ExecutionRoleArn['Fn::GetAtt'][0];
      const executionStatements = Object.values(fargate.findResources('AWS::IAM::Policy'))
        .filter((p) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === executionRole))
        .flatMap((p) => p.Properties.PolicyDocument.Statement);
      expect(executionStatements.flatMap((st) => [st.Action].flat()).filter((a: string) => a.startsWith('secretsmanager:'))).toEqual([]);
    });

    it('runs the reference workload image built from this repository', () => {
      const task = Object.values(fargate.findResources('AWS::ECS::TaskDefinition'))[0];
      expect(JSON.stringify(task.Properties.ContainerDefinitions[0].Image)).toContain('container-assets');
    });

    it('enables container insights and sends logs to the cell log group', () => {
      fargate.hasResourceProperties('AWS::ECS::Cluster', { ClusterSettings: [{ Name: 'containerInsights', Value: 'enabled' }] });
      fargate.hasResourceProperties('AWS::ECS::TaskDefinition', {
        ContainerDefinitions: [Match.objectLike({ LogConfiguration: Match.objectLike({ LogDriver: 'awslogs' }) })],
      });
    });
  });

  describe('EC2 shape', () => {
    it('sizes the Auto Scaling group from the shape and checks ELB health', () => {
      ec2.resourceCountIs('AWS::ECS::Service', 0);
      // ARC zonal shift moves launches out of a shifted zone; an impaired zone's unhealthy instances are not replaced into it.
      ec2.hasResourceProperties('AWS::AutoScaling::AutoScalingGroup', {
        AvailabilityZoneImpairmentPolicy: { ZonalShiftEnabled: true, ImpairedZoneHealthCheckBehavior: 'IgnoreUnhealthy' },
      });
      ec2.hasResourceProperties('AWS::AutoScaling::AutoScalingGroup', { MinSize: '2', MaxSize: '6', HealthCheckType: 'ELB' });
      // Instances in service, a point a minute: what `cellctl capacity` weighs the group's CPU with.
      ec2.hasResourceProperties('AWS::AutoScaling::AutoScalingGroup', {
        MetricsCollection: [{ Granularity: '1Minute', Metrics: ['GroupInServiceInstances'] }],
      });
      ec2.hasResourceProperties('AWS::EC2::LaunchTemplate', {
        LaunchTemplateData: Match.objectLike({
          InstanceType: 't3.medium',
          // IMDSv2 only, reachable from the workload container (one hop more than the host).
          MetadataOptions: { HttpTokens: 'required', HttpPutResponseHopLimit: 2 },
          Monitoring: { Enabled: true },
          BlockDeviceMappings: [Match.objectLike({ Ebs: Match.objectLike({ Encrypted: true }) })],
        }),
      });
    });

    it('starts the same image with the same environment; no secret is read at boot', () => {
      const [template] = Object.values(ec2.findResources('AWS::EC2::LaunchTemplate'));
      const userData = JSON.stringify(template.Properties.LaunchTemplateData.UserData);
      expect(userData).not.toContain('get-secret-value');
      expect(userData).not.toContain('DB_PASSWORD');
      for (const name of ['DB_SECRET_ARN', 'DB_HOST', 'DB_NAME', 'QUEUE_URL', 'HEALTH_CHECK_PATH']) expect(userData).toContain(`-e ${name}=`);
      expect(userData).toContain('docker login --username AWS');
      const policies = Object.values(ec2.findResources('AWS::IAM::Policy')).flatMap((p) => p.Properties.PolicyDocument.Statement);
      expect(policies).toContainEqual(
        expect.objectContaining({ Action: 'secretsmanager:GetSecretValue', Resource: { Ref: expect.stringMatching(/^CellDataInstanceSecret/) } }),
      );
      expect(policies).toContainEqual(expect.objectContaining({ Action: expect.arrayContaining(['ecr:BatchGetImage']) }));
    });

    it('refreshes instances behind the request-path metric alarms (at most 10, no composite)', () => {
      const ids = gateIds(ec2, EC2_CELL);
      const [asg] = Object.values(ec2.findResources('AWS::AutoScaling::AutoScalingGroup'));
      expect(asg.UpdatePolicy.AutoScalingInstanceRefresh).toEqual({
        Strategy: 'Rolling',
        Preferences: expect.objectContaining({
          AlarmSpecification: { Alarms: ids.map((id) => ({ Ref: id })) },
          MinHealthyPercentage: 100,
        }),
      });
      expect(ids.length).toBeLessThanOrEqual(10);
    });
  });
});
