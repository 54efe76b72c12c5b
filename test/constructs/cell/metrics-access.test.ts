import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { CellMetricsAccess } from '../../../lib/constructs/cell/metrics-access';
import { CELL_SIGNALS, parseSignalsRecord } from '../../../lib/domain/capacity';
import { EC2_CELL, FARGATE_CELL, synthCells } from '../../support/cell';
import { exampleFleet } from '../../support/fleet';

/** Resolves the parameter's value as CloudFormation would, with each Ref / GetAtt shown as `<id>` / `<id>.<attr>`. */
function parameterValue(template: Template, name: string): string {
  const [parameter] = Object.values(template.findResources('AWS::SSM::Parameter', { Properties: { Name: name } }));
  const render = (v: unknown): string => {
    if (typeof v === 'string') return v;
    const o = v as Record<string, unknown>;
    if ('Ref' in o) return `<${o.Ref}>`;
    if ('Fn::GetAtt' in o) return `<${(o['Fn::GetAtt'] as string[]).join('.')}>`;
    if ('Fn::Join' in o) return (o['Fn::Join'] as [string, unknown[]])[1].map(render).join((o['Fn::Join'] as [string])[0]);
    throw new Error(`unexpected ${JSON.stringify(v)}`);
  };
  return render(parameter.Properties.Value);
}

