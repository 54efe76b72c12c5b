import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { BUNDLING_STACKS } from 'aws-cdk-lib/cx-api';
import { CellStackProps } from '../../../lib/constructs/cell';
import { initialMapping } from '../../../lib/domain/mapping';
import { pipelinePropsProblems, PipelineStack, PipelineStackProps, RouterStageStacks } from '../../../lib/constructs/pipeline';
import { cdkApp } from '../../support/fleet';

/*
 * A PipelineStack from props written by hand: two cells in one region, no fleet file. The
 * example-fleet tests (pipeline-stack.test.ts) check the wiring through lib/app's adapter.
 */

const APP = 'shop';
const TOOLING = '111111111111';
const ROUTER = '210987654321';
const REGION = 'eu-west-1';
const ZONES = ['euw1-az1', 'euw1-az2', 'euw1-az3'];
const CELLS = [
  { id: 'blue-1', account: '123456789012', cidr: '10.20.0.0/20' },
  { id: 'blue-2', account: '123456789013', cidr: '10.20.16.0/20' },
];

function cellStack(cell: (typeof CELLS)[number]): CellStackProps {
  return {
    env: { account: cell.account, region: REGION },
    toolingAccount: TOOLING,
    cell: {
      app: APP,
      cellId: cell.id,
      network: { cidr: cell.cidr, availabilityZones: ZONES },
      compute: { cpu: 512, memoryMiB: 1024, capacity: { min: 1, desired: 2, max: 4 } },
      workload: { image: ecs.ContainerImage.fromRegistry('public.ecr.aws/nginx/nginx:latest'), containerPort: 8080, healthCheckPath: '/ready' },
      database: { engine: 'rds-postgresql', instanceClass: 't4g.medium' },
      routing: { routerAccount: ROUTER },
      limits: { requestsPerSecond: 200, tenantRequestsPer5Min: 3000 },
    },
  };
}

function routerStacks(): RouterStageStacks {
  const cells = CELLS.map((c) => ({ id: c.id, region: REGION, account: c.account, port: 80 }));
  const seed = initialMapping(
    cells.map((c, i) => ({ id: c.id, state: 'active' as const, canary: i === 0, endpoint: `http://${c.id}.shop.cells.internal` })),
    16384,
    { now: '1970-01-01T00:00:00.000Z' },
  );
  const groups = {
    app: APP,
    region: REGION,
    account: ROUTER,
    availabilityZones: ZONES,
    stalenessMinutes: 10,
    routing: {
      partitionKey: { source: 'header' as const, name: 'x-tenant-id' },
      bucketCount: 16384,
      slots: 8,
      zones: 3,
      cellMaxConn: 200,
      cellHealthCheckPath: '/ready',
    },
  };
  return {
    router: {
      app: APP,
      region: REGION,
      account: ROUTER,
      toolingAccount: TOOLING,
      availabilityZones: ZONES,
      cidr: '10.100.0.0/16',
      groups: [
        { name: 'canary', weight: 1 },
        { name: 'main', weight: 9 },
      ],
      cells,
      cellZoneName: 'shop.cells.internal',
      mappingBucketPrefix: 'shop-mappings',
      keptMappingVersions: 10,
      seedMapping: seed,
      homeOf: [REGION],
    },
    canary: { ...groups, part: 'canary', groups: [{ name: 'canary', tasks: 2 }] },
    rest: { ...groups, part: 'rest', groups: [{ name: 'main', tasks: 3 }] },
  };
}

function props(overrides: Partial<PipelineStackProps> = {}): PipelineStackProps {
  return {
    app: APP,
    toolingAccount: TOOLING,
    region: REGION,
    source: { kind: 's3', bucketName: 'shop-source', objectKey: 'shop.zip' },
    plan: {
      waves: [
        { name: 'wave-1-canary', kind: 'canary', cells: ['blue-1'], bakeSeconds: 600 },
        { name: 'wave-2-single', kind: 'single', cells: ['blue-2'], bakeSeconds: 1800 },
      ],
      routerWaves: [
        { name: `routers-${REGION}-canary-group`, region: REGION, part: 'canary', bakeSeconds: 900 },
        { name: `routers-${REGION}`, region: REGION, part: 'rest', bakeSeconds: 1200 },
      ],
    },
    cellStacks: Object.fromEntries(CELLS.map((c) => [c.id, cellStack(c)])),
    routers: { [REGION]: routerStacks() },
    manualApproval: true,
    deploymentWindow: { cron: '* * 9-15 ? * MON-FRI *', timeZone: 'Europe/Dublin' },
    ...overrides,
  };
}

