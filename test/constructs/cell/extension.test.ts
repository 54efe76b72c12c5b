import { Tags } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { cellStackPropsOf } from '../../../lib/app/cell-props';
import { isolationChecksPropsOf } from '../../../lib/app/isolation-props';
import { CellExtension, CellStack } from '../../../lib/constructs/cell';
import { Fleet, FleetConfigError, resolveFleet } from '../../../lib/domain/fleet';
import { CellIsolationChecks } from '../../../lib/constructs/isolation';
import { EC2_CELL, FARGATE_CELL, SynthesizedCell } from '../../support/cell';
import { cdkApp, smallExampleFleet, validInput } from '../../support/fleet';
import { findingsUnder } from '../../support/findings';

type Resource = { Type: string; Properties: Record<string, unknown> };
const only = (template: Template, type: string): [string, Resource] => {
  const found = Object.entries(template.findResources(type)) as [string, Resource][];
  expect(found).toHaveLength(1);
  return found[0];
};
const tagsOf = (resource: Resource) =>
  Object.fromEntries((resource.Properties.Tags as { Key: string; Value: string }[]).map((t) => [t.Key, t.Value]));
const healthRule = (template: Template) => JSON.stringify(only(template, 'AWS::CloudWatch::CompositeAlarm')[1].Properties.AlarmRule);
const dashboardBody = (template: Template) => JSON.stringify(only(template, 'AWS::CloudWatch::Dashboard')[1].Properties.DashboardBody);
/** The logical id of the alarm named `name`. */
const alarmId = (template: Template, name: string) => {
  const [id] = Object.keys(template.findResources('AWS::CloudWatch::Alarm', { Properties: { AlarmName: name } }));
  expect(id).toBeDefined();
  return id;
};

/**
 * One app, synthesized once: the example fleet's two cell shapes (its Fargate and its EC2 cell, with
 * the example's own hook), and two cells of a test fleet whose hook breaks the rules. (Every cell of
 * the whole example passes both packs in test/constructs/isolation/pack.test.ts and test/app/fleet-app.test.ts.) canary-eu gets a bucket that breaks AwsSolutions, a queue that loses its
 * `cell` tag and a paging-only alarm; eu-1 gets a topic encrypted with the cell's key.
 */
let fleet: Fleet;
let cells: Record<string, SynthesizedCell>;
let testFleet: Fleet;
let testCells: Record<string, SynthesizedCell>;
beforeAll(() => {
  fleet = smallExampleFleet([FARGATE_CELL, EC2_CELL]);
  const input = validInput();
  testFleet = resolveFleet({
    ...input,
    cells: input.cells.filter((c) => c.id === FARGATE_CELL || c.id === 'eu-1'),
    cellResources: (cell) => {
      if (cell.cellId === FARGATE_CELL) {
        new s3.Bucket(cell.scope, 'Unencrypted', { encryption: s3.BucketEncryption.UNENCRYPTED });
        const queue = new sqs.Queue(cell.scope, 'Untagged', { encryptionMasterKey: cell.encryptionKey, enforceSSL: true });
        Tags.of(queue).remove('cell');
        cell.addAlarm(
          new cloudwatch.Alarm(cell.scope, 'Backlog', {
            alarmName: `${cell.namePrefix}-backlog`,
            metric: queue.metricApproximateNumberOfMessagesVisible(),
            threshold: 100,
            evaluationPeriods: 5,
          }),
          { health: false },
        );
      } else {
        new sns.Topic(cell.scope, 'Events', { masterKey: cell.encryptionKey, enforceSSL: true });
      }
    },
  });
  const app = cdkApp();
  const build = (f: Fleet, prefix: string) => f.cells.map((c) => [c.id, new CellStack(app, `${prefix}${c.id}`, cellStackPropsOf(f, c))] as const);
  const stacks = [build(fleet, 'cell-'), build(testFleet, 'test-cell-')];
  // Every stack exists before the first Template.fromStack: synthesis freezes the tree.
  [cells, testCells] = stacks.map((list) => Object.fromEntries(list.map(([id, stack]) => [id, { stack, template: Template.fromStack(stack) }])));
});

