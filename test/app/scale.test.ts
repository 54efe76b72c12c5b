/**
 * The scale docs/performance.md claims, proved: a generated fleet of 400 cells over four regions (100 per
 * region) with shuffle-sharded router lanes (8 per region, the heavier router layout: an NLB per lane
 * and a name per shard; docs/lanes.md) behind the pipeline, synthesized once with every check on (AwsSolutions, CellIsolation, the
 * AWS limits of lib/domain/limits on every template, nested stacks included; a pipeline stage's stack
 * within what the CloudFormation action accepts). One pipeline holds about 500 cells (the routers'
 * endpoint subnets fill at 507, the pipeline's template reaches 1 MB at about 530; docs/limits.md). About 5 to 7 minutes and 2 GB
 * on a 2-core machine; `npm run bench:synth -- --cells 400 --regions 4` measures the same synth.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { CloudAssembly } from 'aws-cdk-lib/cx-api';
import { addPipeline, cliSynthContext, readTemplates } from '../../lib/app';
import { CFN_LINT_ACKNOWLEDGED, cfnLintFindings } from '../../lib/app/audit';
import { Fleet, generateScaleFleet, mostReachedCells, resolveFleet } from '../../lib/domain/fleet';
import { assemblyFindings, LIMITS, templateFindings, TemplateUnderCheck } from '../../lib/domain/limits';
import { exampleInput } from '../support/fleet';
import { estimateFleetCost, readAssembly } from '../../lib/domain/cost';
import { costInputOf } from '../../lib/cli/cost-commands';

const CELLS = 400;
const REGIONS = 4;
const LANES = 8;

let outdir: string;
let fleet: Fleet;
let assembly: CloudAssembly;
let templates: TemplateUnderCheck[];

beforeAll(() => {
  outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'scale-'));
  const generated = generateScaleFleet(exampleInput(), CELLS, REGIONS);
  fleet = resolveFleet({
    ...generated,
    router: {
      ...generated.router,
      groups: undefined,
      lanes: { count: LANES, perTenant: 2, hostedZone: { id: 'Z0123456789ABCDEFGHIJ', name: 'lanes.example.com' } },
    },
  });
  const app = new App({ outdir, context: cliSynthContext() });
  addPipeline(app, fleet);
  // Throws on any open audit finding and on any template over an AWS limit.
  assembly = app.synth();
  // A stack of a nested assembly is a pipeline stage's: its template goes through the CloudFormation action.
  templates = assembly.stacksRecursively.flatMap((s) =>
    readTemplates(s.templateFullPath, s.hierarchicalId, { deployedByPipeline: s.assembly !== assembly }),
  );
}, 30 * 60_000);

afterAll(() => {
  if (outdir) fs.rmSync(outdir, { recursive: true, force: true });
});

describe(`${CELLS} cells over ${REGIONS} regions behind one pipeline`, () => {
  it(`is a valid fleet of ${CELLS / REGIONS} cells per region, with the quota it needs declared`, () => {
    expect(Object.keys(fleet.regions)).toHaveLength(REGIONS);
    for (const region of Object.keys(fleet.regions)) expect(fleet.cells.filter((c) => c.region === region)).toHaveLength(CELLS / REGIONS);
    expect(fleet.quotas.interfaceEndpointsPerVpc).toBe(CELLS);
  });

  it("writes every stack: each cell, each region's router stack with its nested link stacks and two group stacks, the pipeline and its support stacks", () => {
    const names = assembly.stacksRecursively.map((s) => s.stackName);
    expect(names.filter((n) => /^orders-cell-cell-\d+$/.test(n))).toHaveLength(CELLS);
    expect(names.filter((n) => /^orders-router-[a-z0-9-]+$/.test(n) && !/-groups$|-canary-group$/.test(n))).toHaveLength(REGIONS);
    expect(templates.filter((t) => /\/CellLinks\d+NestedStack/.test(t.stack))).toHaveLength(REGIONS * Math.ceil(CELLS / 100));
    expect(names).toContain('orders-pipeline');
    // Every lane's NLB, in the region's two group stacks; the router stacks have none.
    const loadBalancers = (t: TemplateUnderCheck) =>
      Object.values(t.template.Resources ?? {}).filter((r) => r.Type === 'AWS::ElasticLoadBalancingV2::LoadBalancer').length;
    const staged = templates.filter((t) => t.deployedByPipeline && !t.parent);
    expect(staged.filter((t) => t.stack.endsWith('/Groups')).reduce((n, t) => n + loadBalancers(t), 0)).toBe(REGIONS * LANES);
    expect(staged.filter((t) => t.stack.endsWith('/Router')).reduce((n, t) => n + loadBalancers(t), 0)).toBe(0);
  });

  it('passes no AWS limit in any template of any stack', () => {
    const findings = [...templates.flatMap((t) => templateFindings(t, fleet.quotas)), ...assemblyFindings(templates, fleet.quotas)];
    expect(findings).toEqual([]);
  });

  it("holds every pipeline stage's template to what the CloudFormation action accepts: the routers' per-cell parts are nested", () => {
    const staged = templates.filter((t) => t.deployedByPipeline && !t.parent);
    // Every cell, and each region's router stack and two group stacks.
    expect(staged.length).toBe(CELLS + 3 * REGIONS);
    const routers = staged.filter((t) => t.stack.endsWith('/Router'));
    expect(routers).toHaveLength(REGIONS);
    for (const t of staged) expect([t.stack, t.bytes <= LIMITS.deployActionTemplateBytes.value]).toEqual([t.stack, true]);
    // The pipeline's own template goes through cdk deploy: CloudFormation's 1 MB.
    expect(templates.find((t) => t.stack === 'orders-pipeline')!.deployedByPipeline).toBeUndefined();
  });

  it("rolls the lanes out in waves: lane 1 alone and baked on its own alarms, then the other lanes, baked on every lane's; each protected by its stack's role", () => {
    const pipeline = templates.find((t) => t.stack === 'orders-pipeline')!.template as unknown as {
      Resources: Record<
        string,
        { Type: string; Properties: { Stages?: { Name: string; Actions: { Name: string; Configuration?: Record<string, string> }[] }[] } }
      >;
    };
    const stages = Object.values(pipeline.Resources).find((r) => r.Type === 'AWS::CodePipeline::Pipeline')!.Properties.Stages!;
    const projects = Object.entries(pipeline.Resources).filter(([, r]) => r.Type === 'AWS::CodeBuild::Project');
    const routerStages = stages.filter((st) => st.Name.startsWith('routers-'));
    expect(routerStages).toHaveLength(2 * REGIONS);
    for (const stage of routerStages) {
      const bake = stage.Actions.find((a) => a.Name.startsWith('bake-'))!;
      const project = JSON.stringify(projects.find(([id]) => JSON.stringify(bake.Configuration).includes(id))![1]);
      const watched = [
        ...new Set([...project.matchAll(/router-(lane-\d+) \d{12} [a-z0-9-]+ orders-router-[a-z0-9-]+-lane-\d+-health/g)].map((m) => m[1])),
      ];
      const canary = stage.Name.endsWith('-canary-group');
      expect([stage.Name, watched.sort()]).toEqual([
        stage.Name,
        canary ? ['lane-1'] : Array.from({ length: LANES }, (_, i) => `lane-${i + 1}`).sort(),
      ]);
      expect(project).toContain(canary ? '-canary-protector' : '-lanes-protector');
    }
  });

  it('gives every router VPC one interface endpoint per cell of the fleet, within the declared quota', () => {
    const endpoints = templates
      .filter((t) => /\/CellLinks\d+NestedStack/.test(t.stack))
      .flatMap((t) => Object.values(t.template.Resources ?? {}).filter((r) => r.Type === 'AWS::EC2::VPCEndpoint'));
    expect(endpoints).toHaveLength(REGIONS * CELLS);
    expect(assemblyFindings(templates, { interfaceEndpointsPerVpc: CELLS - 1 })).toHaveLength(REGIONS);
  });

  it("prices every stack of the fleet, and counts the routers' cell endpoints both ways: every region, or home plus one failover", () => {
    const cost = estimateFleetCost(readAssembly(outdir), costInputOf(fleet));
    expect(cost.owners.filter((o) => o.kind === 'cell')).toHaveLength(CELLS);
    expect(cost.owners.filter((o) => o.kind === 'router')).toHaveLength(REGIONS);
    const reach = cost.levers.find((l) => l.id === 'router-reach')!;
    expect(reach.effects[0]).toBe(
      `every region reaches every cell: ${REGIONS * CELLS} cell endpoints, up to ${CELLS} in one router VPC, needs interfaceEndpointsPerVpc ≥ ${CELLS} (declared: ${CELLS}) (now)`,
    );
    // Home plus one failover: each cell linked from two regions; the fullest VPC holds its own cells and those it is the failover of.
    const most = mostReachedCells(fleet.cells, Object.keys(fleet.regions), 'home-and-failover').cells;
    expect(reach.effects[1]).toMatch(
      new RegExp(`^home region plus one failover region: ${2 * CELLS} cell endpoints, up to ${most} in one router VPC`),
    );
    expect(reach.alternativeUsd).toBeLessThan(reach.nowUsd / 1.9);
  });

  it(
    'passes cfn-lint, acknowledged findings only, on a template of every kind (cells are stamped alike: one per region)',
    () => {
      const oneCellPerRegion = Object.keys(fleet.regions).map((region) => fleet.cells.find((c) => c.region === region)!.id);
      const sample = [
        ...new Set(
          templates
            .filter((t) => !/cell-cell-\d+/.test(t.stack) || oneCellPerRegion.some((id) => t.stack.includes(`cell-${id}/`)))
            .map((t) => t.stack),
        ),
      ];
      const files = assembly.stacksRecursively.filter((s) => sample.includes(s.hierarchicalId)).map((s) => s.templateFullPath);
      // The nested link stacks are written beside their router stack's template.
      const nested = files.flatMap((f) =>
        fs
          .readdirSync(path.dirname(f))
          .filter((n) => n.endsWith('.nested.template.json'))
          .map((n) => path.join(path.dirname(f), n)),
      );
      const findings = cfnLintFindings([...new Set([...files, ...nested])]);
      expect(findings.filter((f) => !f.acknowledgement).map((f) => `${f.rule} ${f.stack} ${f.resource}: ${f.description}`)).toEqual([]);
      expect(CFN_LINT_ACKNOWLEDGED.length).toBeGreaterThan(0);
    },
    20 * 60_000,
  );
});