interface CfnStage {
  Name: string;
  Actions: { Name: string; ActionTypeId: { Category: string; Provider: string }; Configuration?: Record<string, string>; RunOrder?: number }[];
  OnFailure?: unknown;
  BeforeEntry?: { Conditions: { Rules: { Configuration: Record<string, string> }[] }[] };
}

describe('PipelineStack from its own props (two cells, one region, no fleet file)', () => {
  let stack: PipelineStack;
  let template: Template;
  let stages: CfnStage[];
  /** The commands of the CodeBuild project behind `action`. */
  const commandsOf = (action: CfnStage['Actions'][number]): string => {
    const [, project] = Object.entries(template.findResources('AWS::CodeBuild::Project')).find(([id]) =>
      JSON.stringify(action.Configuration).includes(id),
    )!;
    return JSON.parse(project.Properties.Source.BuildSpec).phases.build.commands.join('\n');
  };
  const stage = (name: string) => stages.find((s) => s.Name === name)!;
  beforeAll(() => {
    stack = new PipelineStack(cdkApp(), 'shop-pipeline', props());
    template = Template.fromStack(stack);
    stages = Object.values(template.findResources('AWS::CodePipeline::Pipeline'))[0].Properties.Stages;
  });

  it('lives in the tooling account and region, named after the app', () => {
    expect([stack.account, stack.region]).toEqual([TOOLING, REGION]);
    template.hasResourceProperties('AWS::CodePipeline::Pipeline', { Name: 'shop-cells' });
  });

  it("runs the waves in plan order, the approval before the first non-canary wave, then the region's two router stages", () => {
    expect(stages.map((s) => s.Name)).toEqual([
      'Source',
      'Build',
      'UpdatePipeline',
      'Assets',
      'cell-blue-1',
      'approve-wave-2-single',
      'cell-blue-2',
      'routers-eu-west-1-canary-group',
      'routers-eu-west-1',
    ]);
    expect([...stack.stages.entries()]).toEqual([
      ['cell-blue-1', ['blue-1']],
      ['cell-blue-2', ['blue-2']],
    ]);
    expect(stack.approvalStage).toBe('approve-wave-2-single');
    expect(stack.routerStages).toEqual(['routers-eu-west-1-canary-group', 'routers-eu-west-1']);
    const deployed = (name: string) =>
      stage(name)
        .Actions.filter((a) => a.ActionTypeId.Provider === 'CloudFormation')
        .map((a) => a.Configuration!.StackName);
    expect(deployed('cell-blue-1')).toEqual(['shop-cell-blue-1']);
    expect(deployed('cell-blue-2')).toEqual(['shop-cell-blue-2']);
    expect(deployed('routers-eu-west-1-canary-group')).toEqual(['shop-router-eu-west-1', 'shop-router-eu-west-1-canary-group']);
    expect(deployed('routers-eu-west-1')).toEqual(['shop-router-eu-west-1-groups']);
  });

  it("bakes a wave after its deploys, on its own cell's health alarm through the cell's bake-watcher role, for the wave's bake time", () => {
    const wave = stage('cell-blue-2');
    const bake = wave.Actions.find((a) => a.Name.startsWith('bake-'))!;
    const deploy = wave.Actions.find((a) => a.ActionTypeId.Provider === 'CloudFormation')!;
    expect(bake.RunOrder).toBeGreaterThan(deploy.RunOrder ?? 1);
    const commands = commandsOf(bake);
    expect(commands).toContain("bake_targets=('blue-2 123456789013 eu-west-1 shop-blue-2-health shop-blue-2-bake-watcher')");
    expect(commands).toContain('bake_seconds=1800\n');
    expect(commands).not.toContain('blue-1');
  });

  it("bakes the region's other groups on every group's alarms in the router account", () => {
    const commands = commandsOf(stage('routers-eu-west-1').Actions.find((a) => a.Name.startsWith('bake-'))!);
    const watched = [...commands.matchAll(/'router-([a-z]+) (\d{12}) eu-west-1 (\S+) (\S+)'/g)].map((m) => m.slice(1));
    expect(watched).toEqual([
      ['canary', ROUTER, 'shop-router-eu-west-1-canary-health', 'shop-router-eu-west-1-bake-watcher'],
      ['main', ROUTER, 'shop-router-eu-west-1-main-health', 'shop-router-eu-west-1-bake-watcher'],
    ]);
    expect(commands).toContain('bake_seconds=1200\n');
  });

  it('rolls every deploying stage back on failure and starts it only inside the deployment window', () => {
    for (const s of stages.slice(4).filter((st) => st.Name !== stack.approvalStage)) {
      expect([s.Name, s.OnFailure]).toEqual([s.Name, { Result: 'ROLLBACK' }]);
      expect([s.Name, s.BeforeEntry!.Conditions[0].Rules[0].Configuration]).toEqual([
        s.Name,
        { Cron: '* * 9-15 ? * MON-FRI *', TimeZone: 'Europe/Dublin' },
      ]);
    }
  });

  it('without an organization id, lets the pipeline assume bootstrap roles in the given accounts only', () => {
    const conditions = Object.values(template.findResources('AWS::IAM::Policy'))
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((st: { Resource: unknown }) => JSON.stringify(st.Resource).includes('cdk-hnb659fds-deploy-role-*'))
      .map((st: { Condition: { StringEquals: Record<string, string[]> } }) => st.Condition.StringEquals['aws:ResourceAccount']);
    const given = [...CELLS.map((c) => c.account), ROUTER].sort();
    // The pipeline role's statement names every account deployed to; a stage step's, its stage's only.
    expect(conditions.map((accounts) => [accounts].flat().sort())).toContainEqual(given);
    expect([...new Set(conditions.flatMap((accounts) => [accounts].flat()))].sort()).toEqual(given);
  });
});

