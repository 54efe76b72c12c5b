import { Template } from 'aws-cdk-lib/assertions';
import { EC2_CELL, FARGATE_CELL, SynthesizedCell, synthCells } from '../support/cell';

const SIGNALS = ['error-rate', 'latency-p99', 'unhealthy-hosts', 'database-cpu', 'database-connections', 'database-free-storage', 'oldest-message', 'dead-letters'];

describe('CellAlarms', () => {
  let cells: Record<string, SynthesizedCell>;
  let template: Template;
  beforeAll(() => {
    cells = synthCells([FARGATE_CELL, EC2_CELL]);
    template = cells[FARGATE_CELL].template;
  });

  it('creates every alarm the cell needs, each named with app and cell id', () => {
    const names = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties.AlarmName).sort();
    expect(names).toEqual(SIGNALS.map((s) => `orders-${FARGATE_CELL}-${s}`).sort());
  });

  it('notifies the cell alarm topic on ALARM and OK, from every alarm', () => {
    const [topicId] = Object.keys(template.findResources('AWS::SNS::Topic'));
    const all = [...Object.values(template.findResources('AWS::CloudWatch::Alarm')), ...Object.values(template.findResources('AWS::CloudWatch::CompositeAlarm'))];
    expect(all).toHaveLength(9);
    for (const alarm of all) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: topicId }]);
    }
    template.hasResourceProperties('AWS::SNS::Topic', { TopicName: `orders-${FARGATE_CELL}-alarms` });
  });

  it('uses the fleet thresholds', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: `orders-${FARGATE_CELL}-error-rate`, Threshold: 2, EvaluationPeriods: 3 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: `orders-${FARGATE_CELL}-latency-p99`, Threshold: 1.5, ExtendedStatistic: 'p99' });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `orders-${FARGATE_CELL}-database-free-storage`,
      ComparisonOperator: 'LessThanOrEqualToThreshold',
      Threshold: 10 * 1024 ** 3,
      MetricName: 'FreeLocalStorage',
    });
    cells[EC2_CELL].template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: `orders-${EC2_CELL}-database-free-storage`, MetricName: 'FreeStorageSpace' });
  });

  it('computes the 5xx rate from target and load-balancer errors over requests', () => {
    const [alarm] = Object.values(template.findResources('AWS::CloudWatch::Alarm', { Properties: { AlarmName: `orders-${FARGATE_CELL}-error-rate` } }));
    const metrics = alarm.Properties.Metrics;
    expect(metrics.find((m: { Expression?: string }) => m.Expression)?.Expression).toBe('IF(requests > 0, 100 * (target5xx + elb5xx) / requests, 0)');
    expect(metrics.filter((m: { MetricStat?: unknown }) => m.MetricStat).map((m: { MetricStat: { Metric: { MetricName: string } } }) => m.MetricStat.Metric.MetricName).sort()).toEqual([
      'HTTPCode_ELB_5XX_Count', 'HTTPCode_Target_5XX_Count', 'RequestCount',
    ]);
  });

  it('exposes one composite health alarm over the request-path signals only: queue signals and free storage page, never gate', () => {
    template.resourceCountIs('AWS::CloudWatch::CompositeAlarm', 1);
    const [health] = Object.values(template.findResources('AWS::CloudWatch::CompositeAlarm'));
    expect(health.Properties.AlarmName).toBe(`orders-${FARGATE_CELL}-health`);
    const rule = JSON.stringify(health.Properties.AlarmRule);
    const alarms = template.findResources('AWS::CloudWatch::Alarm');
    const watched = Object.entries(alarms).filter(([id]) => rule.includes(id)).map(([, a]) => a.Properties.AlarmName);
    expect(watched.sort()).toEqual(['error-rate', 'latency-p99', 'unhealthy-hosts', 'database-cpu', 'database-connections'].map((s) => `orders-${FARGATE_CELL}-${s}`).sort());
    for (const paging of ['dead-letters', 'oldest-message', 'database-free-storage']) expect(watched).not.toContain(`orders-${FARGATE_CELL}-${paging}`);
    expect(rule).toContain('ALARM(');
  });
});
