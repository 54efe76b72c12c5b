import { Template } from 'aws-cdk-lib/assertions';
import { routerGroupsStackPropsOf, routerStackPropsOf } from '../../../lib/app';
import { CellLinksStack, RouterGroupsStack, RouterStack } from '../../../lib/constructs/router';
import { Fleet, generateScaleFleet, regionReachOf, resolveFleet } from '../../../lib/domain/fleet';
import { cdkApp, validInput } from '../../support/fleet';

/** Twelve cells over three regions, each linked only from its own region and its failover region. */
function reachFleet(): Fleet {
  const generated = generateScaleFleet(validInput(), 12, 3);
  const regions = Object.keys(generated.regions);
  return resolveFleet({
    ...generated,
    router: {
      ...generated.router,
      reach: 'home-and-failover',
      regionUrls: Object.fromEntries(regions.map((r) => [r, `https://${r}.api.example.com`])),
    },
  });
}

describe("a region's routers under router.reach home-and-failover", () => {
  const fleet = reachFleet();
  const region = Object.keys(fleet.regions)[0];
  const { linked, elsewhere } = regionReachOf(fleet, region);
  const app = cdkApp();
  const router = new RouterStack(app, `router-${region}`, routerStackPropsOf(fleet, region));
  const groups = new RouterGroupsStack(app, `router-${region}-groups`, routerGroupsStackPropsOf(fleet, region, 'rest'));
  const links = router.node.findAll().filter((c): c is CellLinksStack => c instanceof CellLinksStack);
  const linkTemplates = links.map((s) => Template.fromStack(s));

  it('links its own cells and those it is the failover of, and no other', () => {
    expect(linked.length).toBeGreaterThan(0);
    expect(linked.length).toBeLessThan(fleet.cells.length);
    expect([...router.cellLinks.keys()].sort()).toEqual(linked.map((c) => c.id).sort());
    for (const id of router.cellLinks.keys()) {
      const cell = fleet.cells.find((c) => c.id === id)!;
      expect([cell.region, cell.failoverRegion]).toContain(region);
    }
    const endpoints = linkTemplates.reduce((n, t) => n + Object.keys(t.findResources('AWS::EC2::VPCEndpoint')).length, 0);
    expect(endpoints).toBe(linked.length);
  });

  it('keeps every link in the nested stack it has with every region reaching every cell: switching reach moves no link (a moved name would clash)', () => {
    // 150 cells over three regions: two batches of links, of which a region links a part.
    const generated = generateScaleFleet(validInput(), 150, 3);
    const regions = Object.keys(generated.regions);
    const urls = Object.fromEntries(regions.map((r) => [r, `https://${r}.api.example.com`]));
    const every = resolveFleet({ ...generated, router: { ...generated.router, regionUrls: urls } });
    const reach = resolveFleet({ ...generated, router: { ...generated.router, reach: 'home-and-failover', regionUrls: urls } });
    const stackOf = (f: Fleet) => {
      const stack = new RouterStack(cdkApp(), `router-${regions[1]}`, routerStackPropsOf(f, regions[1]));
      return new Map([...stack.cellLinks].map(([id, link]) => [id, link.node.scope!.node.id]));
    };
    const before = stackOf(every);
    const after = stackOf(reach);
    expect(after.size).toBeLessThan(before.size);
    for (const [id, stack] of after) expect([id, stack]).toEqual([id, before.get(id)]);
    expect(new Set(after.values())).toEqual(new Set(['CellLinks1', 'CellLinks2']));
  });

  it('still hands every cell of the fleet to the parts that are not links (moves go between any two cells)', () => {
    const props = routerStackPropsOf(fleet, region);
    expect(props.cells.map((c) => c.id)).toEqual(fleet.cells.map((c) => c.id));
    expect(props.linkedCells).toEqual(linked.map((c) => c.id));
  });

  it("tells its router tasks' agent every other region's cell with its region's URL (sent there while not linked here)", () => {
    const taskDefinitions = Object.values(Template.fromStack(groups).findResources('AWS::ECS::TaskDefinition'));
    expect(taskDefinitions.length).toBeGreaterThan(0);
    for (const td of taskDefinitions) {
      const agent = (td.Properties.ContainerDefinitions as { Name: string; Environment: { Name: string; Value: string }[] }[]).find(
        (c) => c.Name === 'agent',
      )!;
      const value = agent.Environment.find((e) => e.Name === 'ELSEWHERE')?.Value;
      expect(JSON.parse(value!)).toEqual(elsewhere);
    }
    const sent = Object.entries(elsewhere).flatMap(([url, ids]) => ids.map((id) => ({ url, cell: fleet.cells.find((c) => c.id === id)! })));
    expect(sent.map((s) => s.cell.id).sort()).toEqual(
      fleet.cells
        .filter((c) => c.region !== region)
        .map((c) => c.id)
        .sort(),
    );
    for (const { url, cell } of sent) expect(url).toBe(`https://${cell.region}.api.example.com`);
  });

  it('links every cell when every region reaches every cell; ELSEWHERE only where regionUrls name the regions (a name that goes is then sent there)', () => {
    const every = { ...fleet, router: { ...fleet.router, reach: 'every-region' as const } };
    expect(routerStackPropsOf(every, region).linkedCells).toBeUndefined();
    expect(routerGroupsStackPropsOf(every, region, 'rest').elsewhere).toEqual(elsewhere);
    const noUrls = { ...every, router: { ...every.router, regionUrls: {} } };
    expect(routerGroupsStackPropsOf(noUrls, region, 'rest').elsewhere).toBeUndefined();
  });
});
