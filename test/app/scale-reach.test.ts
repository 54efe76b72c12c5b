/**
 * router.reach at the largest fleet we claim: 400 cells over four regions, each cell linked only from
 * its own region and its failover region. Only the router stacks are synthesized (the cells' stacks
 * do not change with reach; test/app/scale.test.ts synthesizes them all), with every check on: the
 * AWS limits of lib/domain/limits against the quota the fleet declares, AwsSolutions and
 * CellIsolation. The declared interface-endpoint quota is the most cells one region links (about
 * half of 400), not the 400 every-region reach needs.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { addAuditGate, addLimitChecks, cliSynthContext, readTemplates, routerGroupsStackPropsOf, routerStackPropsOf } from '../../lib/app';
import { RouterGroupsStack, RouterStack } from '../../lib/constructs/router';
import { Fleet, generateScaleFleet, mostReachedCells, resolveFleet } from '../../lib/domain/fleet';
import { assemblyFindings, TemplateUnderCheck } from '../../lib/domain/limits';
import { estimateFleetCost, readAssembly } from '../../lib/domain/cost';
import { costInputOf } from '../../lib/cli/cost-commands';
import { exampleInput } from '../support/fleet';

const CELLS = 400;
const REGIONS = 4;

let outdir: string;
let fleet: Fleet;
let most: { region: string; cells: number };
let templates: TemplateUnderCheck[];

beforeAll(() => {
  outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'scale-reach-'));
  const generated = generateScaleFleet(exampleInput(), CELLS, REGIONS);
  const regions = Object.keys(generated.regions);
  const reach = {
    ...generated,
    router: {
      ...generated.router,
      reach: 'home-and-failover' as const,
      regionUrls: Object.fromEntries(regions.map((r) => [r, `https://${r}.api.example.com`])),
    },
  };
  // The quota it needs: the most cells one router region links.
  most = mostReachedCells(resolveFleet(reach).cells, regions, 'home-and-failover');
  fleet = resolveFleet({ ...reach, quotas: { interfaceEndpointsPerVpc: most.cells } });
  const app = new App({ outdir, context: cliSynthContext() });
  for (const region of regions) {
    const router = new RouterStack(app, `router-${region}`, routerStackPropsOf(fleet, region));
    const canary = new RouterGroupsStack(app, `router-${region}-canary-group`, routerGroupsStackPropsOf(fleet, region, 'canary'));
    const rest = new RouterGroupsStack(app, `router-${region}-groups`, routerGroupsStackPropsOf(fleet, region, 'rest'));
    canary.addStackDependency(router);
    rest.addStackDependency(canary);
  }
  addLimitChecks(app, fleet.quotas);
  addAuditGate(app, fleet);
  // Throws on any open audit finding and on any template over an AWS limit at the declared quota.
  const assembly = app.synth();
  templates = assembly.stacks.flatMap((s) => readTemplates(s.templateFullPath, s.hierarchicalId));
}, 20 * 60_000);

afterAll(() => {
  if (outdir) fs.rmSync(outdir, { recursive: true, force: true });
});

describe(`${CELLS} cells over ${REGIONS} regions with router.reach home-and-failover`, () => {
  it('links each cell from two regions: 800 endpoints, at most the declared quota in one router VPC, about half of every-region reach', () => {
    const perStack = new Map<string, number>();
    for (const t of templates.filter((t) => /\/CellLinks\d+NestedStack/.test(t.stack))) {
      const n = Object.values(t.template.Resources ?? {}).filter((r) => r.Type === 'AWS::EC2::VPCEndpoint').length;
      const region = /router-([a-z0-9-]+?)\//.exec(t.stack)![1];
      perStack.set(region, (perStack.get(region) ?? 0) + n);
    }
    expect([...perStack.values()].reduce((a, b) => a + b, 0)).toBe(2 * CELLS);
    expect(Math.max(...perStack.values())).toBe(most.cells);
    expect(most.cells).toBeLessThan(CELLS * 0.6);
  });

  it("passes the limit checks at the smaller declared quota (no raise to 400), and fails them one below it in the fullest region's VPC", () => {
    expect(fleet.quotas.interfaceEndpointsPerVpc).toBe(most.cells);
    expect(assemblyFindings(templates, fleet.quotas)).toEqual([]);
    const below = assemblyFindings(templates, { interfaceEndpointsPerVpc: most.cells - 1 });
    expect(below.length).toBeGreaterThanOrEqual(1);
    expect(below.every((f) => f.limit === 'interfaceEndpointsPerVpc')).toBe(true);
    expect(below.some((f) => f.stack.includes(most.region))).toBe(true);
  });

  it('costs the endpoints both ways: home plus failover now, every region as the alternative at twice the endpoints', () => {
    const cost = estimateFleetCost(readAssembly(outdir), costInputOf(fleet));
    const reach = cost.levers.find((l) => l.id === 'router-reach')!;
    expect(reach.setting).toMatch(/^router\.reach: 'home-and-failover'/);
    expect(reach.effects[0]).toMatch(
      new RegExp(
        `^every region reaches every cell: ${REGIONS * CELLS} cell endpoints, up to \\d+ in one router VPC, needs interfaceEndpointsPerVpc ≥ \\d+ \\(declared: ${most.cells}\\)$`,
      ),
    );
    expect(reach.effects[1]).toMatch(
      new RegExp(`^home region plus one failover region: ${2 * CELLS} cell endpoints, up to \\d+ in one router VPC, .*\\(now\\)$`),
    );
    expect(reach.alternativeUsd).toBeGreaterThan(reach.nowUsd * 1.6);
  });
});
