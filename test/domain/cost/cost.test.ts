/**
 * What the fleet costs (lib/domain/cost, `cellctl cost`): the example fleet synthesized once, as the
 * pipeline deploys it, read back from its written assembly and priced from the repository's table.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { addPipeline, cliSynthContext } from '../../../lib/app';
import {
  AssemblyStack,
  CATALOG,
  estimateFleetCost,
  FleetCost,
  MissingPriceError,
  priceTableProblems,
  PRICE_TABLE,
  Prices,
  readAssembly,
  ruleOf,
  UnpricedTypeError,
} from '../../../lib/domain/cost';
import { costInputOf, shapeCostsOf } from '../../../lib/cli/cost-commands';
import { planText } from '../../../lib/cli/capacity-commands';
import { Fleet } from '../../../lib/domain/fleet';
import { cellctl } from '../../support/cli';
import { exampleFleet, REPO_ROOT } from '../../support/fleet';

let outdir: string;
let fleet: Fleet;
let stacks: AssemblyStack[];
let cost: FleetCost;

beforeAll(() => {
  outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'cost-'));
  fleet = exampleFleet();
  const app = new App({ outdir, context: cliSynthContext() });
  addPipeline(app, fleet);
  app.synth();
  stacks = readAssembly(outdir);
  cost = estimateFleetCost(stacks, costInputOf(fleet));
}, 10 * 60_000);

afterAll(() => {
  if (outdir) fs.rmSync(outdir, { recursive: true, force: true });
});

const price = (region: string, id: string) => PRICE_TABLE.prices[region][id].usd;
const H = PRICE_TABLE.hoursPerMonth;
const owner = (kind: string, id: string) => cost.owners.find((o) => o.kind === kind && o.id === id)!;
const component = (kind: string, id: string, name: string) => owner(kind, id).components.find((c) => c.component === name);

describe('the price table', () => {
  it('is valid, and every price names its https source and the day it was read', () => {
    expect(priceTableProblems(PRICE_TABLE)).toEqual([]);
    for (const prices of Object.values(PRICE_TABLE.prices)) {
      for (const p of Object.values(prices)) {
        expect(p.source).toMatch(/^https:\/\/aws\.amazon\.com\//);
        expect(p.asOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      }
    }
  });

  it('prices the same ids in every region it holds', () => {
    const ids = Object.values(PRICE_TABLE.prices).map((p) => Object.keys(p).sort());
    for (const set of ids) expect(set).toEqual(ids[0]);
  });

  it('refuses a bad table, naming each entry and what to write', () => {
    const bad = {
      schemaVersion: 2,
      currency: 'EUR',
      hoursPerMonth: 24,
      prices: { 'us-east-1': { 'nat-gateway-hour': { usd: -1, unit: '', source: 'aws', asOf: 'today', method: 'guess' } } },
    };
    const problems = priceTableProblems(bad);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/schemaVersion is 2/),
        expect.stringMatching(/currency is EUR/),
        expect.stringMatching(/hoursPerMonth/),
        expect.stringMatching(/nat-gateway-hour\.usd/),
        expect.stringMatching(/nat-gateway-hour\.source must be the https address/),
        expect.stringMatching(/nat-gateway-hour\.asOf must be the day it was read, YYYY-MM-DD/),
        expect.stringMatching(/nat-gateway-hour\.method/),
      ]),
    );
  });
});

describe('the example fleet, priced from what cdk synth wrote', () => {
  it('knows every resource type of every cell, router and tooling stack: a new billable type fails here until it is priced', () => {
    const types = new Set(stacks.flatMap((s) => s.templates.flatMap((t) => Object.values(t.template.Resources ?? {}).map((r) => r.Type))));
    const unknown = [...types].filter((t) => !ruleOf(t));
    expect(unknown).toEqual([]);
    // The estimate read every stack: eight cells, two router regions, the tooling account.
    expect(
      cost.owners
        .filter((o) => o.kind === 'cell')
        .map((o) => o.id)
        .sort(),
    ).toEqual(fleet.cells.map((c) => c.id).sort());
    expect(
      cost.owners
        .filter((o) => o.kind === 'router')
        .map((o) => o.id)
        .sort(),
    ).toEqual(['eu-west-1', 'us-east-1']);
    expect(cost.owners.filter((o) => o.kind === 'other')).toEqual([]);
  });

  it('fails naming the type, the resource and the fix when a stack gains a type the catalog does not price', () => {
    const cell = stacks.find((s) => s.stackName === 'orders-cell-us-1')!;
    const template = {
      ...cell.templates[0].template,
      Resources: { ...cell.templates[0].template.Resources, Cache: { Type: 'AWS::ElastiCache::CacheCluster', Properties: {} } },
    };
    const changed = stacks.map((s) => (s === cell ? { ...s, templates: [{ ...s.templates[0], template }, ...s.templates.slice(1)] } : s));
    expect(() => estimateFleetCost(changed, costInputOf(fleet))).toThrow(UnpricedTypeError);
    expect(() => estimateFleetCost(changed, costInputOf(fleet))).toThrow(
      /AWS::ElastiCache::CacheCluster \(1: orders-cell-us-1\/Cache\)[\s\S]*lib\/domain\/cost\/catalog\.ts/,
    );
  });

  it('fails naming the region, the price id and how to add it when the table lacks a price a resource needs', () => {
    const table = { ...PRICE_TABLE, prices: { ...PRICE_TABLE.prices, 'us-east-1': { ...PRICE_TABLE.prices['us-east-1'] } } };
    delete (table.prices['us-east-1'] as Record<string, unknown>)['nat-gateway-hour'];
    const run = () => estimateFleetCost(stacks, { ...costInputOf(fleet), prices: new Prices(table) });
    expect(run).toThrow(MissingPriceError);
    expect(run).toThrow(/no price for nat-gateway-hour in us-east-1 \(NAT gateways, orders-cell-us-\d.*npm run prices:refresh -- --region us-east-1/);
  });

  it('counts a standard cell as the templates create it, each figure from the table', () => {
    expect(component('cell', 'us-1', 'NAT gateways')).toMatchObject({ resources: 3 });
    expect(component('cell', 'us-1', 'NAT gateways')!.monthlyUsd).toBeCloseTo(3 * H * price('us-east-1', 'nat-gateway-hour'));
    // Aurora: a writer and a reader of the shape's class.
    expect(component('cell', 'us-1', 'Database instance (aurora-postgresql db.r6g.large)')!.monthlyUsd).toBeCloseTo(
      2 * H * price('us-east-1', 'rds-hour:aurora-postgresql:db.r6g.large'),
    );
    // Fargate: the desired 3 tasks of 1 vCPU and 2 GB.
    expect(component('cell', 'us-1', 'Fargate tasks (vCPU)')!.monthlyUsd).toBeCloseTo(3 * 1 * H * price('us-east-1', 'fargate-vcpu-hour'));
    expect(component('cell', 'us-1', 'Fargate tasks (memory)')!.monthlyUsd).toBeCloseTo(3 * 2 * H * price('us-east-1', 'fargate-gb-hour'));
    // The ALB and the PrivateLink NLB, both internal: no public address of their own.
    expect(component('cell', 'us-1', 'Application Load Balancer')!.monthlyUsd).toBeCloseTo(H * price('us-east-1', 'alb-hour'));
    expect(component('cell', 'us-1', 'Network Load Balancer')!.monthlyUsd).toBeCloseTo(H * price('us-east-1', 'nlb-hour'));
    // The NAT gateways' three addresses.
    expect(component('cell', 'us-1', 'Public IPv4 addresses')).toMatchObject({ resources: 3 });
    // Each line names its price's source and date.
    for (const l of owner('cell', 'us-1').lines) {
      expect(l.price.source).toMatch(/^https:\/\//);
      expect(l.price.asOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
    // Same cell, other region: its own prices.
    expect(owner('cell', 'eu-1').fixedUsd).toBeGreaterThan(owner('cell', 'us-1').fixedUsd);
  });

  it('counts a small (EC2, RDS Multi-AZ) cell by its instances and its storage', () => {
    expect(component('cell', 'us-4', 'EC2 instances (t3.medium)')!.monthlyUsd).toBeCloseTo(2 * H * price('us-east-1', 'ec2-hour:t3.medium'));
    expect(component('cell', 'us-4', 'Database instance (postgres db.t4g.medium, Multi-AZ)')!.monthlyUsd).toBeCloseTo(
      2 * H * price('us-east-1', 'rds-hour:postgres:db.t4g.medium'),
    );
    expect(component('cell', 'us-4', 'Database storage (gp3)')!.monthlyUsd).toBeCloseTo(2 * 100 * price('us-east-1', 'rds-storage-gp3-gb-month'));
    // No Fargate service of its own: the workload runs on the group's instances.
    expect(component('cell', 'us-4', 'Fargate tasks (vCPU)')).toBeUndefined();
  });

  it('charges each router region its link to every cell, and shows each cell what its links cost', () => {
    const zones = (r: string) => fleet.regions[r].availabilityZones.length;
    for (const region of ['us-east-1', 'eu-west-1']) {
      const endpoints = owner('router', region).lines.filter((l) => l.priceId === 'interface-endpoint-az-hour' && l.forCell);
      expect(endpoints.map((l) => l.forCell).sort()).toEqual(fleet.cells.map((c) => c.id).sort());
      for (const l of endpoints) expect(l.monthlyUsd).toBeCloseTo(zones(region) * H * price(region, 'interface-endpoint-az-hour'));
    }
    expect(owner('cell', 'us-1').routerLinksUsd).toBeCloseTo(
      3 * H * price('us-east-1', 'interface-endpoint-az-hour') + 3 * H * price('eu-west-1', 'interface-endpoint-az-hour'),
    );
    // Counted once: in the routers' totals, not the cells'.
    expect(cost.totals.fixed).toBeCloseTo(cost.owners.reduce((n, o) => n + o.fixedUsd, 0));
    expect(cost.totals.total).toBeCloseTo(cost.totals.cells + cost.totals.routers + cost.totals.tooling + cost.totals.other);
  });

  it('estimates usage at the stated traffic, and scales it with the assumptions', () => {
    const waf = owner('cell', 'us-1').usage.find((u) => u.priceId === 'waf-requests-million')!;
    const rps = 0.25 * fleet.cells.find((c) => c.id === 'us-1')!.shape.limits.requestsPerSecond;
    expect(waf.quantity).toBeCloseTo((rps * 3600 * H) / 1e6);
    const doubled = estimateFleetCost(stacks, { ...costInputOf(fleet), assumptions: { utilization: 0.5, kibPerRequest: 8 } });
    expect(doubled.totals.usage).toBeCloseTo(2 * cost.totals.usage);
    expect(doubled.totals.fixed).toBeCloseTo(cost.totals.fixed);
    // Even spreading over three zones sends two thirds of the router's bytes across zones.
    const crossing = owner('router', 'us-east-1').usage.find((u) => u.priceId === 'cross-az-gb')!;
    const endpointGb = owner('router', 'us-east-1').usage.find((u) => u.priceId === 'interface-endpoint-gb')!.quantity;
    expect(crossing.quantity).toBeCloseTo(endpointGb * (2 / 3) * 2);
  });

  it('prices cross-zone data by router.zoneAffinity: own zone first sends 2 of every 102 bytes across zones, and the lever shows both', () => {
    const endpointGb = owner('router', 'us-east-1').usage.find((u) => u.priceId === 'interface-endpoint-gb')!.quantity;
    const own = estimateFleetCost(stacks, { ...costInputOf(fleet), zoneAffinity: 'own-zone' });
    const crossing = own.owners.find((o) => o.kind === 'router' && o.id === 'us-east-1')!.usage.find((u) => u.priceId === 'cross-az-gb')!;
    expect(crossing.quantity).toBeCloseTo(endpointGb * (2 / 102) * 2);
    const spreadLever = cost.levers.find((l) => l.id === 'cross-zone')!;
    const ownLever = own.levers.find((l) => l.id === 'cross-zone')!;
    expect(spreadLever.setting).toMatch(/^router\.zoneAffinity: 'spread'/);
    expect(ownLever.setting).toMatch(/^router\.zoneAffinity: 'own-zone'/);
    // Each is the other's alternative.
    expect(ownLever.nowUsd).toBeCloseTo(spreadLever.alternativeUsd);
    expect(ownLever.alternativeUsd).toBeCloseTo(spreadLever.nowUsd);
    expect(ownLever.nowUsd).toBeLessThan(spreadLever.nowUsd / 30);
    expect(ownLever.effects[1]).toMatch(/\(now\)/);
  });

  it('lists the levers with their effect: NAT per zone or per VPC, cross-zone data, databases per shape', () => {
    const nat = cost.levers.find((l) => l.id === 'nat-per-zone')!;
    expect(nat.nowUsd).toBeCloseTo(cost.components.find((c) => c.component === 'NAT gateways')!.monthlyUsd);
    expect(nat.alternativeUsd).toBeCloseTo(nat.nowUsd / 3);
    expect(cost.levers.find((l) => l.id === 'cross-zone')!.nowUsd).toBeGreaterThan(0);
    expect(cost.levers.find((l) => l.id === 'database')!.effects.join('\n')).toMatch(/standard: \$\d+ a cell[\s\S]*small: \$\d+ a cell/);
  });
});

/** Router stacks of a fleet of `cells` cells spread over `regions`, each region linking every cell (or those `links` says) in 3 zones. */
function routerOnlyAssembly(
  cells: number,
  regions: readonly string[],
  links: (region: string, cell: number) => boolean = () => true,
): AssemblyStack[] {
  return regions.map((region) => {
    const resources: Record<string, { Type: string; Properties: Record<string, unknown> }> = {};
    for (let i = 0; i < cells; i++) {
      if (!links(region, i)) continue;
      resources[`Read${i}`] = { Type: 'Custom::CellEndpointServiceName', Properties: { CellId: `cell-${i}` } };
      resources[`Endpoint${i}`] = {
        Type: 'AWS::EC2::VPCEndpoint',
        Properties: { VpcEndpointType: 'Interface', SubnetIds: ['a', 'b', 'c'], ServiceName: { 'Fn::GetAtt': [`Read${i}`, 'Parameter.Value'] } },
      };
    }
    return {
      stackName: `orders-router-${region}`,
      account: '222222222222',
      region,
      templates: [{ stack: `orders-router-${region}/CellLinks1`, template: { Resources: resources }, bytes: 0 }],
    };
  });
}