describe('CellMetricsAccess in the cell stacks', () => {
  const fleet = exampleFleet();
  let cells: ReturnType<typeof synthCells>;
  beforeAll(() => {
    cells = synthCells([FARGATE_CELL, EC2_CELL]);
  });

  it.each([FARGATE_CELL, EC2_CELL])(
    "%s: lets only the router account assume the reader, which may read the cell's metrics and its signals parameter, nothing else",
    (id) => {
      const { template } = cells[id];
      const [roleId, role] = Object.entries(template.findResources('AWS::IAM::Role', { Properties: { RoleName: `orders-${id}-metrics-reader` } }))[0];
      expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
        { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${fleet.accounts.router}:root` } },
      ]);
      const [policy] = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }));
      const [parameterId] = Object.keys(template.findResources('AWS::SSM::Parameter', { Properties: { Name: `/orders/cell/${id}/signals` } }));
      const statements = policy.Properties.PolicyDocument.Statement as { Action: string; Resource: unknown }[];
      expect(statements.map((s) => s.Action).sort()).toEqual(['cloudwatch:GetMetricData', 'ssm:GetParameter']);
      expect(statements.find((s) => s.Action === 'cloudwatch:GetMetricData')!.Resource).toBe('*');
      expect(JSON.stringify(statements.find((s) => s.Action === 'ssm:GetParameter')!.Resource)).toContain(parameterId);
    },
  );

  it("publishes the Fargate cell's signals with the dimensions of its deployed service, Aurora cluster and work queue, as its alarms use them", () => {
    const { template, stack } = cells[FARGATE_CELL];
    const record = parseSignalsRecord(parameterValue(template, `/orders/cell/${FARGATE_CELL}/signals`), 'parameter');
    expect(Object.keys(record.signals)).toEqual([...CELL_SIGNALS]);
    const id = (c: { node: { defaultChild?: unknown } }) => stack.getLogicalId(c.node.defaultChild as never);
    const { compute, data, queues } = stack.cell;
    const [cluster] = Object.keys(template.findResources('AWS::ECS::Cluster')).filter((k) => !k.includes('Mover'));
    const [aurora] = Object.keys(template.findResources('AWS::RDS::DBCluster'));
    const service = { ClusterName: `<${cluster}>`, ServiceName: `<${id(compute.service!)}.Name>` };
    expect(record.signals).toEqual({
      // The CPU its scaling tracks, with its running tasks (Container Insights) and the scaling's maximum.
      computeCpu: {
        namespace: 'AWS/ECS',
        metricName: 'CPUUtilization',
        statistic: 'Average',
        dimensions: service,
        running: { namespace: 'ECS/ContainerInsights', metricName: 'RunningTaskCount', statistic: 'Average', dimensions: service },
        maximum: 12,
        unit: 'tasks',
      },
      databaseCpu: { namespace: 'AWS/RDS', metricName: 'CPUUtilization', statistic: 'Average', dimensions: { DBClusterIdentifier: `<${aurora}>` } },
      databaseConnections: {
        namespace: 'AWS/RDS',
        metricName: 'DatabaseConnections',
        statistic: 'Average',
        dimensions: { DBClusterIdentifier: `<${aurora}>` },
      },
      queueAgeSeconds: {
        namespace: 'AWS/SQS',
        metricName: 'ApproximateAgeOfOldestMessage',
        statistic: 'Maximum',
        dimensions: { QueueName: `<${id(queues.work)}.QueueName>` },
      },
    });
    // The same metrics the cell's alarms watch.
    const alarm = (name: string) =>
      Object.values(template.findResources('AWS::CloudWatch::Alarm', { Properties: { AlarmName: `orders-${FARGATE_CELL}-${name}` } }))[0].Properties;
    expect(alarm('database-cpu').Dimensions).toEqual([{ Name: 'DBClusterIdentifier', Value: { Ref: aurora } }]);
    expect(alarm('oldest-message').Dimensions).toEqual([{ Name: 'QueueName', Value: { 'Fn::GetAtt': [id(queues.work), 'QueueName'] } }]);
    expect(data.engine).toBe('aurora-postgresql');
    // The maximum is the scaling target's, and the CPU the one its policy tracks.
    const [target] = Object.values(template.findResources('AWS::ApplicationAutoScaling::ScalableTarget'));
    expect(target.Properties.MaxCapacity).toBe(12);
    const [policy] = Object.values(template.findResources('AWS::ApplicationAutoScaling::ScalingPolicy'));
    expect(policy.Properties.TargetTrackingScalingPolicyConfiguration.PredefinedMetricSpecification.PredefinedMetricType).toBe(
      'ECSServiceAverageCPUUtilization',
    );
  });

  it("publishes the EC2 cell's compute CPU as its Auto Scaling group's and its database signals by RDS instance", () => {
    const { template } = cells[EC2_CELL];
    const record = parseSignalsRecord(parameterValue(template, `/orders/cell/${EC2_CELL}/signals`), 'parameter');
    const [asg] = Object.keys(template.findResources('AWS::AutoScaling::AutoScalingGroup'));
    const [instance] = Object.keys(template.findResources('AWS::RDS::DBInstance'));
    expect(record.signals.computeCpu).toEqual({
      namespace: 'AWS/EC2',
      metricName: 'CPUUtilization',
      statistic: 'Average',
      dimensions: { AutoScalingGroupName: `<${asg}>` },
      // Published only because the group collects it (CellCompute's groupMetrics).
      running: {
        namespace: 'AWS/AutoScaling',
        metricName: 'GroupInServiceInstances',
        statistic: 'Average',
        dimensions: { AutoScalingGroupName: `<${asg}>` },
      },
      maximum: 6,
      unit: 'instances',
    });
    expect(template.findResources('AWS::AutoScaling::AutoScalingGroup')[asg].Properties.MaxSize).toBe('6');
    expect(template.findResources('AWS::AutoScaling::AutoScalingGroup')[asg].Properties.MetricsCollection).toEqual([
      { Granularity: '1Minute', Metrics: ['GroupInServiceInstances'] },
    ]);
    expect(record.signals.databaseCpu!.dimensions).toEqual({ DBInstanceIdentifier: `<${instance}>` });
    expect(record.signals.databaseConnections!.dimensions).toEqual({ DBInstanceIdentifier: `<${instance}>` });
  });

  it('refuses a router account that is not a 12-digit id, a math expression as a signal, and a compute without a maximum', () => {
    const metric = new cloudwatch.Metric({ namespace: 'N', metricName: 'M' });
    const signals = { databaseCpu: metric, databaseConnections: metric, queueAgeSeconds: metric };
    const compute = { cpu: metric, running: metric, maximum: 4, unit: 'tasks' as const };
    const props = { roleName: 'r', parameterName: '/p', routerAccount: '123456789012', signals, compute };
    expect(() => new CellMetricsAccess(new Stack(), 'M', { ...props, routerAccount: '123' })).toThrow(
      'CellMetricsAccess: routerAccount `123` is not a 12-digit account id',
    );
    const expression = new cloudwatch.MathExpression({ expression: 'm * 2', usingMetrics: { m: metric } });
    expect(() => new CellMetricsAccess(new Stack(), 'M', { ...props, signals: { ...signals, databaseCpu: expression } })).toThrow(
      'CellMetricsAccess: signal `databaseCpu` is a math expression; give the metric itself (namespace, name, dimensions)',
    );
    expect(() => new CellMetricsAccess(new Stack(), 'M', { ...props, compute: { ...compute, running: expression } })).toThrow(
      'CellMetricsAccess: signal `computeCpu` is a math expression; give the metric itself (namespace, name, dimensions)',
    );
    expect(() => new CellMetricsAccess(new Stack(), 'M', { ...props, compute: { ...compute, maximum: 0 } })).toThrow(
      "CellMetricsAccess: compute.maximum 0 must be a whole number of tasks of at least 1 (the compute's maximum capacity)",
    );
  });
});