describe("the example fleet's own cell resources (cellResources)", () => {
  it("adds an idempotency-key table to every cell, tagged with the cell and encrypted with the cell's own key", () => {
    expect(Object.keys(cells)).toHaveLength(fleet.cells.length);
    for (const { id } of fleet.cells) {
      const { template } = cells[id];
      const [, table] = only(template, 'AWS::DynamoDB::Table');
      const [keyId] = only(template, 'AWS::KMS::Key');
      expect([id, table.Properties.SSESpecification]).toEqual([
        id,
        { KMSMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] }, SSEEnabled: true, SSEType: 'KMS' },
      ]);
      expect([id, tagsOf(table)]).toEqual([id, expect.objectContaining({ cell: id, app: fleet.app })]);
      expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    }
  });

  it("lets the workload read and write the table, and tells it the table's name (Fargate task and EC2 instances)", () => {
    const fargate = cells[FARGATE_CELL].template;
    const [tableId] = only(fargate, 'AWS::DynamoDB::Table');
    const [task] = Object.values(fargate.findResources('AWS::ECS::TaskDefinition')) as Resource[];
    const [workload] = task.Properties.ContainerDefinitions as { Environment: { Name: string; Value: unknown }[] }[];
    expect(workload.Environment).toContainEqual({ Name: 'IDEMPOTENCY_TABLE', Value: { Ref: tableId } });
    const taskRole = (task.Properties.TaskRoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const granted = Object.values(fargate.findResources('AWS::IAM::Policy')).filter((p) => JSON.stringify(p.Properties.Roles).includes(taskRole));
    expect(JSON.stringify(granted)).toMatch(new RegExp(`"dynamodb:PutItem".*"Fn::GetAtt":\\["${tableId}","Arn"\\]`));

    const ec2 = cells[EC2_CELL].template;
    const [ec2TableId] = only(ec2, 'AWS::DynamoDB::Table');
    const [launchTemplate] = Object.values(ec2.findResources('AWS::EC2::LaunchTemplate')) as Resource[];
    expect(JSON.stringify(launchTemplate.Properties)).toContain(`-e IDEMPOTENCY_TABLE='",{"Ref":"${ec2TableId}"}`);
  });

  it.each([FARGATE_CELL, EC2_CELL])("%s: puts the table's throttling alarm in the cell's health rule and on its dashboard", (id) => {
    const { template } = cells[id];
    const alarm = alarmId(template, `orders-${id}-idempotency-throttles`);
    expect(healthRule(template)).toContain(`ALARM(\\"",{"Fn::GetAtt":["${alarm}","Arn"]}`);
    const [topic] = Object.keys(template.findResources('AWS::SNS::Topic', { Properties: { TopicName: `orders-${id}-alarms` } }));
    const { Properties: throttles } = template.toJSON().Resources[alarm];
    expect([throttles.AlarmActions, throttles.OKActions]).toEqual([[{ Ref: topic }], [{ Ref: topic }]]);
    // On the state widget and as a graph of its own.
    expect(dashboardBody(template).split(`{"Fn::GetAtt":["${alarm}","Arn"]}`)).toHaveLength(3);
  });

  it('passes AwsSolutions and the cell-isolation pack with no open finding in any cell', () => {
    for (const { id } of fleet.cells) {
      const { stack } = cells[id];
      const open = [
        ...new AwsSolutionsChecks().validateScope(stack).violations,
        ...new CellIsolationChecks(undefined, isolationChecksPropsOf(fleet)).validateScope(stack).violations,
      ];
      expect([id, findingsUnder(open, stack.node.path)]).toEqual([id, {}]);
    }
  });
});