describe('the router-reach lever at 400 cells over four regions', () => {
  const regions = ['us-east-1', 'eu-west-1', 'us-west-2', 'ap-northeast-1'];
  // Cell i lives in region i % 4; its failover regions cycle over the three others, so each region is
  // the failover of exactly 100 cells (34 + 33 + 33 from the three other regions).
  const cells = Array.from({ length: 400 }, (_, i) => ({
    id: `cell-${i}`,
    region: regions[i % 4],
    shape: 'standard',
    requestsPerSecond: 2000,
    failoverRegion: regions[((i % 4) + 1 + (Math.floor(i / 4) % 3)) % 4],
  }));
  const input = { app: 'orders', cells, routerZones: Object.fromEntries(regions.map((r) => [r, 3])), interfaceEndpointsPerVpc: 400 };
  const perEndpoint = regions.map((r) => 3 * H * price(r, 'interface-endpoint-az-hour'));
  const allRegions = perEndpoint.reduce((a, b) => a + b, 0);

  it('counts the endpoints and their cost both ways, and the quota each way needs (every region links every cell now)', () => {
    const reach = estimateFleetCost(routerOnlyAssembly(400, regions), input).levers.find((l) => l.id === 'router-reach')!;
    expect(reach.nowUsd).toBeCloseTo(400 * allRegions);
    // Home region plus one failover: each region links its own 100 and the 100 it is the failover of.
    expect(reach.alternativeUsd).toBeCloseTo(200 * allRegions);
    expect(reach.effects[0]).toBe(
      'every region reaches every cell: 1600 cell endpoints, up to 400 in one router VPC, needs interfaceEndpointsPerVpc ≥ 400 (declared: 400) (now)',
    );
    expect(reach.effects[1]).toBe(
      'home region plus one failover region: 800 cell endpoints, up to 200 in one router VPC, needs interfaceEndpointsPerVpc ≥ 200 (declared: 400)',
    );
    expect(reach.setting).toMatch(/^router\.reach: 'every-region'/);
  });

  it("with router.reach home-and-failover, prices what the templates hold now and every region's way as the alternative", () => {
    const linked = (region: string, i: number) => cells[i].region === region || cells[i].failoverRegion === region;
    const reach = estimateFleetCost(routerOnlyAssembly(400, regions, linked), {
      ...input,
      reach: 'home-and-failover',
      interfaceEndpointsPerVpc: 200,
    }).levers.find((l) => l.id === 'router-reach')!;
    expect(reach.nowUsd).toBeCloseTo(200 * allRegions);
    expect(reach.alternativeUsd).toBeCloseTo(400 * allRegions);
    expect(reach.effects[1]).toBe(
      'home region plus one failover region: 800 cell endpoints, up to 200 in one router VPC, needs interfaceEndpointsPerVpc ≥ 200 (declared: 200) (now)',
    );
    expect(reach.setting).toMatch(/^router\.reach: 'home-and-failover'/);
  });
});

