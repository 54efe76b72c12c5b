import { CellSignalsRecord, parseSignalsRecord } from '../../../lib/domain/capacity';

/** What a cell stack publishes in its signals parameter (lib/constructs/cell/metrics-access.ts). */
const cpu = { namespace: 'AWS/ECS', metricName: 'CPUUtilization', statistic: 'Average', dimensions: { ClusterName: 'c', ServiceName: 's' } };
const running = {
  namespace: 'ECS/ContainerInsights',
  metricName: 'RunningTaskCount',
  statistic: 'Average',
  dimensions: { ClusterName: 'c', ServiceName: 's' },
};
const record: CellSignalsRecord = { schemaVersion: 2, signals: { computeCpu: { ...cpu, running, maximum: 10, unit: 'tasks' } } };
const WHERE = 'SSM /orders/cell/eu-1/signals in eu-west-1';

describe('parseSignalsRecord', () => {
  it("reads a record with the compute's CPU, running count, maximum and unit", () => {
    expect(parseSignalsRecord(JSON.stringify(record), WHERE)).toEqual(record);
  });

  it('refuses a record of schema 1, whose compute has no running count, with what to do', () => {
    expect(() => parseSignalsRecord(JSON.stringify({ schemaVersion: 1, signals: { computeCpu: cpu } }), WHERE)).toThrow(
      `${WHERE}: not a signals record of schema 2 ({"schemaVersion":1,`,
    );
    expect(() => parseSignalsRecord(JSON.stringify({ schemaVersion: 1, signals: {} }), WHERE)).toThrow(
      /; redeploy the cell stack with this version of the factory, or update cellctl$/,
    );
  });

  it.each([
    ['no running count', { ...cpu, maximum: 10, unit: 'tasks' }],
    ['a running count that is not a metric', { ...cpu, running: { namespace: 'ECS/ContainerInsights' }, maximum: 10, unit: 'tasks' }],
    ['no maximum', { ...cpu, running, unit: 'tasks' }],
    ['a maximum of 0', { ...cpu, running, maximum: 0, unit: 'tasks' }],
    ['a fractional maximum', { ...cpu, running, maximum: 2.5, unit: 'tasks' }],
    ['an unknown unit', { ...cpu, running, maximum: 10, unit: 'vcpus' }],
  ])('refuses a compute signal with %s', (_, computeCpu) => {
    expect(() => parseSignalsRecord(JSON.stringify({ schemaVersion: 2, signals: { computeCpu } }), WHERE)).toThrow(
      `${WHERE}: signal \`computeCpu\` needs its running count (a metric), its maximum (a whole number of at least 1) and its unit (tasks or instances) (got ${JSON.stringify(computeCpu)}); redeploy the cell stack`,
    );
  });

  it('refuses an unknown signal and a signal that is not a metric', () => {
    expect(() => parseSignalsRecord(JSON.stringify({ schemaVersion: 2, signals: { memory: cpu } }), WHERE)).toThrow(
      `${WHERE}: unknown signal \`memory\``,
    );
    expect(() => parseSignalsRecord(JSON.stringify({ schemaVersion: 2, signals: { databaseCpu: { namespace: 'AWS/RDS' } } }), WHERE)).toThrow(
      `${WHERE}: signal \`databaseCpu\` needs namespace, metricName, statistic and text dimensions`,
    );
  });
});
