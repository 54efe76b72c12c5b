import { Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { CellSignalName, CellSignalsRecord, ComputeUnit, PublishedMetric } from '../../domain/capacity/signals';
import { assertAccountId, CrossAccountReadRole } from '../shared/cross-account-read-role';

export interface CellMetricsAccessProps {
  /** `<app>-<cell>-metrics-reader` (`cellMetricsReaderRoleName`): operators assume it by name. */
  readonly roleName: string;
  /** `/<app>/cell/<id>/signals` (`cellSignalsParameter`): `cellctl capacity` reads it by name. */
  readonly parameterName: string;
  /** The account operators run `cellctl capacity` from (the routers' metrics are there). */
  readonly routerAccount: string;
  /** The metrics of the cell's own signals but the compute's: those its alarms already use. */
  readonly signals: Readonly<Record<Exclude<CellSignalName, 'computeCpu'>, cloudwatch.IMetric>>;
  /** The compute: the CPU its scaling tracks, how many run, and the most it scales out to (`CellCompute`). */
  readonly compute: {
    readonly cpu: cloudwatch.IMetric;
    readonly running: cloudwatch.IMetric;
    readonly maximum: number;
    readonly unit: ComputeUnit;
  };
}

/** A metric as the signals parameter holds it; its dimension values resolve at deploy time. */
function published(name: CellSignalName, metric: cloudwatch.IMetric): PublishedMetric {
  const stat = metric.toMetricConfig().metricStat;
  if (!stat) throw new Error(`CellMetricsAccess: signal \`${name}\` is a math expression; give the metric itself (namespace, name, dimensions)`);
  return {
    namespace: stat.namespace,
    metricName: stat.metricName,
    dimensions: Object.fromEntries((stat.dimensions ?? []).map((d) => [d.name, d.value])),
    statistic: stat.statistic,
  };
}

/**
 * What `cellctl capacity` reads of the cell itself: an SSM parameter naming the metrics of the cell's
 * signals (the compute's CPU, running count and maximum, database CPU and connections, oldest work
 * message), whose dimension values
 * are references to the deployed resources (CloudFormation generates the service, cluster, database
 * and queue names, so the CLI could not derive them from the config), and a role that operators of
 * the router account assume to read that parameter and call `cloudwatch:GetMetricData`, nothing else.
 *
 * GetMetricData has no resource-level permission and no condition key that narrows it (CloudWatch
 * permissions reference: its actions take `*`); the account holds only this cell, so `*` reads this
 * cell's metrics and nothing of another.
 */
export class CellMetricsAccess extends Construct {
  public readonly role: iam.Role;
  public readonly parameter: ssm.StringParameter;

  constructor(scope: Construct, id: string, props: CellMetricsAccessProps) {
    super(scope, id);
    assertAccountId('CellMetricsAccess: routerAccount', props.routerAccount);
    const { maximum, unit } = props.compute;
    if (!Number.isInteger(maximum) || maximum < 1)
      throw new Error(
        `CellMetricsAccess: compute.maximum ${maximum} must be a whole number of ${unit} of at least 1 (the compute's maximum capacity)`,
      );
    const record: CellSignalsRecord = {
      schemaVersion: 2,
      signals: {
        computeCpu: { ...published('computeCpu', props.compute.cpu), running: published('computeCpu', props.compute.running), maximum, unit },
        databaseCpu: published('databaseCpu', props.signals.databaseCpu),
        databaseConnections: published('databaseConnections', props.signals.databaseConnections),
        queueAgeSeconds: published('queueAgeSeconds', props.signals.queueAgeSeconds),
      },
    };
    this.parameter = new ssm.StringParameter(this, 'Signals', {
      parameterName: props.parameterName,
      description: "The metrics of this cell's own signals (compute, database, queue): cellctl capacity reads them through the metrics reader role",
      stringValue: Stack.of(this).toJsonString(record),
    });
    this.role = new CrossAccountReadRole(this, 'Reader', {
      roleName: props.roleName,
      description: "cellctl capacity: read this cell's metrics and the parameter naming them",
      trustedAccount: props.routerAccount,
      actions: ['ssm:GetParameter'],
      resources: [this.parameter.parameterArn],
    });
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['cloudwatch:GetMetricData'], resources: ['*'] }));
    Validations.of(this.role.node.findChild('DefaultPolicy')).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'cloudwatch:GetMetricData takes no resource-level permission (CloudWatch permissions reference: its actions take *); the role only reads, and the account holds only this cell.',
    });
    Validations.of(this.role.node.defaultChild!).acknowledge({
      id: 'CellIsolation-CI1[account:router]',
      reason:
        "Operators of the router account (where cellctl capacity reads the routers' metrics) read this cell's metrics and the parameter naming them, and nothing else: an observation from outside, never a call between cells.",
    });
  }
}
