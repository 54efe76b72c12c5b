import { pipelineRoutersOf, routerGroupsOf, routerGroupsStackPropsOf, routerStackPropsOf } from '../../lib/app';
import { cellZoneName, seedMapping } from '../../lib/domain/fleet';
import { routerRoutingOf } from '../../lib/runtime/router/task-config';
import { exampleFleet } from '../support/fleet';

describe('the router props adapter (fleet file → router constructs)', () => {
  const fleet = exampleFleet();
  const regions = Object.keys(fleet.regions);

  it("gives every region's RouterStack the whole fleet's cells, and only the home region the publisher and move bucket", () => {
    for (const region of regions) {
      const props = routerStackPropsOf(fleet, region);
      expect(props.cells.map((c) => c.id)).toEqual(fleet.cells.map((c) => c.id));
      expect(props.account).toBe(fleet.accounts.router);
      expect(props.availabilityZones).toEqual(fleet.regions[region].availabilityZones);
      expect(props.cidr).toBe(fleet.router.cidrs[region]);
      expect(props.homeOf).toEqual(region === fleet.router.homeRegion ? regions : undefined);
      expect(props.seedMapping).toEqual(seedMapping(fleet));
      expect(props.cellZoneName).toBe(cellZoneName(fleet));
    }
  });

  it('gives a cell with a certificate port 443 and one without port 80', () => {
    const withCert = {
      ...fleet,
      cells: fleet.cells.map((c, i) => (i === 0 ? { ...c, certificateArn: 'arn:aws:acm:eu-west-1:1:certificate/x' } : c)),
    };
    const ports = routerStackPropsOf(withCert, regions[0]).cells.map((c) => c.port);
    expect(ports[0]).toBe(443);
    expect(new Set(ports.slice(1))).toEqual(new Set([80]));
  });

  it("splits the groups into the canary part and the rest, with the fleet's routing", () => {
    const canary = routerGroupsStackPropsOf(fleet, regions[0], 'canary');
    const rest = routerGroupsStackPropsOf(fleet, regions[0], 'rest');
    expect([...canary.groups, ...rest.groups].map((g) => g.name)).toEqual(fleet.router.groups.map((g) => g.name));
    expect(canary.groups).toEqual(routerGroupsOf(fleet, 'canary').map((g) => ({ name: g.name, tasks: g.tasks })));
    expect(rest.routing).toEqual(routerRoutingOf(fleet));
    expect(rest.stalenessMinutes).toBe(fleet.router.stalenessMinutes);
  });

  it('hands the pipeline one entry per region', () => {
    expect(Object.keys(pipelineRoutersOf(fleet))).toEqual(regions);
  });
});
