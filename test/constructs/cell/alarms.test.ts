import { Template } from 'aws-cdk-lib/assertions';
import { BareCell, EC2_CELL, FARGATE_CELL, synthBareCells } from '../../support/cell';
import { exampleFleetWithoutExtension } from '../../support/fleet';

/** Deployment-gate variants that tolerate a first start; they page nobody. */
const GATE_ONLY = ['deploy-error-rate', 'deploy-unhealthy-hosts'];
const SIGNALS = [
  'error-rate',
  'latency-p99',
  'unhealthy-hosts',
  'database-cpu',
  'database-connections',
  'database-free-storage',
  'oldest-message',
  'dead-letters',
  'above-target',
  'above-tested-limit',
];

describe('CellAlarms', () => {
  let cells: Record<string, BareCell>;
  let template: Template;
  beforeAll(() => {
    cells = synthBareCells([FARGATE_CELL, EC2_CELL], exampleFleetWithoutExtension());
    template = cells[FARGATE_CELL].template;
  });

  it('creates every alarm the cell needs, each named with app and cell id', () => {
    const names = Object.values(template.findResources('AWS::CloudWatch::Alarm'))
      .map((a) => a.Properties.AlarmName)
      .sort();
    expect(names).toEqual([...SIGNALS, ...GATE_ONLY].map((s) => `orders-${FARGATE_CELL}-${s}`).sort());
  });

  it('gates deployments on the 5xx rate and unhealthy targets only while a target is healthy, so a first start does not roll the create back', () => {
    for (const [signal, raw] of [
      ['deploy-error-rate', 'error-rate'],
      ['deploy-unhealthy-hosts', 'unhealthy-hosts'],
    ]) {
      const [gate] = Object.values(
        template.findResources('AWS::CloudWatch::Alarm', { Properties: { AlarmName: `orders-${FARGATE_CELL}-${signal}` } }),
      );
      const [paging] = Object.values(
        template.findResources('AWS::CloudWatch::Alarm', { Properties: { AlarmName: `orders-${FARGATE_CELL}-${raw}` } }),
      );
      const metrics = gate.Properties.Metrics as {
        Id: string;
        Expression?: string;
        ReturnData?: boolean;
        MetricStat?: { Metric: { MetricName: string }; Stat: string };
      }[];
      const returned = metrics.find((m) => m.ReturnData !== false)!;
      expect(returned.Expression).toMatch(/^IF\((\w+) > 0, (\w+), 0\)$/);
      const [, guard, value] = /^IF\((\w+) > 0, (\w+), 0\)$/.exec(returned.Expression!)!;
      expect(metrics.find((m) => m.Id === guard)!.MetricStat).toEqual(
        expect.objectContaining({ Metric: expect.objectContaining({ MetricName: 'HealthyHostCount' }), Stat: 'Maximum' }),
      );
      expect(metrics.find((m) => m.Id === value)).toBeDefined();
      // Same threshold as the alarm that pages; the gate variant pages nobody.
      expect(gate.Properties.Threshold).toBe(paging.Properties.Threshold);
      expect(gate.Properties.TreatMissingData).toBe('notBreaching');
      expect(gate.Properties.AlarmActions).toBeUndefined();
    }
  });

  it('notifies the cell alarm topic on ALARM and OK, from every alarm but the deployment-gate variants', () => {
    const [topicId] = Object.keys(template.findResources('AWS::SNS::Topic'));
    const metricAlarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).filter((a) => !/-deploy-/.test(a.Properties.AlarmName));
    const all = [...metricAlarms, ...Object.values(template.findResources('AWS::CloudWatch::CompositeAlarm'))];
    expect(all).toHaveLength(11);
    for (const alarm of all) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: topicId }]);
    }
    template.hasResourceProperties('AWS::SNS::Topic', { TopicName: `orders-${FARGATE_CELL}-alarms` });
  });

  it('uses the fleet thresholds', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: `orders-${FARGATE_CELL}-error-rate`, Threshold: 2, EvaluationPeriods: 3 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `orders-${FARGATE_CELL}-latency-p99`,
      Threshold: 1.5,
      ExtendedStatistic: 'p99',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `orders-${FARGATE_CELL}-database-free-storage`,
      ComparisonOperator: 'LessThanOrEqualToThreshold',
      Threshold: 10 * 1024 ** 3,
      MetricName: 'FreeLocalStorage',
    });
    cells[EC2_CELL].template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `orders-${EC2_CELL}-database-free-storage`,
      MetricName: 'FreeStorageSpace',
    });
  });

  it('computes the 5xx rate from target and load-balancer errors over requests', () => {
    const [alarm] = Object.values(
      template.findResources('AWS::CloudWatch::Alarm', { Properties: { AlarmName: `orders-${FARGATE_CELL}-error-rate` } }),
    );
    const metrics = alarm.Properties.Metrics;
    expect(metrics.find((m: { Expression?: string }) => m.Expression)?.Expression).toBe('IF(requests > 0, 100 * (target5xx + elb5xx) / requests, 0)');
    expect(
      metrics
        .filter((m: { MetricStat?: unknown }) => m.MetricStat)
        .map((m: { MetricStat: { Metric: { MetricName: string } } }) => m.MetricStat.Metric.MetricName)
        .sort(),
    ).toEqual(['HTTPCode_ELB_5XX_Count', 'HTTPCode_Target_5XX_Count', 'RequestCount']);
  });

  it('exposes one composite health alarm over the request-path signals only: queue signals and free storage page, never gate', () => {
    template.resourceCountIs('AWS::CloudWatch::CompositeAlarm', 1);
    const [health] = Object.values(template.findResources('AWS::CloudWatch::CompositeAlarm'));
    expect(health.Properties.AlarmName).toBe(`orders-${FARGATE_CELL}-health`);
    const rule = JSON.stringify(health.Properties.AlarmRule);
    const alarms = template.findResources('AWS::CloudWatch::Alarm');
    const watched = Object.entries(alarms)
      .filter(([id]) => rule.includes(id))
      .map(([, a]) => a.Properties.AlarmName);
    expect(watched.sort()).toEqual(
      ['error-rate', 'latency-p99', 'unhealthy-hosts', 'database-cpu', 'database-connections'].map((s) => `orders-${FARGATE_CELL}-${s}`).sort(),
    );
    for (const paging of ['dead-letters', 'oldest-message', 'database-free-storage', 'above-target', 'above-tested-limit'])
      expect(watched).not.toContain(`orders-${FARGATE_CELL}-${paging}`);
    expect(rule).toContain('ALARM(');
  });

  it("pages when the request rate is above the target share of the shape's tested rate, and above the tested rate, without gating deployments", () => {
    // canary-eu is shape `standard`, tested at 2000 req/s; the fleet's target is the default 50%.
    const rateOf = (name: string) => {
      const [alarm] = Object.values(
        template.findResources('AWS::CloudWatch::Alarm', { Properties: { AlarmName: `orders-${FARGATE_CELL}-${name}` } }),
      );
      const metrics = alarm.Properties.Metrics as {
        Expression?: string;
        MetricStat?: { Metric: { MetricName: string }; Stat: string; Period: number };
      }[];
      expect(metrics.find((m) => m.Expression)!.Expression).toBe('requests / 60');
      expect(metrics.find((m) => m.MetricStat)!.MetricStat).toMatchObject({ Metric: { MetricName: 'RequestCount' }, Stat: 'Sum', Period: 60 });
      return alarm.Properties;
    };
    expect(rateOf('above-target')).toMatchObject({
      Threshold: 1000,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 15,
      DatapointsToAlarm: 15,
      TreatMissingData: 'notBreaching',
    });
    expect(rateOf('above-tested-limit')).toMatchObject({ Threshold: 2000, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 3 });
    cells[EC2_CELL].template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: `orders-${EC2_CELL}-above-tested-limit`, Threshold: 500 });
    cells[EC2_CELL].template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: `orders-${EC2_CELL}-above-target`, Threshold: 250 });
    // ECS rolls a deployment back on its deployment alarms: capacity is not among them.
    const [service] = Object.values(template.findResources('AWS::ECS::Service'));
    const gated = JSON.stringify(service.Properties.DeploymentConfiguration.Alarms.AlarmNames);
    expect(gated).not.toMatch(/above-/);
  });
});