describe('cellctl cost', () => {
  const config = path.join(REPO_ROOT, 'cells.config.ts');

  it('prints per-cell, per-shape and fleet totals, each line with its price source and date', async () => {
    const r = await cellctl('cost', '--config', config, '--assembly', outdir);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^\$[\d,]+ a month: \$[\d,]+ fixed, \$[\d,]+ usage at 25% of each shape's tested rate and 8 KiB a request/);
    expect(r.out).toMatch(/standard: \$[\d,]+ fixed \(\+ \$[\d.,]+ of router endpoints to it\)/);
    expect(r.out).toMatch(/cell us-4 \(small, us-east-1\): \$[\d,]+ fixed/);
    expect(r.out).toMatch(/router us-east-1: \$[\d,]+ fixed/);
    expect(r.out).toMatch(/NAT gateways +3 × \(730 h\) +\$0\.045\/hour +\$98\.55 +aws\.amazon\.com\/vpc\/pricing, \d{4}-\d{2}-\d{2}/);
    expect(r.out).toContain('Levers:');
  });

  it('prints JSON with the same totals, and writes the page', async () => {
    const html = path.join(outdir, 'cost.html');
    const r = await cellctl('cost', '--config', config, '--assembly', outdir, '--json', '--html', html);
    expect(r.code).toBe(0);
    const parsed = JSON.parse(r.out) as FleetCost;
    expect(parsed.totals.total).toBeCloseTo(cost.totals.total);
    expect(fs.readFileSync(html, 'utf8')).toMatch(/<h1>What orders costs a month<\/h1>[\s\S]*NAT gateways/);
  });

  it('shows its steps on a terminal (a pseudo-terminal), and none with --json', () => {
    const run = (...args: string[]) =>
      spawnSync('script', ['-qfec', ['node', 'bin/cellctl.js', 'cost', '--config', config, '--assembly', outdir, ...args].join(' '), '/dev/null'], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        // From the sources: a stale build would say so on the terminal too.
        env: { ...process.env, CELLS_PROGRESS: '', CELLCTL_FROM_SOURCE: '1' },
      });
    const shown = run();
    expect(shown.status).toBe(0);
    expect(shown.stdout).toContain(`[0 s] reading the templates in ${outdir}`);
    expect(shown.stdout).toMatch(/\[\d+ s\] pricing \d+ stacks/);
    const quiet = run('--json');
    expect(quiet.status).toBe(0);
    expect(quiet.stdout).not.toContain('reading the templates');
    // On the terminal stdout and stderr are one stream: with --json it holds the JSON document alone.
    expect((JSON.parse(quiet.stdout) as FleetCost).totals.total).toBeCloseTo(cost.totals.total);
  });

  it('says to synthesize when there is no assembly, and refuses a bad assumption', async () => {
    const missing = await cellctl('cost', '--config', config, '--assembly', path.join(outdir, 'none'));
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/holds no synthesized assembly: run `npx cdk synth` first/);
    const bad = await cellctl('cost', '--config', config, '--assembly', outdir, '--utilization', '2');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--utilization 2: give a share above 0 and at most 1/);
  });

  it("gives capacity's proposal to add cells what a cell of the shape costs, router endpoints included", () => {
    const costs = shapeCostsOf(fleet, outdir)!;
    const standard = cost.shapes.find((x) => x.shape === 'standard')!;
    expect(costs.get('standard')).toBeCloseTo(standard.fixedUsdPerCell + standard.routerLinksUsdPerCell);
    const plan = {
      mappingVersion: 7,
      moves: [],
      cells: [],
      unresolved: [],
      tooBig: [],
      cellsToAdd: [{ region: 'us-east-1', shape: 'standard', count: 2 }],
    };
    expect(planText(plan, costs)).toContain(
      `add 2 cell(s) of shape standard in us-east-1 (about $${Math.round(costs.get('standard')!).toLocaleString('en-US')} a month each fixed, router endpoints included; cellctl cost), then plan again`,
    );
    // Without a written assembly the proposal stands without a figure.
    expect(shapeCostsOf(fleet, path.join(outdir, 'none'))).toBeUndefined();
    expect(planText(plan, undefined)).toContain('add 2 cell(s) of shape standard in us-east-1, then plan again');
  });

  it('has a rule for every type it names, each priced rule reading prices the table holds', () => {
    for (const [type, rule] of Object.entries(CATALOG)) {
      expect(ruleOf(type)).toBe(rule);
      if (rule.kind === 'priced') for (const [id] of rule.usage ?? []) expect(Object.keys(PRICE_TABLE.prices['us-east-1'])).toContain(id);
    }
  });
});
