import {
  defaultFailoverRegion,
  FleetConfigError,
  FleetInput,
  generateScaleFleet,
  mostReachedCells,
  regionReachOf,
  resolveFleet,
} from '../../../lib/domain/fleet';
import { generateKeyPairSync } from 'crypto';
import { validInput } from '../../support/fleet';

/** The problems resolveFleet lists for `input` (none: []). */
function problems(input: FleetInput): string[] {
  try {
    resolveFleet(input);
    return [];
  } catch (error) {
    if (error instanceof FleetConfigError) return [...error.problems];
    throw error;
  }
}

const REGIONS = ['us-east-1', 'eu-west-1', 'us-west-2', 'ap-northeast-1'];
const urls = (regions: readonly string[]) => Object.fromEntries(regions.map((r) => [r, `https://${r}.api.example.com`]));

/** 400 cells over four regions with the given reach and declared endpoint quota. */
function scaleInput(reach: 'every-region' | 'home-and-failover', quota: number): FleetInput {
  const generated = generateScaleFleet(validInput(), 400, 4);
  return {
    ...generated,
    router: { ...generated.router, reach, regionUrls: urls(Object.keys(generated.regions)) },
    quotas: { interfaceEndpointsPerVpc: quota },
  };
}

describe('router.reach in the fleet file', () => {
  it("defaults to every region linking every cell, and resolves each cell's failover region in another region", () => {
    const fleet = resolveFleet(validInput());
    expect(fleet.router.reach).toBe('every-region');
    expect(fleet.router.regionUrls).toEqual({});
    for (const cell of fleet.cells) {
      expect(Object.keys(fleet.regions)).toContain(cell.failoverRegion);
      expect(cell.failoverRegion).not.toBe(cell.region);
    }
    // every-region: every region links every cell, and sends nothing elsewhere.
    for (const region of Object.keys(fleet.regions)) {
      expect(regionReachOf(fleet, region).linked).toHaveLength(fleet.cells.length + (fleet.cellZero ? 1 : 0));
      expect(regionReachOf(fleet, region).elsewhere).toEqual({});
    }
  });

  it('chooses a default failover region by rendezvous: adding a region moves only cells to the new region', () => {
    const ids = Array.from({ length: 300 }, (_, i) => `cell-${i}`);
    const before = ids.map((id) => defaultFailoverRegion(id, 'us-east-1', REGIONS.slice(0, 3)));
    const after = ids.map((id) => defaultFailoverRegion(id, 'us-east-1', REGIONS));
    const moved = ids.filter((_, i) => before[i] !== after[i]);
    expect(new Set(moved.map((id) => after[ids.indexOf(id)]))).toEqual(new Set(['ap-northeast-1']));
    // About a third of the cells now prefer the new region (one of three other regions).
    expect(moved.length).toBeGreaterThan(60);
    expect(moved.length).toBeLessThan(140);
    expect(defaultFailoverRegion('cell-1', 'us-east-1', ['us-east-1'])).toBeUndefined();
  });

  it('links each cell from its own region and its failover region only, and names every other region’s cell with its region’s URL', () => {
    const input = scaleInput('home-and-failover', 400);
    const other = (region: string) => Object.keys(input.regions).find((r) => r !== region)!;
    const declared = { ...input, cells: input.cells.map((c, i) => (i === 0 ? { ...c, failoverRegion: other(c.region) } : c)) };
    const fleet = resolveFleet(declared);
    expect(fleet.cells[0].failoverRegion).toBe(declared.cells[0].failoverRegion);
    const regions = Object.keys(fleet.regions);
    let links = 0;
    for (const region of regions) {
      const { linked, elsewhere } = regionReachOf(fleet, region);
      links += linked.length;
      for (const cell of linked) {
        const c = fleet.cells.find((x) => x.id === cell.id)!;
        expect([c.region, c.failoverRegion]).toContain(region);
      }
      const sent = Object.entries(elsewhere).flatMap(([url, cells]) => cells.map((id) => ({ url, id })));
      expect(sent.length).toBe(fleet.cells.filter((c) => c.region !== region).length);
      for (const { url, id } of sent) expect(url).toBe(`https://${fleet.cells.find((c) => c.id === id)!.region}.api.example.com`);
    }
    // Every cell is linked from exactly two regions: 800 endpoints instead of 1,600.
    expect(links).toBe(800);
  });

  it('needs the endpoint quota of the most cells one region links, not of every cell', () => {
    const fleet = resolveFleet(scaleInput('home-and-failover', 400));
    const regions = Object.keys(fleet.regions);
    const most = mostReachedCells(fleet.cells, regions, 'home-and-failover');
    expect(most.cells).toBeGreaterThan(180);
    expect(most.cells).toBeLessThan(240);
    // The smaller quota is enough with home-and-failover ...
    expect(problems(scaleInput('home-and-failover', most.cells))).toEqual([]);
    // ... and one less is refused, saying why; every-region still needs 400.
    const short = problems(scaleInput('home-and-failover', most.cells - 1));
    expect(short).toHaveLength(1);
    expect(short[0]).toMatch(
      new RegExp(
        `^cells: ${most.cells} cells \\(the most any router region links under router.reach home-and-failover\\) need ${most.cells} interface endpoints`,
      ),
    );
    expect(problems(scaleInput('every-region', most.cells))[0]).toMatch(
      /^cells: 400 cells need 400 interface endpoints in every router VPC \(one per cell of the fleet\)/,
    );
  });

  it('refuses, one line each: a failover region that is not another region of the fleet, a missing or malformed region URL', () => {
    const base = validInput();
    const regions = Object.keys(base.regions);
    const cell = base.cells[0];
    expect(problems({ ...base, cells: [{ ...cell, failoverRegion: 'mars-1' }, ...base.cells.slice(1)] })).toEqual([
      `cell \`${cell.id}\`: failoverRegion \`mars-1\` is not one of the fleet's regions (${regions.join(', ')}); name one of them, or leave it out`,
    ]);
    expect(problems({ ...base, cells: [{ ...cell, failoverRegion: cell.region }, ...base.cells.slice(1)] })).toEqual([
      `cell \`${cell.id}\`: failoverRegion is the cell's own region \`${cell.region}\`; name another region (its routers link the cell too), or leave it out`,
    ]);
    const reach = (regionUrls?: Record<string, string>) => problems({ ...base, router: { ...base.router, reach: 'home-and-failover', regionUrls } });
    expect(reach(urls(regions))).toEqual([]);
    expect(reach({ [regions[0]]: `https://${regions[0]}.api.example.com` })).toEqual([
      expect.stringMatching(new RegExp(`^router\\.regionUrls: no URL for ${regions[1]}; with router\\.reach 'home-and-failover' a router answers`)),
    ]);
    const bad = (url: string) => reach({ ...urls(regions), [regions[0]]: url });
    expect(bad('https://eu.example.com/v1')).toEqual([expect.stringMatching(/has a path, query or fragment; give the origin alone/)]);
    expect(bad('https://eu.example.com/')).toEqual([expect.stringMatching(/ends with \/; drop it/)]);
    expect(bad('ftp://eu.example.com')).toEqual([expect.stringMatching(/uses ftp:; use https:\/\//)]);
    expect(bad('https://user:pw@eu.example.com')).toEqual([expect.stringMatching(/carries credentials/)]);
    expect(bad('eu.example.com')).toEqual([expect.stringMatching(/is not a URL/)]);
    expect(reach({ ...urls(regions), 'mars-1': 'https://mars.example.com' })).toEqual([
      expect.stringMatching(/^router\.regionUrls\.mars-1: `mars-1` is not one of the fleet's regions/),
    ]);
    expect(problems({ ...base, router: { ...base.router, reach: 'everywhere' as never } })[0]).toMatch(/router\.reach/);
  });

  it('refuses redirects with a key clients would lose or change on the way: a host key, and a verified token', () => {
    const base = validInput();
    const regions = Object.keys(base.regions);
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }) as string;
    const jwt = { source: 'jwt' as const, claim: 'tenant', algorithm: 'ES256' as const, publicKeys: [ec] };
    const host = { source: 'host' as const, label: 1 };
    const reach = { ...base.router, reach: 'home-and-failover' as const, regionUrls: urls(regions) };
    expect(problems({ ...base, partitionKey: jwt, router: reach })).toEqual([
      expect.stringMatching(/^router\.reach: 'home-and-failover': .*clients drop the Authorization header .* on a redirect to another host/),
    ]);
    expect(problems({ ...base, partitionKey: host, router: reach })).toEqual([
      expect.stringMatching(
        /^router\.reach: 'home-and-failover': .*partitionKey\.source 'host' would then read that region's host name as the tenant/,
      ),
    ]);
    // regionUrls alone (every-region) is a redirect for a link that goes: refused with a host key too.
    expect(problems({ ...base, partitionKey: host, router: { ...base.router, regionUrls: urls(regions) } })).toEqual([
      expect.stringMatching(/^router\.regionUrls: /),
    ]);
    expect(problems({ ...base, partitionKey: jwt })).toEqual([]);
  });
});

describe('router.zoneAffinity in the fleet file', () => {
  it('defaults to spread, and with own-zone asks every group for a task in each zone', () => {
    const base = validInput();
    expect(resolveFleet(base).router.zoneAffinity).toBe('spread');
    const zones = Math.max(...Object.values(base.regions).map((r) => r.availabilityZones.length));
    const groups = (tasks: number) => [
      { name: 'canary', tasks },
      { name: 'main', tasks: 2 * zones },
    ];
    const own = (tasks: number) => ({ ...base, router: { ...base.router, zoneAffinity: 'own-zone' as const, groups: groups(tasks) } });
    expect(resolveFleet(own(zones)).router.zoneAffinity).toBe('own-zone');
    expect(problems(own(zones - 1))).toEqual([
      `router.groups: group \`canary\` runs ${zones - 1} task(s) over ${zones} zones; with router.zoneAffinity 'own-zone' each zone's cells are served by the router tasks in that zone, so give every group at least ${zones} tasks (a multiple of ${zones} keeps the zones even), or use 'spread'`,
    ]);
  });
});
