import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { Construct } from 'constructs';
import { CellAlarms } from './alarms';

export interface CellDashboardProps {
  /** Dashboard name: `<app>-<cell>`. */
  readonly name: string;
  readonly alarms: CellAlarms;
}

/** One dashboard per cell: every alarm's state first, then one graph per paging alarm with the threshold drawn. */
export class CellDashboard extends Construct {
  public readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: CellDashboardProps) {
    super(scope, id);
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { dashboardName: props.name });
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({
        title: `${props.name} health`,
        // The deployment-gate variants too: the alarm an ECS or instance-refresh rollback names is on the page.
        alarms: [props.alarms.health, ...props.alarms.all, props.alarms.deployErrorRate, props.alarms.deployUnhealthyHosts],
        width: 24,
        height: 4,
      }),
    );
    this.dashboard.addWidgets(...props.alarms.all.map((alarm) => new cloudwatch.AlarmWidget({ alarm, title: alarm.node.id, width: 6, height: 6 })));
  }
}
