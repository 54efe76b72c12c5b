import { Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import { IConstruct } from 'constructs';
import { addFleet, FleetStacks } from '../../lib/app';
import { Fleet } from '../../lib/domain/fleet';
import { cdkApp, smallExampleFleet } from '../support/fleet';

function acknowledgedOn(root: IConstruct): { path: string; ids: string[]; construct: IConstruct }[] {
  return root.node
    .findAll()
    .flatMap((construct) =>
      construct.node.metadata
        .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .map((m) => ({ path: construct.node.path, ids: Object.keys(m.data as object), construct })),
    );
}

/**
 * The example fleet cut to four cells: a canary and a regular cell in each region, both compute and
 * database shapes (canary-eu: Fargate and Aurora; us-4: EC2 and RDS). What addFleet stamps is the
 * same per cell; the whole example's eight cells pass the AwsSolutions gate and the cell-isolation
 * pack in the example pipeline's tests (test/constructs/isolation/pack.test.ts).
 */
describe('addFleet on the example fleet (four of its cells)', () => {
  let fleet: Fleet;
  let stacks: FleetStacks;
  let templates: Map<string, string>;
  beforeAll(() => {
    fleet = smallExampleFleet(['canary-eu', 'eu-1', 'us-1', 'us-4']);
    const app = cdkApp();
    stacks = addFleet(app, fleet, { audit: false });
    templates = new Map(stacks.cells.map((s, i) => [fleet.cells[i].id, JSON.stringify(Template.fromStack(s).toJSON())]));
  });

  it('stamps one stack per cell, in its account and region', () => {
    expect(stacks.cells.map((s) => s.stackName)).toEqual(fleet.cells.map((c) => `orders-cell-${c.id}`));
    expect(stacks.cells.map((s) => `${s.account}/${s.region}`)).toEqual(fleet.cells.map((c) => `${c.account}/${c.region}`));
  });

  it('stamps one router stack per region, in the router account', () => {
    expect(stacks.routers.map((s) => `${s.stackName} ${s.account}/${s.region}`)).toEqual([
      'orders-router-eu-west-1 222222222222/eu-west-1',
      'orders-router-us-east-1 222222222222/us-east-1',
    ]);
    // Each region's groups in two stacks after it: the canary group, then the others (`cdk deploy --all` order).
    expect(
      stacks.routerGroups.map((s) => `${s.stackName} ${s.account}/${s.region} after ${s.dependencies.map((d) => d.stackName).join(',')}`),
    ).toEqual([
      'orders-router-eu-west-1-canary-group 222222222222/eu-west-1 after orders-router-eu-west-1',
      'orders-router-eu-west-1-groups 222222222222/eu-west-1 after orders-router-eu-west-1-canary-group',
      'orders-router-us-east-1-canary-group 222222222222/us-east-1 after orders-router-us-east-1',
      'orders-router-us-east-1-groups 222222222222/us-east-1 after orders-router-us-east-1-canary-group',
    ]);
  });

  it('has zero unacknowledged AwsSolutions findings in every stack', () => {
    for (const stack of [...stacks.cells, ...stacks.routers, ...stacks.routerGroups]) {
      const report = new AwsSolutionsChecks().validateScope(stack);
      expect([stack.stackName, report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`)]).toEqual([
        stack.stackName,
        [],
      ]);
    }
  });

  it('acknowledges findings only on resources, never on a stack or a whole cell, each with a reason', () => {
    const acks = stacks.cells.flatMap((s) => acknowledgedOn(s));
    expect(acks.length).toBeGreaterThan(0);
    for (const ack of acks) {
      expect(Stack.isStack(ack.construct)).toBe(false);
      // Inside the cell's constructs, or on the Lambda of a stack-wide CDK provider (the default
      // security group's), which CDK places directly under the stack.
      if (!/\/Custom::[A-Za-z]+Provider\/Handler$/.test(ack.path)) expect(ack.path.split('/').length).toBeGreaterThanOrEqual(4);
      for (const reason of Object.values(
        ack.construct.node.metadata.find((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)!.data as Record<string, string>,
      )) {
        expect(reason.length).toBeGreaterThan(40);
      }
    }
  });

  it('keeps cells isolated: no imports, no cross-stack references, no trace of another cell', () => {
    for (const [id, json] of templates) {
      expect(json).not.toContain('Fn::ImportValue');
      for (const other of fleet.cells.filter((c) => c.id !== id)) {
        expect([id, json.includes(other.account)]).toEqual([id, false]);
        expect([id, json.includes(`orders-${other.id}`)]).toEqual([id, false]);
        expect([id, json.includes(`"Value":"${other.id}"`)]).toEqual([id, false]);
      }
    }
    for (const stack of stacks.cells) expect(stack.dependencies).toEqual([]);
  });

  it('gives every cell a distinct VPC CIDR', () => {
    const cidrs = [...templates.values()]
      .map((json) => JSON.parse(json).Resources as Record<string, { Type: string; Properties: { CidrBlock?: string } }>)
      .map((resources) => Object.values(resources).find((r) => r.Type === 'AWS::EC2::VPC')!.Properties.CidrBlock);
    expect(new Set(cidrs).size).toBe(fleet.cells.length);
    expect(cidrs).toEqual(fleet.cells.map((c) => c.cidr));
  });

  it('names every alarm and dashboard with its own cell id', () => {
    for (const [id, json] of templates) {
      const resources = Object.values(JSON.parse(json).Resources as Record<string, { Type: string; Properties: Record<string, string> }>);
      const names = resources.flatMap((r) => [r.Properties?.AlarmName, r.Properties?.DashboardName].filter((n) => n !== undefined));
      // Eight metric alarms, two capacity alarms, two deployment-gate variants, the composite, the
      // dashboard, and the alarm of the example fleet's own table (cellResources).
      expect(names.length).toBe(15);
      const topics = resources.filter((r) => r.Type === 'AWS::SNS::Topic').map((r) => r.Properties.TopicName);
      expect(topics).toEqual([`orders-${id}-alarms`]);
      for (const name of names) expect(name.startsWith(`orders-${id}-`) || name === `orders-${id}`).toBe(true);
    }
  });
});

describe('addFleet audit', () => {
  it('fails synthesis on an unacknowledged finding', () => {
    const app = cdkApp();
    // One cell is enough: the gate is the app's, over every stack addFleet stamps.
    const { cells } = addFleet(app, smallExampleFleet(['eu-1']));
    new s3.Bucket(cells[0], 'Careless');
    expect(() => app.synth()).toThrow(/cell-eu-1\/Careless\/Resource[\s\S]*'AwsSolutions::AwsSolutions-S1'/);
  });
});
