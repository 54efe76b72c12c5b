import { createHash } from 'crypto';
import { RoutedCell, routedCells } from './cell-zero';
import type { Fleet, RouterReach } from './types';

/**
 * Which router regions reach which cells (`router.reach`, docs/cost.md "Router reach").
 *
 * - `every-region`: every router region links every cell (an interface endpoint per cell per router
 *   VPC): a request is served wherever it enters.
 * - `home-and-failover`: a cell is linked only from its own region and its failover region
 *   (`cells[].failoverRegion`, else one chosen by rendezvous hashing over the other regions). A
 *   request that enters a region that does not link its cell is answered `307` to the cell's own
 *   region (`router.regionUrls`): the client repeats it there, method and body unchanged.
 */
export const ROUTER_REACHES: readonly RouterReach[] = ['every-region', 'home-and-failover'];

/** A cell as reach sees it. */
export interface ReachCell {
  readonly id: string;
  readonly region: string;
  /** CellConfig.failoverRegion, when declared. */
  readonly failoverRegion?: string;
}

/**
 * The region that reaches `cell` besides its own when it declares none: of the fleet's other regions,
 * the one whose hash with the cell id is highest (rendezvous hashing), so adding a region moves only
 * the cells that now prefer it, and nothing else. Undefined in a fleet of one region.
 */
export function defaultFailoverRegion(cellId: string, region: string, regions: readonly string[]): string | undefined {
  let best: { region: string; score: string } | undefined;
  for (const other of regions) {
    if (other === region) continue;
    const score = createHash('sha256').update(`${cellId}\n${other}`).digest('hex');
    if (!best || score > best.score) best = { region: other, score };
  }
  return best?.region;
}

/** The cell's failover region: the declared one, else the rendezvous choice. */
export function failoverRegionOf(cell: ReachCell, regions: readonly string[]): string | undefined {
  return cell.failoverRegion ?? defaultFailoverRegion(cell.id, cell.region, regions);
}

/** The router regions that link `cell`, its own first. */
export function reachingRegions(cell: ReachCell, regions: readonly string[], reach: RouterReach): string[] {
  if (reach === 'every-region') return [cell.region, ...regions.filter((r) => r !== cell.region)];
  const failover = failoverRegionOf(cell, regions);
  return failover === undefined ? [cell.region] : [cell.region, failover];
}

/** Whether the routers of `region` link `cell`. */
export function reaches(region: string, cell: ReachCell, regions: readonly string[], reach: RouterReach): boolean {
  return reachingRegions(cell, regions, reach).includes(region);
}

/** The cells the routers of `region` link, in the order given. */
export function reachedCells<C extends ReachCell>(region: string, cells: readonly C[], regions: readonly string[], reach: RouterReach): C[] {
  return cells.filter((c) => reaches(region, c, regions, reach));
}

/**
 * Where the routers of `region` send other regions' cells when their link is not there: each cell
 * of another region whose region has a URL in `router.regionUrls`, under that URL. The routers serve
 * such a cell while its endpoint name exists in their VPC (the region links it) and answer `307` to
 * its region while it does not: under `home-and-failover` that is every cell they do not link, and
 * during any deploy that removes a link, the time between the link going and the routers learning
 * it (the agent looks again every refresh). Own-region cells are never sent elsewhere.
 */
export function elsewhereOf(region: string, cells: readonly ReachCell[], regionUrls: Readonly<Record<string, string>>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const cell of cells) {
    if (cell.region === region) continue;
    const url = regionUrls[cell.region];
    if (url !== undefined) (out[url] ??= []).push(cell.id);
  }
  return out;
}

/** The most cells one router region links: what its VPC's interface endpoints and subnets must hold. */
export function mostReachedCells(cells: readonly ReachCell[], regions: readonly string[], reach: RouterReach): { region: string; cells: number } {
  let most = { region: regions[0] ?? '', cells: 0 };
  for (const region of regions) {
    const n = reachedCells(region, cells, regions, reach).length;
    if (n > most.cells) most = { region, cells: n };
  }
  return most;
}

/**
 * A region's URL as `router.regionUrls` takes it: `https://` (or `http://`) and a host, with no
 * path, query, fragment or credentials, since the router appends the request's own path and query.
 * Returns the problem, or undefined.
 */
export function regionUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a URL; give the origin clients use for that region, for example https://eu-west-1.api.example.com';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return `uses ${parsed.protocol}; use https:// (or http://)`;
  if (parsed.username || parsed.password) return 'carries credentials; give the origin alone';
  if (parsed.pathname !== '/' || parsed.search || parsed.hash || /[?#]/.test(url))
    return 'has a path, query or fragment; give the origin alone (the router appends the request path and query)';
  if (url.endsWith('/')) return 'ends with /; drop it (the request path starts with one)';
  if (/\s|%/.test(url)) return 'holds spaces or escapes; give the plain origin';
  return undefined;
}

/** What the routers of one region link and where they send the rest, from the fleet. */
export interface RegionReach {
  /** The cells (cell zero included) this region's routers link, in fleet order. */
  readonly linked: readonly RoutedCell[];
  /** Other regions' cells by the URL of their region, for when their link is not there (see elsewhereOf). */
  readonly elsewhere: Readonly<Record<string, readonly string[]>>;
}

/** The reach of `region`'s routers in `fleet` (`router.reach`). */
export function regionReachOf(fleet: Pick<Fleet, 'regions' | 'router' | 'cells' | 'cellZero'>, region: string): RegionReach {
  const regions = Object.keys(fleet.regions);
  const failovers = new Map(fleet.cells.map((c) => [c.id, c.failoverRegion]));
  const cells = routedCells(fleet).map((c) => ({ ...c, ...(failovers.get(c.id) ? { failoverRegion: failovers.get(c.id) } : {}) }));
  const { reach, regionUrls } = fleet.router;
  return {
    linked: reachedCells(region, cells, regions, reach),
    elsewhere: elsewhereOf(region, cells, regionUrls),
  };
}
