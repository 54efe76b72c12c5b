import { Template } from 'aws-cdk-lib/assertions';
import { FARGATE_CELL, synthBareCells } from '../../support/cell';

describe('CellDashboard', () => {
  let template: Template;
  beforeAll(() => {
    template = synthBareCells([FARGATE_CELL])[FARGATE_CELL].template;
  });

  it('is one dashboard named after the cell, showing its health and every alarm', () => {
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const [dashboard] = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
    expect(dashboard.Properties.DashboardName).toBe(`orders-${FARGATE_CELL}`);
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const id of [
      ...Object.keys(template.findResources('AWS::CloudWatch::Alarm')),
      ...Object.keys(template.findResources('AWS::CloudWatch::CompositeAlarm')),
    ]) {
      expect(body).toContain(id);
    }
  });
});
