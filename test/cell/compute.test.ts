import { Match, Template } from 'aws-cdk-lib/assertions';
import { EC2_CELL, FARGATE_CELL, synthCells } from '../support/cell';

/** The request-path signals that gate deployments; queue signals and free storage only page. */
const GATE = ['error-rate', 'latency-p99', 'unhealthy-hosts', 'database-cpu', 'database-connections'];

/** Logical ids of the cell's gating metric alarms, in GATE order. */
function gateIds(template: Template, cell: string): string[] {
  const alarms = template.findResources('AWS::CloudWatch::Alarm');
  return GATE.map((signal) => Object.entries(alarms).find(([, a]) => a.Properties.AlarmName === `orders-${cell}-${signal}`)![0]);
}

describe('CellCompute', () => {
  let fargate: Template;
  let ec2: Template;
  beforeAll(() => {
    const cells = synthCells([FARGATE_CELL, EC2_CELL]);
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
      expect(service.DependsOn).toEqual(expect.arrayContaining(ids));
      const names = JSON.stringify(service.Properties.DeploymentConfiguration.Alarms);
      for (const id of Object.keys(fargate.findResources('AWS::CloudWatch::CompositeAlarm'))) expect(names).not.toContain(id);
    });

    it('keeps tasks private and reachable only from the ALB', () => {
      fargate.hasResourceProperties('AWS::ECS::Service', {
        NetworkConfiguration: { AwsvpcConfiguration: Match.objectLike({ AssignPublicIp: 'DISABLED' }) },
      });
      fargate.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
        FromPort: 80,
        ToPort: 80,
        GroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('ComputeSecurityGroup'), 'GroupId'] },
        SourceSecurityGroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('EntryLoadBalancerSecurityGroup'), 'GroupId'] },
      });
    });

    it('passes database credentials as secrets, never as plain environment', () => {
      const task = Object.values(fargate.findResources('AWS::ECS::TaskDefinition'))[0];
      const container = task.Properties.ContainerDefinitions[0];
      expect(container.Secrets.map((s: { Name: string }) => s.Name)).toEqual(['DB_HOST', 'DB_PORT', 'DB_USER', 'DB_PASSWORD']);
      expect(container.Environment.map((e: { Name: string }) => e.Name)).toEqual(['CELL_ID', 'WORK_QUEUE_URL']);
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
      ec2.hasResourceProperties('AWS::AutoScaling::AutoScalingGroup', { MinSize: '2', MaxSize: '6', HealthCheckType: 'ELB' });
      ec2.hasResourceProperties('AWS::EC2::LaunchTemplate', {
        LaunchTemplateData: Match.objectLike({
          InstanceType: 't3.medium',
          MetadataOptions: { HttpTokens: 'required' },
          Monitoring: { Enabled: true },
          BlockDeviceMappings: [Match.objectLike({ Ebs: Match.objectLike({ Encrypted: true }) })],
        }),
      });
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
      expect(asg.DependsOn).toEqual(expect.arrayContaining(ids));
    });
  });
});
