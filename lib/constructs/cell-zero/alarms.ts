import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';

export interface AdoptionAlarmsProps {
  /** `<app>-<cell>`: every alarm's name starts with it, as a cell's do. */
  readonly namePrefix: string;
  /** The existing ALB as CloudWatch names it (`app/<name>/<id>`). */
  readonly loadBalancerFullName: string;
  /** The adoption NLB and its target group (the existing ALB). */
  readonly entry: {
    readonly loadBalancer: { readonly loadBalancerFullName: string };
    readonly targetGroup: { readonly targetGroupFullName: string };
  };
  /** 5xx (target and load balancer) as a percentage of the ALB's requests. */
  readonly errorRatePercent: number;
  /** p99 of the ALB's target response time, milliseconds. */
  readonly p99LatencyMs: number;
  /** Consecutive 1-minute periods before an alarm fires. */
  readonly evaluationPeriods: number;
  /** Encrypts the alarm topic; CloudWatch must be allowed to use it. */
  readonly encryptionKey: kms.IKey;
}

/**
 * What the router and the pipeline read about cell zero, from what exists without touching the
 * existing stack: the existing ALB's own metrics (AWS/ApplicationELB, by its ARN's name) and the
 * adoption NLB's view of it. `health` is named `<app>-<cell>-health` like every cell's, so the
 * pipeline's bake and the routers' operators watch cell zero the same way.
 */
export class AdoptionAlarms extends Construct {
  public readonly health: cloudwatch.CompositeAlarm;
  public readonly alarms: readonly cloudwatch.Alarm[];
  public readonly topic: sns.Topic;

  constructor(scope: Construct, id: string, props: AdoptionAlarmsProps) {
    super(scope, id);
    for (const [name, value] of [
      ['errorRatePercent', props.errorRatePercent],
      ['p99LatencyMs', props.p99LatencyMs],
      ['evaluationPeriods', props.evaluationPeriods],
    ] as const) {
      if (!(Number.isFinite(value) && value > 0)) throw new Error(`AdoptionAlarms: ${name} ${value} must be a positive number`);
    }
    const alb = (metricName: string, statistic: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/ApplicationELB',
        metricName,
        dimensionsMap: { LoadBalancer: props.loadBalancerFullName },
        statistic,
        period: Duration.minutes(1),
      });
    const periods = { evaluationPeriods: props.evaluationPeriods, datapointsToAlarm: props.evaluationPeriods };
    const errors = new cloudwatch.Alarm(this, 'ErrorRate', {
      alarmName: `${props.namePrefix}-error-rate`,
      alarmDescription: `Cell zero: 5xx above ${props.errorRatePercent}% of the existing load balancer's requests`,
      metric: new cloudwatch.MathExpression({
        expression: 'IF(requests > 0, 100 * (FILL(target5xx, 0) + FILL(elb5xx, 0)) / requests, 0)',
        usingMetrics: {
          requests: alb('RequestCount', 'Sum'),
          target5xx: alb('HTTPCode_Target_5XX_Count', 'Sum'),
          elb5xx: alb('HTTPCode_ELB_5XX_Count', 'Sum'),
        },
        period: Duration.minutes(1),
      }),
      threshold: props.errorRatePercent,
      ...periods,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const latency = new cloudwatch.Alarm(this, 'P99Latency', {
      alarmName: `${props.namePrefix}-p99-latency`,
      alarmDescription: `Cell zero: p99 target response time of the existing load balancer above ${props.p99LatencyMs} ms`,
      metric: alb('TargetResponseTime', 'p99'),
      threshold: props.p99LatencyMs / 1000,
      ...periods,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    // The NLB's one target is the ALB: unhealthy means the routers' path to cell zero is down.
    const unreachable = new cloudwatch.Alarm(this, 'Unreachable', {
      alarmName: `${props.namePrefix}-unreachable`,
      alarmDescription: "Cell zero: the adoption NLB finds the existing load balancer unhealthy (the routers' path to cell zero)",
      metric: new cloudwatch.Metric({
        namespace: 'AWS/NetworkELB',
        metricName: 'UnHealthyHostCount',
        statistic: 'Maximum',
        period: Duration.minutes(1),
        dimensionsMap: { LoadBalancer: props.entry.loadBalancer.loadBalancerFullName, TargetGroup: props.entry.targetGroup.targetGroupFullName },
      }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      ...periods,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.alarms = [errors, latency, unreachable];
    this.health = new cloudwatch.CompositeAlarm(this, 'Health', {
      compositeAlarmName: `${props.namePrefix}-health`,
      alarmDescription: "Cell zero is unhealthy: what the pipeline's bake and on-call watch",
      alarmRule: cloudwatch.AlarmRule.anyOf(...this.alarms),
    });
    this.topic = new sns.Topic(this, 'Topic', { topicName: `${props.namePrefix}-alarms`, masterKey: props.encryptionKey, enforceSSL: true });
    const notify = new cloudwatchActions.SnsAction(this.topic);
    for (const alarm of [...this.alarms, this.health]) {
      alarm.addAlarmAction(notify);
      alarm.addOkAction(notify);
    }
  }
}