describe('a cellResources hook of a test fleet', () => {
  it("builds only what the hook made for each cell, under the cell's Extension construct", () => {
    const buckets = Object.entries(testCells[FARGATE_CELL].template.findResources('AWS::S3::Bucket')).filter(([id]) =>
      id.startsWith('CellExtensionUnencrypted'),
    );
    expect(buckets.map(([, b]) => b.Properties.BucketEncryption)).toEqual([undefined]);
    expect(testCells[FARGATE_CELL].stack.node.tryFindChild('Cell')?.node.tryFindChild('Extension')?.node.tryFindChild('Unencrypted')).toBeDefined();
    expect(testCells['eu-1'].stack.node.tryFindChild('Cell')?.node.tryFindChild('Extension')?.node.tryFindChild('Unencrypted')).toBeUndefined();
    const [, topic] = Object.entries(testCells['eu-1'].template.findResources('AWS::SNS::Topic')).find(([id]) =>
      id.startsWith('CellExtensionEvents'),
    )!;
    expect(tagsOf(topic as Resource)).toEqual(expect.objectContaining({ cell: 'eu-1', app: fleet.app }));
  });

  it("reports a hook resource's AwsSolutions findings like any other", () => {
    const stack = testCells[FARGATE_CELL].stack;
    const findings = findingsUnder(new AwsSolutionsChecks().validateScope(stack).violations, `${stack.node.path}/Cell/Extension/Unencrypted`);
    expect(Object.keys(findings)).toEqual(expect.arrayContaining(['AwsSolutions-S1', 'AwsSolutions-S10']));
    expect(findingsUnder(new AwsSolutionsChecks().validateScope(testCells['eu-1'].stack).violations, testCells['eu-1'].stack.node.path)).toEqual({});
  });

  it("reports a hook resource's cell-isolation findings like any other", () => {
    const stack = testCells[FARGATE_CELL].stack;
    const findings = findingsUnder(
      new CellIsolationChecks(undefined, isolationChecksPropsOf(testFleet)).validateScope(stack).violations,
      `${stack.node.path}/Cell/Extension`,
    );
    expect(findings).toEqual({ 'CellIsolation-CI2[tag:cell]': [`${stack.node.path}/Cell/Extension/Untagged/Resource`] });
  });

  it('puts a health: false alarm on the dashboard, not in the health rule', () => {
    const template = testCells[FARGATE_CELL].template;
    const alarm = alarmId(template, `orders-${FARGATE_CELL}-backlog`);
    expect(healthRule(template)).not.toContain(alarm);
    expect(dashboardBody(template)).toContain(`{"Fn::GetAtt":["${alarm}","Arn"]}`);
    expect(healthRule(testCells['eu-1'].template)).not.toContain('backlog');
  });
});

describe('a cellResources hook that fails', () => {
  const build = (cellResources: CellExtension) => {
    const fleet = resolveFleet({ ...validInput(), cellResources });
    new CellStack(
      cdkApp(),
      'cell',
      cellStackPropsOf(
        fleet,
        fleet.cells.find((c) => c.id === FARGATE_CELL)!,
      ),
    );
  };

  it('throws one line naming the cell, the original error as its cause', () => {
    const boom = new Error('table name clash\nsecond line');
    let thrown: unknown;
    try {
      build(() => {
        throw boom;
      });
    } catch (error) {
      thrown = error;
    }
    expect((thrown as Error).message).toBe(`cellResources failed in cell \`${FARGATE_CELL}\`: table name clash`);
    expect((thrown as Error).cause).toBe(boom);
  });

  it('refuses an alarm that is not named after the cell, naming the cell and the name to use', () => {
    expect(() =>
      build((cell) =>
        cell.addAlarm(
          new cloudwatch.Alarm(cell.scope, 'Stray', {
            alarmName: 'stray',
            metric: new cloudwatch.Metric({ namespace: 'X', metricName: 'Y' }),
            threshold: 1,
            evaluationPeriods: 1,
          }),
        ),
      ),
    ).toThrow(
      `cellResources failed in cell \`${FARGATE_CELL}\`: orders-${FARGATE_CELL}: alarm \`stray\` cannot join the cell's alarms; name it \`orders-${FARGATE_CELL}-<signal>\` (alarmName)`,
    );
  });

  it("refuses to replace one of the workload's own environment variables", () => {
    expect(() => build((cell) => cell.addWorkloadEnvironment('DB_HOST', 'elsewhere'))).toThrow(
      `cellResources failed in cell \`${FARGATE_CELL}\`: workload environment: \`DB_HOST\` is already set; choose another name`,
    );
  });

  it('refuses an async hook: constructs are built synchronously', () => {
    expect(() => build(async () => undefined)).toThrow(`cellResources returned a promise in cell \`${FARGATE_CELL}\``);
  });

  it('is refused by fleet validation when it is not a function', () => {
    const input = { ...validInput(), cellResources: 'orders-table' as unknown as CellExtension };
    expect(() => resolveFleet(input)).toThrow(FleetConfigError);
    expect(() => resolveFleet(input)).toThrow("cellResources must be a function `(cell) => { ... }`, got the string 'orders-table'");
  });
});
