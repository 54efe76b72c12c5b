import { App, Fn, PolicyViolation, Stack, Tags, Validations } from 'aws-cdk-lib';
import * as codepipeline from 'aws-cdk-lib/aws-codepipeline';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct, IConstruct } from 'constructs';
import { addPipeline, isolationChecksPropsOf } from '../../../lib/app';
import { Fleet } from '../../../lib/domain/fleet';
import { CellIsolationChecks, CellIsolationChecksProps, routerImageConfig } from '../../../lib/constructs/isolation';
import { CellStage, PipelineStack, RouterStage } from '../../../lib/constructs/pipeline';
import { cdkApp, smallExampleFleet } from '../../support/fleet';
import { findingsUnder } from '../../support/findings';

/**
 * The example fleet cut to three cells (a canary and a cell in each region) behind its pipeline,
 * synthesized once and checked whole; each test then breaks one stack (or the pipeline) and checks
 * that scope only: the pack's rules see one resource, its own stack and the fleet's facts, so a
 * finding in a scope is the finding the whole app reports for it. The whole example's eight cells
 * pass the pack in the example pipeline's test (test/constructs/pipeline/pipeline-stack.test.ts).
 */
describe('CellIsolationChecks on the example fleet (three of its cells)', () => {
  let fleet: Fleet;
  let app: App;
  let pipeline: PipelineStack;
  let cleanViolations: readonly PolicyViolation[];
  const cellStack = (id: string) => (pipeline.node.findChild(`cell-${id}`) as CellStage).stack;
  const check = (scope: IConstruct = app) => new CellIsolationChecks(undefined, isolationChecksPropsOf(fleet)).validateScope(scope).violations;
  /** Every router stage of the pipeline (the router and group stacks of each region). */
  const routerStages = () => pipeline.node.children.filter((c): c is RouterStage => c instanceof RouterStage);

  beforeAll(() => {
    fleet = smallExampleFleet(['canary-eu', 'eu-1', 'us-1']);
    app = cdkApp();
    pipeline = addPipeline(app, fleet, { audit: false });
    app.synth();
    cleanViolations = check();
  });

  it('has no open finding (pipeline, router stacks and every cell stack)', () => {
    expect(cleanViolations).toEqual([]);
  });

  it('checks a stack holding an IAM policy that renders to nothing (left empty once CDK moved its statements to an overflow policy)', () => {
    const victim = cellStack('eu-1');
    new iam.Policy(victim, 'EmptyPolicy');
    expect(() => check(victim)).not.toThrow();
  });

  it('fails when two cells share a key', () => {
    const victim = cellStack('us-1');
    const owner = fleet.cells.find((c) => c.id === 'eu-1')!;
    const shared = kms.Key.fromKeyArn(victim, 'SharedKey', `arn:aws:kms:${owner.region}:${owner.account}:key/0000-shared`);
    new sqs.Queue(victim, 'UserQueue', { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: shared });
    expect(findingsUnder(check(victim), `${victim.node.path}/UserQueue`)).toMatchObject({
      'CellIsolation-CI1[cell:eu-1]': [`${victim.node.path}/UserQueue/Resource`],
    });
  });

  it("fails when a cell stack imports another cell's output", () => {
    const victim = cellStack('eu-1');
    new sns.Topic(victim, 'UserTopic', { displayName: Fn.importValue('orders-cell-us-1-AlarmTopicArn') });
    expect(Object.keys(findingsUnder(check(victim), `${victim.node.path}/UserTopic`))).toEqual(
      expect.arrayContaining(['CellIsolation-CI1[import]', 'CellIsolation-CI1[cell:us-1]']),
    );
  });

  it("fails when a user's own role in a cell trusts another cell's account", () => {
    const victim = cellStack('canary-eu');
    const other = fleet.cells.find((c) => c.id === 'us-1')!;
    new iam.Role(victim, 'UserRole', { assumedBy: new iam.AccountPrincipal(other.account) });
    expect(Object.keys(findingsUnder(check(victim), `${victim.node.path}/UserRole`))).toEqual(
      expect.arrayContaining(['CellIsolation-CI1[cell:us-1]', 'CellIsolation-CI7[principal:us-1]']),
    );
  });

  it("fails when a cell's service rolls back on another cell's alarm", () => {
    const victim = cellStack('us-1');
    const service = victim.node.findAll().find((c) => c instanceof ecs.CfnService) as ecs.CfnService;
    service.addPropertyOverride('DeploymentConfiguration.Alarms.AlarmNames', ['orders-eu-1-health']);
    expect(findingsUnder(check(victim), service.node.path)).toMatchObject({ 'CellIsolation-CI4[alarm:orders-eu-1-health]': [service.node.path] });
  });

  it('fails when a wave watches a fleet-wide alarm', () => {
    const cfn = pipeline.pipeline.pipeline.node.defaultChild as codepipeline.CfnPipeline;
    const stages = pipeline.pipeline.pipeline.stages.map((s) => s.stageName);
    // A regular (non-canary) wave: the cut's one-cell waves are stages named after their cell.
    const wave = [...pipeline.stages.keys()].at(-1)!;
    cfn.addPropertyOverride(`Stages.${stages.indexOf(wave)}.OnSuccess`, {
      Conditions: [
        {
          Result: 'ROLLBACK',
          Rules: [
            {
              Name: 'fleet',
              RuleTypeId: { Category: 'Rule', Owner: 'AWS', Provider: 'CloudWatchAlarm', Version: '1' },
              Configuration: { AlarmName: 'orders-fleet-5xx' },
            },
          ],
        },
      ],
    });
    expect(findingsUnder(check(pipeline.pipeline.pipeline), cfn.node.path)).toEqual({
      [`CellIsolation-CI5[${wave}:orders-fleet-5xx]`]: [cfn.node.path],
    });
  });

  it('fails on a router configuration with retries or redispatch (on every router task)', () => {
    const broken = routerImageConfig(fleet).replace('  retries 0\n', '  retries 3\n  option redispatch\n');
    const pack = new CellIsolationChecks(undefined, { ...isolationChecksPropsOf(fleet), routerConfig: broken });
    const tasks = new Map<string, string[]>();
    for (const v of routerStages().flatMap((stage) => pack.validateScope(stage).violations)) {
      if (/^CellIsolation-CI6\[(retries|redispatch)\]$/.test(v.ruleName))
        tasks.set(v.ruleName, [...(tasks.get(v.ruleName) ?? []), ...v.violatingResources.map((r) => r.constructPath!)]);
    }
    expect([...tasks.keys()].sort()).toEqual(['CellIsolation-CI6[redispatch]', 'CellIsolation-CI6[retries]']);
    // Two router groups in each of the two regions.
    expect(new Set(tasks.get('CellIsolation-CI6[retries]')).size).toBe(4);
    expect(new Set(tasks.get('CellIsolation-CI6[redispatch]')).size).toBe(4);
  });

  it('audits the configuration each router task rendered into its image, not one made again from the fleet', () => {
    /** A router group whose rendered configuration retries (the way a routing change could make it). */
    class Rendered extends Construct {
      public readonly haproxyConfig = routerImageConfig(fleet).replace('  retries 0\n', '  retries 2\n');
    }
    const own = new App();
    const stack = new Stack(own, 'OwnRouter', { env: { account: fleet.accounts.router, region: 'eu-west-1' } });
    const group = new Rendered(stack, 'Group');
    new ecs.FargateTaskDefinition(group, 'Task').addContainer('haproxy', {
      image: ecs.ContainerImage.fromRegistry('haproxy:2.8'),
      memoryLimitMiB: 512,
    });
    const rendered = new CellIsolationChecks(undefined, isolationChecksPropsOf(fleet))
      .validateScope(own)
      .violations.filter((v) => v.ruleName.startsWith('CellIsolation-CI6'));
    expect(rendered.map((v) => [v.ruleName, v.violatingResources.map((r) => r.constructPath)])).toEqual([
      ['CellIsolation-CI6[retries]', ['OwnRouter/Group/Task/Resource']],
    ]);
    // The real router groups render a configuration that passes.
    const stages = routerStages();
    expect(stages.flatMap((s) => s.stacks.flatMap((stack) => stack.node.findAll().filter((c) => c instanceof ecs.TaskDefinition)))).not.toHaveLength(
      0,
    );
    expect(stages.flatMap((stage) => check(stage)).filter((v) => v.ruleName.startsWith('CellIsolation-CI6'))).toEqual([]);
  });

  it('reports a router task that rendered no configuration of its own when the pack was given none to fall back on', () => {
    const own = new App();
    const stack = new Stack(own, 'OwnRouter', { env: { account: fleet.accounts.router, region: 'eu-west-1' } });
    new ecs.FargateTaskDefinition(stack, 'Task').addContainer('haproxy', {
      image: ecs.ContainerImage.fromRegistry('haproxy:2.8'),
      memoryLimitMiB: 512,
    });
    const ci6 = (props: CellIsolationChecksProps) =>
      new CellIsolationChecks(undefined, props)
        .validateScope(own)
        .violations.filter((v) => v.ruleName.startsWith('CellIsolation-CI6'))
        .map((v) => [v.ruleName, v.violatingResources.map((r) => r.constructPath)]);
    expect(ci6({ facts: isolationChecksPropsOf(fleet).facts })).toEqual([['CellIsolation-CI6[no-config]', ['OwnRouter/Task/Resource']]]);
    expect(ci6(isolationChecksPropsOf(fleet))).toEqual([]);
  });

  it("is a validation plugin: a user's own stack in a cell account fails synth on an open finding, not on an acknowledged one", () => {
    const userApp = (acknowledge: boolean) => {
      const small = cdkApp();
      const stack = new Stack(small, 'UserCellStack', { env: { account: fleet.cells[0].account, region: fleet.cells[0].region } });
      Tags.of(stack).add('cell', fleet.cells[0].id);
      Tags.of(stack).add('app', fleet.app);
      const queue = new sqs.Queue(stack, 'Queue', { queueName: `orders-${fleet.cells[1].id}-jobs`, enforceSSL: true });
      if (acknowledge) Validations.of(queue).acknowledge({ id: `CellIsolation-CI1[cell:${fleet.cells[1].id}]`, reason: 'test: a name only' });
      Validations.of(small).addPlugins(new CellIsolationChecks(small, isolationChecksPropsOf(fleet)));
      return small;
    };
    expect(() => userApp(false).synth()).toThrow(new RegExp(`CellIsolation-CI1\\[cell:${fleet.cells[1].id}\\]`));
    expect(() => userApp(true).synth()).not.toThrow();
  });
});
