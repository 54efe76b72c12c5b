import { Duration, Lazy, Token, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { AlarmThresholds } from '../../domain/fleet';
import { CellData } from './data';
import { CellQueues } from './queues';

export interface CellAlarmsProps {
  /** Prefix of every alarm name: `<app>-<cell>`. */
  readonly namePrefix: string;
  readonly thresholds: AlarmThresholds;
  readonly loadBalancer: elbv2.ApplicationLoadBalancer;
  readonly targetGroup: elbv2.ApplicationTargetGroup;
  readonly data: CellData;
  readonly queues: CellQueues;
  /** Encrypts the alarm topic. */
  readonly encryptionKey: kms.IKey;
  /**
   * What the cell's shape was load-tested at and the share of it the fleet places cells against:
   * the capacity alarms page above each. @default - no capacity alarms
   */
  readonly capacity?: { readonly testedRequestsPerSecond: number; readonly targetUtilisation: number };
}

/** How an alarm of a fleet's own cell resource joins the cell (`CellAlarms.addAlarm`). */
export interface CellAlarmOptions {
  /**
   * Whether the alarm counts toward the cell's health: the composite the pipeline's bake reads, so a
   * wave whose cell has it in ALARM fails and rolls back, and on-call is notified through the health
   * alarm. `false` for a signal that must not stop a deployment (like the cell's queue alarms): it
   * is then on the dashboard only, and pages when the caller gives it the cell's topic as its action.
   * @default true
   */
  readonly health?: boolean;
}

/**
 * The name an alarm is given in its template, or undefined when CloudFormation generates it. An
 * alarm's `alarmName` is a reference even when the name is set, so it is read from its resource.
 */
function literalAlarmName(alarm: cloudwatch.IAlarm): string | undefined {
  if (!Token.isUnresolved(alarm.alarmName)) return alarm.alarmName;
  const resource = alarm.node.defaultChild;
  const name = resource instanceof cloudwatch.CfnAlarm || resource instanceof cloudwatch.CfnCompositeAlarm ? resource.alarmName : undefined;
  return name === undefined || Token.isUnresolved(name) ? undefined : name;
}

/** Minutes a cell's request rate must stay above its target before `above-target` pages: a spike is what the headroom is for. */
export const ABOVE_TARGET_MINUTES = 15;

const PERIOD = Duration.minutes(1);
const GIB = 1024 ** 3;

/**
 * Every alarm of one cell, each named `<app>-<cell>-<signal>`, split by what it is for:
 *
 * - `deploymentGate`: the request-path signals a bad change shows up in (5xx rate, p99 latency,
 *   unhealthy targets, database CPU and connections). ECS deployment alarms and the ASG's
 *   instance-refresh alarm specification get these **metric** alarms one by one: neither the ECS
 *   `DeploymentAlarms` nor the Auto Scaling `AlarmSpecification` reference says composite alarms
 *   are accepted (both take alarm names; instance refresh at most 10), and ECS ignores an alarm
 *   that is already in ALARM when the deployment starts, so one alarm per signal loses one signal
 *   at worst, where one composite would lose them all.
 *   The 5xx rate and unhealthy targets gate through their own variants that count only while the
 *   target group has a healthy target (`IF(healthy > 0, …, 0)`): while no task has become healthy
 *   yet (a first start pulling the image, creating the database, migrating) every target is
 *   unhealthy and the load balancer answers 503, which would roll back the service's creation and
 *   fail the cell's first create. A bad change still shows: ECS keeps the old tasks healthy
 *   (minimum healthy 100%) while new ones fail, and a task that never becomes healthy trips the
 *   deployment circuit breaker. Those variants gate only and page nobody.
 * - `health`: the composite over the request-path signals themselves (raw 5xx rate and unhealthy
 *   targets, so a cell with no healthy target is unhealthy); the pipeline's bake reads it.
 * - `paging`: queue signals (oldest work message, dead letters), free storage, and capacity: the
 *   request rate above the fleet's target share of the shape's tested rate (sustained
 *   `ABOVE_TARGET_MINUTES`), and above the tested rate itself. They notify
 *   on-call but never gate or roll back a deployment: one poison message in the dead-letter queue
 *   would otherwise hold `health` in ALARM, fail every bake and blind ECS to the next deployment.
 */
export class CellAlarms extends Construct {
  public readonly errorRate: cloudwatch.Alarm;
  public readonly latencyP99: cloudwatch.Alarm;
  public readonly unhealthyHosts: cloudwatch.Alarm;
  public readonly databaseCpu: cloudwatch.Alarm;
  public readonly databaseConnections: cloudwatch.Alarm;
  public readonly databaseFreeStorage: cloudwatch.Alarm;
  public readonly oldestMessage: cloudwatch.Alarm;
  public readonly deadLetters: cloudwatch.Alarm;
  /** The 5xx rate, counted only while a target is healthy: gates deployments, tolerates a first start. */
  public readonly deployErrorRate: cloudwatch.Alarm;
  /** Unhealthy targets, counted only while another target is healthy: gates deployments, tolerates a first start. */
  public readonly deployUnhealthyHosts: cloudwatch.Alarm;
  /** Request-path metric alarms: ECS deployments and ASG instance refreshes roll back on any of them. */
  public readonly deploymentGate: readonly cloudwatch.Alarm[];
  /** Request rate above the target share of the tested rate (the cell is `hot`): move tenants or add a cell. */
  public readonly aboveTarget?: cloudwatch.Alarm;
  /** Request rate above the shape's tested rate (the cell is `full`): beyond what it is known to sustain. */
  public readonly aboveTestedLimit?: cloudwatch.Alarm;
  /** Alarms that page but never gate a deployment: queue signals, free storage, capacity. */
  public readonly paging: readonly cloudwatch.Alarm[];
  /**
   * The cell's health, read by the pipeline's bake: in ALARM when any request-path alarm is (the raw
   * signals behind `deploymentGate`), or an alarm of the fleet's own resources (`addAlarm`).
   */
  public readonly health: cloudwatch.CompositeAlarm;
  /** Every metric alarm of the cell that pages, composite excluded (the deploy- gate variants page nobody). */
  public readonly all: readonly cloudwatch.Alarm[];
  /** Every alarm of the cell notifies this topic on ALARM and OK: subscribe on-call here. */
  public readonly topic: sns.Topic;
  private readonly namePrefix: string;
  private readonly addedAlarms: cloudwatch.IAlarm[] = [];
  private readonly healthRule: cloudwatch.IAlarm[];

  constructor(scope: Construct, id: string, props: CellAlarmsProps) {
    super(scope, id);
    this.namePrefix = props.namePrefix;
    const t = props.thresholds;
    this.topic = new sns.Topic(this, 'Topic', {
      topicName: `${props.namePrefix}-alarms`,
      masterKey: props.encryptionKey,
      enforceSSL: true,
    });
    const alb = props.loadBalancer.metrics;
    const alarm = (
      name: string,
      metric: cloudwatch.IMetric,
      threshold: number,
      description: string,
      comparison = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    ) =>
      new cloudwatch.Alarm(this, name, {
        alarmName: `${props.namePrefix}-${name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()}`,
        alarmDescription: `${props.namePrefix}: ${description}`,
        metric,
        threshold,
        comparisonOperator: comparison,
        evaluationPeriods: t.evaluationPeriods,
        datapointsToAlarm: t.evaluationPeriods,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });

    const errorRate = new cloudwatch.MathExpression({
      expression: 'IF(requests > 0, 100 * (target5xx + elb5xx) / requests, 0)',
      usingMetrics: {
        requests: alb.requestCount({ period: PERIOD, statistic: 'Sum' }),
        target5xx: alb.httpCodeTarget(elbv2.HttpCodeTarget.TARGET_5XX_COUNT, { period: PERIOD, statistic: 'Sum' }),
        elb5xx: alb.httpCodeElb(elbv2.HttpCodeElb.ELB_5XX_COUNT, { period: PERIOD, statistic: 'Sum' }),
      },
      label: '5xx %',
      period: PERIOD,
    });
    this.errorRate = alarm('ErrorRate', errorRate, t.errorRatePercent, `5xx responses >= ${t.errorRatePercent}% of requests`);
    this.latencyP99 = alarm(
      'LatencyP99',
      props.targetGroup.metrics.targetResponseTime({ period: PERIOD, statistic: 'p99' }),
      t.p99LatencyMs / 1000,
      `p99 target response time >= ${t.p99LatencyMs} ms`,
    );
    this.unhealthyHosts = alarm(
      'UnhealthyHosts',
      props.targetGroup.metrics.unhealthyHostCount({ period: PERIOD, statistic: 'Maximum' }),
      t.unhealthyHosts,
      `>= ${t.unhealthyHosts} unhealthy targets`,
    );
    // Gate variants: zero while no target is healthy (see the class comment).
    const healthy = props.targetGroup.metrics.healthyHostCount({ period: PERIOD, statistic: 'Maximum' });
    const whileHealthy = (value: cloudwatch.IMetric, label: string) =>
      new cloudwatch.MathExpression({ expression: 'IF(healthy > 0, value, 0)', usingMetrics: { healthy, value }, label, period: PERIOD });
    this.deployErrorRate = alarm(
      'DeployErrorRate',
      whileHealthy(errorRate, '5xx % while a target is healthy'),
      t.errorRatePercent,
      `deployment gate: 5xx responses >= ${t.errorRatePercent}% of requests while a target is healthy`,
    );
    this.deployUnhealthyHosts = alarm(
      'DeployUnhealthyHosts',
      whileHealthy(this.unhealthyHosts.metric, 'unhealthy targets while one is healthy'),
      t.unhealthyHosts,
      `deployment gate: >= ${t.unhealthyHosts} unhealthy targets while another is healthy`,
    );
    for (const gate of [this.deployErrorRate, this.deployUnhealthyHosts]) {
      Validations.of(gate).acknowledge({
        id: 'ControlTower::CT.CLOUDWATCH.PR.1',
        reason:
          "A deployment gate only: ECS and instance refresh read it and roll back. The same signal pages on-call through its raw alarm (error-rate, unhealthy-hosts), which notifies the cell's topic; notifying here too would page twice.",
      });
    }
    this.databaseCpu = alarm('DatabaseCpu', props.data.cpu, t.dbCpuPercent, `database CPU >= ${t.dbCpuPercent}%`);
    this.databaseConnections = alarm(
      'DatabaseConnections',
      props.data.databaseConnections,
      t.dbConnections,
      `database connections >= ${t.dbConnections}`,
    );
    this.databaseFreeStorage = alarm(
      'DatabaseFreeStorage',
      props.data.freeStorageBytes,
      t.dbFreeStorageGiB * GIB,
      `database free storage <= ${t.dbFreeStorageGiB} GiB`,
      cloudwatch.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD,
    );
    this.oldestMessage = alarm(
      'OldestMessage',
      props.queues.work.metricApproximateAgeOfOldestMessage({ period: PERIOD, statistic: 'Maximum' }),
      t.oldestMessageSeconds,
      `oldest work message >= ${t.oldestMessageSeconds} s`,
    );
    this.deadLetters = alarm(
      'DeadLetters',
      props.queues.deadLetter.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: 'Maximum' }),
      t.dlqMessages,
      `>= ${t.dlqMessages} messages in the dead-letter queue`,
    );
    const capacity: cloudwatch.Alarm[] = [];
    if (props.capacity) {
      const { testedRequestsPerSecond: tested, targetUtilisation: target } = props.capacity;
      const rate = new cloudwatch.MathExpression({
        expression: 'requests / 60',
        usingMetrics: { requests: alb.requestCount({ period: PERIOD, statistic: 'Sum' }) },
        label: 'requests per second',
        period: PERIOD,
      });
      const targetRps = Math.round(tested * target * 100) / 100;
      this.aboveTarget = new cloudwatch.Alarm(this, 'AboveTarget', {
        alarmName: `${props.namePrefix}-above-target`,
        alarmDescription: `${props.namePrefix}: above ${targetRps} requests/s (${Math.round(target * 100)}% of the ${tested} its shape was tested at) for ${ABOVE_TARGET_MINUTES} minutes; \`cellctl capacity plan --out FILE\` moves tenants away, or add a cell`,
        metric: rate,
        threshold: targetRps,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: ABOVE_TARGET_MINUTES,
        datapointsToAlarm: ABOVE_TARGET_MINUTES,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      this.aboveTestedLimit = alarm(
        'AboveTestedLimit',
        rate,
        tested,
        `above ${tested} requests/s, the rate its shape was tested at; move tenants away now (\`cellctl capacity plan --out FILE\`)`,
        cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      );
      capacity.push(this.aboveTarget, this.aboveTestedLimit);
    }
    this.all = [
      this.errorRate,
      this.latencyP99,
      this.unhealthyHosts,
      this.databaseCpu,
      this.databaseConnections,
      this.databaseFreeStorage,
      this.oldestMessage,
      this.deadLetters,
      ...capacity,
    ];
    this.deploymentGate = [this.deployErrorRate, this.latencyP99, this.deployUnhealthyHosts, this.databaseCpu, this.databaseConnections];
    this.paging = [this.oldestMessage, this.deadLetters, this.databaseFreeStorage, ...capacity];
    this.healthRule = [this.errorRate, this.latencyP99, this.unhealthyHosts, this.databaseCpu, this.databaseConnections];
    this.health = new cloudwatch.CompositeAlarm(this, 'Health', {
      compositeAlarmName: `${props.namePrefix}-health`,
      alarmDescription: `${props.namePrefix}: request path unhealthy; the pipeline's bake fails the wave while it is in ALARM`,
      // Rendered at synth: alarms added later (`addAlarm`) join the rule.
      alarmRule: cloudwatch.AlarmRule.fromString(
        Lazy.string({
          produce: () =>
            cloudwatch.AlarmRule.anyOf(
              ...this.healthRule.map((a) => cloudwatch.AlarmRule.fromAlarm(a, cloudwatch.AlarmState.ALARM)),
            ).renderAlarmRule(),
        }),
      ),
    });
    const notify = new cloudwatchActions.SnsAction(this.topic);
    for (const a of [...this.all, this.health]) {
      a.addAlarmAction(notify);
      a.addOkAction(notify);
    }
  }

  /** Alarms of the fleet's own cell resources (`addAlarm`), in the order added. */
  public get added(): readonly cloudwatch.IAlarm[] {
    return this.addedAlarms;
  }

  /**
   * Makes an alarm of a fleet's own cell resource one of the cell's: in its health (unless
   * `health: false`) and among `added`, which the cell's dashboard shows. Its name must start with
   * the cell's prefix (`<app>-<cell>-`), as every alarm of the cell does: the isolation pack and the
   * pipeline tell a cell's alarms by that prefix.
   */
  public addAlarm(alarm: cloudwatch.IAlarm, options: CellAlarmOptions = {}): void {
    const name = literalAlarmName(alarm);
    if (name === undefined || !name.startsWith(`${this.namePrefix}-`)) {
      const shown = name === undefined ? 'an alarm without a name' : `alarm \`${name}\``;
      throw new Error(`${this.namePrefix}: ${shown} cannot join the cell's alarms; name it \`${this.namePrefix}-<signal>\` (alarmName)`);
    }
    this.addedAlarms.push(alarm);
    if (options.health ?? true) this.healthRule.push(alarm);
  }
}
