import { cellZoneName, Fleet, regionReachOf, routedCells, RouterGroupConfig, seedMapping } from '../domain/fleet';
import { RouterGroupsPart } from '../domain/names';
import { routerRoutingOf } from '../runtime/router/task-config';
import { RouterStageStacks } from '../constructs/pipeline';
import { RouterGroupsStackProps, RouterStackProps } from '../constructs/router';

/*
 * The fleet file, translated into the router constructs' own props: the one place where the router
 * stacks meet `Fleet`. The constructs take plain values; anything they need of the fleet is read here.
 */

/** The groups a part holds, in rollout order: the canary group (the first of `router.groups`) alone, or every other group. */
export function routerGroupsOf(fleet: Fleet, part: RouterGroupsPart): readonly Required<RouterGroupConfig>[] {
  return part === 'canary' ? fleet.router.groups.slice(0, 1) : fleet.router.groups.slice(1);
}

/**
 * A region's RouterStack props: its VPC and listener from `router`, a link to every cell of the
 * fleet, the seeded mapping; the home region's (`router.homeRegion`) also the publisher and move bucket.
 */
export function routerStackPropsOf(fleet: Fleet, region: string, cellEndpointFingerprints?: Readonly<Record<string, string>>): RouterStackProps {
  const { router } = fleet;
  return {
    app: fleet.app,
    region,
    account: fleet.accounts.router,
    toolingAccount: fleet.accounts.tooling,
    availabilityZones: fleet.regions[region]?.availabilityZones ?? [],
    cidr: router.cidrs[region],
    certificateArn: router.certificateArns[region],
    groups: router.groups.map((g) => ({ name: g.name, weight: g.weight })),
    ...(router.lanes ? { lanes: true } : {}),
    // Cell zero too (docs/cell-zero.md): the routers link and watch it like a cell.
    cells: routedCells(fleet).map((c) => ({
      id: c.id,
      region: c.region,
      account: c.account,
      port: c.port,
      ...(c.endpointGeneration ? { endpointGeneration: c.endpointGeneration } : {}),
    })),
    // router.reach: every cell, or only those of this region and those it is the failover of.
    ...(fleet.router.reach === 'every-region' ? {} : { linkedCells: regionReachOf(fleet, region).linked.map((c) => c.id) }),
    cellZoneName: cellZoneName(fleet),
    mappingBucketPrefix: router.mappingBucket,
    keptMappingVersions: router.keptVersions,
    seedMapping: seedMapping(fleet),
    organizationId: fleet.pipeline?.organizationId,
    homeOf: region === router.homeRegion ? Object.keys(fleet.regions) : undefined,
    homeRegion: router.homeRegion,
    cellEndpointFingerprints,
  };
}

/** The props of a region's group stack (`part`): its groups' services, the fleet's routing settings. */
export function routerGroupsStackPropsOf(fleet: Fleet, region: string, part: RouterGroupsPart): RouterGroupsStackProps {
  const { elsewhere } = regionReachOf(fleet, region);
  return {
    app: fleet.app,
    region,
    account: fleet.accounts.router,
    availabilityZones: fleet.regions[region]?.availabilityZones ?? [],
    part,
    groups: routerGroupsOf(fleet, part).map((g) => ({ name: g.name, tasks: g.tasks, ...(fleet.router.lanes ? { lane: laneOfGroup(g.name) } : {}) })),
    routing: routerRoutingOf(fleet),
    // Other regions' cells by their region's URL (router.regionUrls): answered 307 there while their link is not here.
    ...(Object.keys(elsewhere).length > 0 ? { elsewhere } : {}),
    zonalAutoshift: fleet.router.zonalAutoshift,
    allGroups: fleet.router.groups.map((g) => g.name),
    stalenessMinutes: fleet.router.stalenessMinutes,
    ...(fleet.router.lanes
      ? {
          lanes: {
            toolingAccount: fleet.accounts.tooling,
            certificateArn: fleet.router.certificateArns[region],
            shards: fleet.router.lanes.shards,
            ...(fleet.router.lanes.hostedZone ? { hostedZone: fleet.router.lanes.hostedZone } : {}),
          },
        }
      : {}),
  };
}

/** `lane-3` → 3 (lanes' groups are named by laneGroupName). */
function laneOfGroup(name: string): number {
  const lane = Number(/^lane-(\d+)$/.exec(name)?.[1]);
  if (!Number.isInteger(lane)) throw new Error(`router group ${name} is not a lane (lane-<n>)`);
  return lane;
}

/** Every region's router stacks, for the pipeline's router stages. */
export function pipelineRoutersOf(fleet: Fleet): Readonly<Record<string, RouterStageStacks>> {
  return Object.fromEntries(
    Object.keys(fleet.regions).map((region) => [
      region,
      {
        router: routerStackPropsOf(fleet, region),
        canary: routerGroupsStackPropsOf(fleet, region, 'canary'),
        rest: routerGroupsStackPropsOf(fleet, region, 'rest'),
      },
    ]),
  );
}