describe('PipelineStack in an app without cdk.json (its feature flags at their defaults)', () => {
  it('builds: every stage stack passes the cdk-nag gate with the ARNs CDK writes there (the partition as a pseudo parameter)', () => {
    const stack = new PipelineStack(new App({ context: { [BUNDLING_STACKS]: [] } }), 'shop-pipeline', props());
    expect(stack.routerStages).toHaveLength(2);
  });
});

describe('pipelinePropsProblems', () => {
  it('accepts the hand-written props', () => {
    expect(pipelinePropsProblems(props())).toEqual([]);
  });

  it('names every problem: a wave cell without props, a cell in two waves, a cell no wave deploys, a region without routers, a bad window', () => {
    const base = props();
    const problems = pipelinePropsProblems({
      ...base,
      plan: {
        waves: [
          { ...base.plan.waves[0], cells: ['blue-1', 'green-1'] },
          { ...base.plan.waves[1], cells: ['blue-1'] },
        ],
        routerWaves: [...base.plan.routerWaves, { name: 'routers-us-east-1', region: 'us-east-1', part: 'rest', bakeSeconds: 0 }],
      },
      deploymentWindow: { cron: 'cron(0 8 * * ? *)' },
    });
    expect(problems).toEqual([
      "cellStacks has no props for cell `green-1` of `wave-1-canary`; give every cell's (cellStackPropsOf)",
      'plan.waves: cell `blue-1` is in `wave-1-canary` and `wave-2-single`; put each cell in one wave',
      'cellStacks has cell `blue-2` that no wave of plan.waves deploys; add it to a wave or drop its props',
      'routers has no stacks for us-east-1, a region of plan.routerWaves; give one entry per region (pipelineRoutersOf)',
      expect.stringMatching(/^deploymentWindow\.cron: .*DeploymentWindow expression/),
    ]);
  });

  it('refuses props keyed by the wrong cell id, before building anything', () => {
    const base = props();
    const swapped = { ...base, cellStacks: { 'blue-1': base.cellStacks['blue-2'], 'blue-2': base.cellStacks['blue-1'] } };
    expect(() => new PipelineStack(cdkApp(), 'shop-pipeline', swapped)).toThrow(
      /^PipelineStack shop-pipeline: cellStacks\[`blue-1`\] holds cell `blue-2`; key each cell's props by its own id/,
    );
  });
});
