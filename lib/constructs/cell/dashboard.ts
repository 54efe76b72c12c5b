import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { Construct } from 'constructs';
import { CellAlarms } from './alarms';

export interface CellDashboardProps {
  /** Dashboard name: `<app>-<cell>`. */
  readonly name: string;
  readonly alarms: CellAlarms;
}

/**
 * One dashboard per cell: every alarm's state first, then one graph per paging alarm with the
 * threshold drawn, then one per alarm of the fleet's own cell resources (`addAlarm`).
 */
export class CellDashboard extends Construct {
  public readonly dashboard: cloudwatch.Dashboard;
  /** What the state widget lists; it renders at synth, so alarms added later are on it too. */
  private readonly states: cloudwatch.IAlarm[];

  constructor(scope: Construct, id: string, props: CellDashboardProps) {
    super(scope, id);
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { dashboardName: props.name });
    // The deployment-gate variants too: the alarm an ECS or instance-refresh rollback names is on the page.
    this.states = [props.alarms.health, ...props.alarms.all, props.alarms.deployErrorRate, props.alarms.deployUnhealthyHosts];
    this.dashboard.addWidgets(new cloudwatch.AlarmStatusWidget({ title: `${props.name} health`, alarms: this.states, width: 24, height: 4 }));
    this.dashboard.addWidgets(...props.alarms.all.map((alarm) => CellDashboard.graph(alarm, alarm.node.id)));
    for (const alarm of props.alarms.added) this.addAlarm(alarm);
  }

  /** Puts `alarm` on the page: in the state widget and as a graph of its own. */
  public addAlarm(alarm: cloudwatch.IAlarm): void {
    this.states.push(alarm);
    this.dashboard.addWidgets(CellDashboard.graph(alarm, alarm.node.id));
  }

  private static graph(alarm: cloudwatch.IAlarm, title: string): cloudwatch.IWidget {
    return new cloudwatch.AlarmWidget({ alarm, title, width: 6, height: 6 });
  }
}
