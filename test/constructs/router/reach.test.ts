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

  it('still hands every cell of the fleet to the parts that are not links (moves go between any two cells)', () => {
    const props = routerStackPropsOf(fleet, region);
    expect(props.cells.map((c) => c.id)).toEqual(fleet.cells.map((c) => c.id));
    expect(props.linkedCells).toEqual(linked.map((c) => c.id));
  });

  it("tells its router tasks' agent which cells to send to which region's URL", () => {
    const taskDefinitions = Object.values(Template.fromStack(groups).findResources('AWS::ECS::TaskDefinition'));
    expect(taskDefinitions.length).toBeGreaterThan(0);
    for (const td of taskDefinitions) {
      const agent = (td.Properties.ContainerDefinitions as { Name: string; Environment: { Name: string; Value: string }[] }[]).find(
        (c) => c.Name === 'agent',
      )!;
      const value = agent.Environment.find((e) => e.Name === 'ELSEWHERE')?.Value;
      expect(JSON.parse(value!)).toEqual(elsewhere);
    }
    const sent = Object.values(elsewhere).flat();
    expect(sent.length + linked.length).toBe(fleet.cells.length);
  });

  it('sets no ELSEWHERE when every region links every cell', () => {
    const every = { ...fleet, router: { ...fleet.router, reach: 'every-region' as const } };
    expect(routerGroupsStackPropsOf(every, region, 'rest').elsewhere).toBeUndefined();
    expect(routerStackPropsOf(every, region).linkedCells).toBeUndefined();
  });
});
