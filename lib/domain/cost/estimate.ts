import { cellStackName, cellZeroStackName, pipelineStackName, routerStackName } from '../names';
import { AssemblyStack } from './assembly';
import { CostLine, priceResource, UnpricedTypeError, UsageDriver } from './catalog';
import { Price, Prices, PRICE_TABLE } from './prices';
import { reachedCells } from '../fleet/reach';
import { FULL_WEIGHT, OTHER_ZONE_WEIGHT } from '../zones';
import type { RouterReach, ZoneAffinity } from '../fleet/types';

/** What the usage estimates assume: stated with every figure they give. */
export interface CostAssumptions {
  /** Each cell's average load, around the clock, as a share of its shape's tested requestsPerSecond. @default 0.25 */
  readonly utilization: number;
  /** Bytes of a request and its response together, in KiB. @default 8 */
  readonly kibPerRequest: number;
}

export const DEFAULT_ASSUMPTIONS: CostAssumptions = { utilization: 0.25, kibPerRequest: 8 };

/** A cell as the estimate needs it: where it is, its shape and its tested rate. */
export interface CellUnderCost {
  readonly id: string;
  readonly region: string;
  readonly shape: string;
  /** The shape's tested requestsPerSecond. */
  readonly requestsPerSecond: number;
  /** Its failover region (router.reach home-and-failover), as the fleet resolves it. */
  readonly failoverRegion?: string;
}

export interface CostInput {
  readonly app: string;
  readonly cells: readonly CellUnderCost[];
  /** The router regions, each with the number of zones its router spreads over. */
  readonly routerZones: Readonly<Record<string, number>>;
  /** interfaceEndpointsPerVpc as the fleet declares it (50 when it does not). */
  readonly interfaceEndpointsPerVpc: number;
  /** `router.reach`: which router regions link which cells. @default 'every-region' */
  readonly reach?: RouterReach;
  /** `router.zoneAffinity`: how a router task spreads a cell's requests over its zones. @default 'spread' */
  readonly zoneAffinity?: ZoneAffinity;
  readonly assumptions?: CostAssumptions;
  readonly prices?: Prices;
}

/** A usage cost at the assumed traffic. */
export interface UsageEstimate {
  readonly component: string;
  readonly priceId: string;
  readonly price: Price;
  readonly quantity: number;
  readonly counted: string;
  readonly monthlyUsd: number;
}

/** Fixed lines of one component (every NAT gateway of a cell together). */
export interface ComponentCost {
  readonly component: string;
  readonly monthlyUsd: number;
  readonly resources: number;
  readonly priceIds: readonly string[];
}

export type OwnerKind = 'cell' | 'router' | 'tooling' | 'other';

/** What one cell, router region, the tooling account or another stack costs. */
export interface OwnerCost {
  readonly kind: OwnerKind;
  /** The cell id, the router's region, `tooling`, or the stack's name. */
  readonly id: string;
  readonly region: string;
  readonly shape?: string;
  readonly stacks: readonly string[];
  readonly fixedUsd: number;
  /**
   * A cell: what the router regions' resources for it cost (its interface endpoint in each), counted
   * in the routers' totals, and part of what adding such a cell costs. 0 for the others.
   */
  readonly routerLinksUsd: number;
  /** Largest first. */
  readonly components: readonly ComponentCost[];
  readonly lines: readonly CostLine[];
  /** Usage costs at the assumed traffic, largest first. */
  readonly usage: readonly UsageEstimate[];
  readonly usageUsd: number;
  /** Every usage price the owner's resources are billed at, with what drives it. */
  readonly drivers: readonly { readonly priceId: string; readonly price: Price; readonly drivenBy: string; readonly resources: number }[];
}

/** A change of the fleet's layout and what it does to cost and quotas. */
export interface Lever {
  readonly id: 'router-reach' | 'nat-per-zone' | 'cross-zone' | 'database';
  readonly title: string;
  readonly nowUsd: number;
  readonly alternativeUsd: number;
  /** Lines saying what changes: counts, quotas, what is given up. */
  readonly effects: readonly string[];
  /** Whether the fleet file can set it today. */
  readonly setting: string;
}

export interface FleetCost {
  readonly currency: 'USD';
  readonly hoursPerMonth: number;
  readonly assumptions: CostAssumptions;
  /** Cells first (largest first), then router regions, tooling, the rest. */
  readonly owners: readonly OwnerCost[];
  readonly shapes: readonly {
    readonly shape: string;
    readonly cells: number;
    readonly fixedUsdPerCell: number;
    /** Its router endpoints' share, on top of fixedUsdPerCell. */
    readonly routerLinksUsdPerCell: number;
    readonly usageUsdPerCell: number;
  }[];
  readonly totals: {
    readonly cells: number;
    readonly routers: number;
    readonly tooling: number;
    readonly other: number;
    readonly fixed: number;
    readonly usage: number;
    readonly total: number;
  };
  /** The fleet's fixed cost by component, largest first. */
  readonly components: readonly ComponentCost[];
  readonly levers: readonly Lever[];
  /** Every price the estimate used, by region and id. */
  readonly prices: readonly { readonly region: string; readonly priceId: string; readonly price: Price }[];
}

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const byUsd = <T extends { monthlyUsd: number }>(a: T, b: T) => b.monthlyUsd - a.monthlyUsd;

/** Which owner a stack's resources are charged to, by the stack names lib/domain/names builds. */
function ownerOf(stack: AssemblyStack, input: CostInput): { kind: OwnerKind; id: string } {
  const { app } = input;
  for (const cell of input.cells) {
    if (stack.stackName === cellStackName(app, cell.id) || stack.stackName === cellZeroStackName(app, cell.id)) return { kind: 'cell', id: cell.id };
  }
  for (const region of Object.keys(input.routerZones)) {
    const name = routerStackName(app, region);
    if (stack.stackName === name || stack.stackName.startsWith(`${name}-`)) return { kind: 'router', id: region };
  }
  const pipeline = pipelineStackName(app);
  if (stack.stackName === pipeline || stack.stackName.startsWith(`${pipeline}-`) || stack.stackName.startsWith('cross-region-stack-')) {
    return { kind: 'tooling', id: 'tooling' };
  }
  return { kind: 'other', id: stack.stackName };
}

function components(lines: readonly CostLine[]): ComponentCost[] {
  const by = new Map<string, { usd: number; resources: Set<string>; ids: Set<string> }>();
  for (const l of lines) {
    const c = by.get(l.component) ?? { usd: 0, resources: new Set(), ids: new Set() };
    c.usd += l.monthlyUsd;
    c.resources.add(`${l.stack}/${l.logicalId}`);
    c.ids.add(l.priceId);
    by.set(l.component, c);
  }
  return [...by].map(([component, c]) => ({ component, monthlyUsd: c.usd, resources: c.resources.size, priceIds: [...c.ids].sort() })).sort(byUsd);
}

/** GB a month of `rps` requests of `kib` KiB each, around the clock. */
const gbPerMonth = (rps: number, kib: number, hours: number) => (rps * 3600 * hours * kib) / (1024 * 1024);

/**
 * The fleet's monthly cost from its written assembly: every resource of every stack priced by the
 * catalog from the price table (fixed lines), and the usage prices each is billed at, estimated at
 * the stated traffic. Throws UnpricedTypeError naming every resource type the catalog does not know.
 */
export function estimateFleetCost(stacks: readonly AssemblyStack[], input: CostInput): FleetCost {
  const prices = input.prices ?? new Prices(PRICE_TABLE);
  const assumptions = input.assumptions ?? DEFAULT_ASSUMPTIONS;
  const hours = prices.hoursPerMonth;
  const unpriced: { type: string; stack: string; logicalId: string }[] = [];
  const groups = new Map<string, { kind: OwnerKind; id: string; region: string; stacks: string[]; lines: CostLine[]; usage: UsageDriver[] }>();
  for (const stack of stacks) {
    const owner = ownerOf(stack, input);
    const key = `${owner.kind}:${owner.id}`;
    const group = groups.get(key) ?? { ...owner, region: stack.region, stacks: [], lines: [], usage: [] };
    group.stacks.push(stack.stackName);
    for (const t of stack.templates) {
      for (const [logicalId, r] of Object.entries(t.template.Resources ?? {})) {
        const priced = priceResource(
          { region: stack.region, stack: t.stack, logicalId, type: r.Type, properties: r.Properties ?? {}, template: t.template },
          prices,
        );
        if (!priced) unpriced.push({ type: r.Type, stack: t.stack, logicalId });
        else {
          group.lines.push(...priced.lines);
          group.usage.push(...priced.usage);
        }
      }
    }
    groups.set(key, group);
  }
  if (unpriced.length) throw new UnpricedTypeError(unpriced);

  const cellsById = new Map(input.cells.map((c) => [c.id, c]));
  const usageOf = (kind: OwnerKind, id: string, region: string, drivers: readonly UsageDriver[]): UsageEstimate[] => {
    const has = (priceId: string) => drivers.filter((d) => d.priceId === priceId).length;
    const estimate = (component: string, priceId: string, quantity: number, counted: string): UsageEstimate => {
      const price = prices.get(region, priceId, component);
      return { component, priceId, price, quantity, counted, monthlyUsd: quantity * price.usd };
    };
    const traffic = (rps: number) => ({ rps, gb: gbPerMonth(rps, assumptions.kibPerRequest, hours) });
    const out: UsageEstimate[] = [];
    if (kind === 'cell') {
      const cell = cellsById.get(id);
      if (!cell) return [];
      const { rps, gb } = traffic(cell.requestsPerSecond * assumptions.utilization);
      // Bytes are the largest LCU dimension here: the routers keep their connections to a cell open.
      const perHour = `${(gb / hours).toFixed(2)} GB/h (${Math.round(rps)} rps × ${assumptions.kibPerRequest} KiB) × ${hours} h`;
      if (has('alb-lcu-hour')) out.push(estimate('Application Load Balancer LCUs', 'alb-lcu-hour', gb, perHour));
      if (has('nlb-lcu-hour')) out.push(estimate('PrivateLink NLB NLCUs', 'nlb-lcu-hour', gb, perHour));
      if (has('waf-requests-million'))
        out.push(
          estimate('WAF requests', 'waf-requests-million', (rps * 3600 * hours) / 1e6, `${Math.round((rps * 3600 * hours) / 1e6)} million requests`),
        );
    }
    if (kind === 'router') {
      // A tenant enters by the router region of its cell (latency-based DNS, tenants near their cell).
      const homed = input.cells.filter((c) => c.region === id);
      const rps = sum(homed.map((c) => c.requestsPerSecond * assumptions.utilization));
      const { gb } = traffic(rps);
      const zones = input.routerZones[id] ?? 1;
      if (has('interface-endpoint-gb'))
        out.push(estimate('Interface endpoint data', 'interface-endpoint-gb', gb, `${Math.round(gb)} GB a month to ${homed.length} cells`));
      if (has('nlb-lcu-hour'))
        out.push(estimate('Router NLB NLCUs', 'nlb-lcu-hour', gb, `${(gb / hours).toFixed(2)} GB/h over the entry NLBs × ${hours} h`));
      if (zones > 1 && gb > 0) {
        const share = crossZoneShare(zones, input.zoneAffinity ?? 'spread');
        const crossing = gb * share;
        out.push(
          estimate(
            input.zoneAffinity === 'own-zone'
              ? 'Cross-zone data (router tasks send to their own zone first)'
              : 'Cross-zone data (router tasks spread over every endpoint zone)',
            'cross-az-gb',
            crossing * 2,
            `${Math.round(crossing)} GB cross zones (${(share * 100).toFixed(1)}% of the bytes), billed out and in`,
          ),
        );
      }
    }
    return out.sort(byUsd);
  };

  const linkLines = [...groups.values()].filter((g) => g.kind === 'router').flatMap((g) => g.lines.filter((l) => l.forCell));
  const owners: OwnerCost[] = [...groups.values()].map((g) => {
    const lines = [...g.lines].sort(byUsd);
    const usage = usageOf(g.kind, g.id, g.region, g.usage);
    const drivers = new Map<string, { priceId: string; price: Price; drivenBy: string; resources: number }>();
    for (const d of g.usage) {
      const seen = drivers.get(d.priceId);
      drivers.set(d.priceId, { priceId: d.priceId, price: d.price, drivenBy: d.drivenBy, resources: (seen?.resources ?? 0) + 1 });
    }
    return {
      kind: g.kind,
      id: g.id,
      region: g.region,
      ...(g.kind === 'cell' && cellsById.get(g.id) ? { shape: cellsById.get(g.id)!.shape } : {}),
      stacks: g.stacks,
      fixedUsd: sum(lines.map((l) => l.monthlyUsd)),
      routerLinksUsd: g.kind === 'cell' ? sum(linkLines.filter((l) => l.forCell === g.id).map((l) => l.monthlyUsd)) : 0,
      components: components(lines),
      lines,
      usage,
      usageUsd: sum(usage.map((u) => u.monthlyUsd)),
      drivers: [...drivers.values()],
    };
  });
  const order: OwnerKind[] = ['cell', 'router', 'tooling', 'other'];
  owners.sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind) || b.fixedUsd - a.fixedUsd || a.id.localeCompare(b.id));

  const total = (kind: OwnerKind) => sum(owners.filter((o) => o.kind === kind).map((o) => o.fixedUsd + o.usageUsd));
  const cells = owners.filter((o) => o.kind === 'cell');
  const shapes = [...new Set(cells.map((c) => c.shape!))].sort().map((shape) => {
    const of = cells.filter((c) => c.shape === shape);
    return {
      shape,
      cells: of.length,
      fixedUsdPerCell: sum(of.map((c) => c.fixedUsd)) / of.length,
      routerLinksUsdPerCell: sum(of.map((c) => c.routerLinksUsd)) / of.length,
      usageUsdPerCell: sum(of.map((c) => c.usageUsd)) / of.length,
    };
  });
  const allLines = owners.flatMap((o) => o.lines);
  const used = new Map<string, { region: string; priceId: string; price: Price }>();
  for (const o of owners) {
    for (const l of o.lines) used.set(`${o.region}|${l.priceId}`, { region: o.region, priceId: l.priceId, price: l.price });
    for (const u of o.usage) used.set(`${o.region}|${u.priceId}`, { region: o.region, priceId: u.priceId, price: u.price });
  }
  const fixed = sum(owners.map((o) => o.fixedUsd));
  const usage = sum(owners.map((o) => o.usageUsd));
  return {
    currency: 'USD',
    hoursPerMonth: hours,
    assumptions,
    owners,
    shapes,
    totals: { cells: total('cell'), routers: total('router'), tooling: total('tooling'), other: total('other'), fixed, usage, total: fixed + usage },
    components: components(allLines),
    levers: levers(owners, input, prices),
    prices: [...used.values()].sort((a, b) => a.region.localeCompare(b.region) || a.priceId.localeCompare(b.priceId)),
  };
}

const usd = (n: number) => `$${Math.round(n).toLocaleString('en-US')}`;

/**
 * The share of a router's bytes that cross zones over `zones` zones: spread evenly, (z−1)/z; own
 * zone first, the other zones' weight against the own zone's 100 (OTHER_ZONE_WEIGHT each).
 */
export function crossZoneShare(zones: number, affinity: ZoneAffinity): number {
  if (zones <= 1) return 0;
  return affinity === 'spread' ? (zones - 1) / zones : ((zones - 1) * OTHER_ZONE_WEIGHT) / (FULL_WEIGHT + (zones - 1) * OTHER_ZONE_WEIGHT);
}

/** The levers: each computed from the owners' lines, its effect on cost and on quotas. */
function levers(owners: readonly OwnerCost[], input: CostInput, prices: Prices): Lever[] {
  const out: Lever[] = [];
  const routers = owners.filter((o) => o.kind === 'router');
  const routerRegions = Object.keys(input.routerZones);
  const endpointLines = (o: OwnerCost) => o.lines.filter((l) => l.priceId === 'interface-endpoint-az-hour');
  if (routers.length > 1) {
    // The routers' cell endpoints both ways: every region linking every cell, or each cell linked from
    // its own region and its failover region. One of the two is what the templates hold (router.reach).
    const reach = input.reach ?? 'every-region';
    const other: RouterReach = reach === 'every-region' ? 'home-and-failover' : 'every-region';
    const linksUnder = (setting: RouterReach, region: string) =>
      setting === 'every-region' ? input.cells.length : reachedCells(region, input.cells, routerRegions, setting).length;
    const perRegion = routers.map((o) => {
      const lines = endpointLines(o);
      const links = lines.filter((l) => /\/CellLinks\d*/.test(l.stack));
      const zones = o.lines.length && links.length ? links[0].quantity / prices.hoursPerMonth : (input.routerZones[o.id] ?? 1);
      const price = prices.get(o.region, 'interface-endpoint-az-hour', 'interface endpoints').usd;
      return {
        region: o.id,
        other: lines.length - links.length,
        links: links.length,
        under: { [reach]: links.length, [other]: linksUnder(other, o.id) } as Record<RouterReach, number>,
        nowUsd: sum(lines.map((l) => l.monthlyUsd)),
        perEndpointUsd: zones * prices.hoursPerMonth * price,
      };
    });
    const nowUsd = sum(perRegion.map((r) => r.nowUsd));
    const alternativeUsd = sum(perRegion.map((r) => r.nowUsd - (r.links - r.under[other]) * r.perEndpointUsd));
    const quota = input.interfaceEndpointsPerVpc;
    const needs = (n: number) => (n <= 50 ? 'within the default quota of 50' : `needs interfaceEndpointsPerVpc ≥ ${n} (declared: ${quota})`);
    const effect = (setting: RouterReach) => {
      const most = Math.max(...perRegion.map((r) => r.under[setting] + r.other));
      const total = sum(perRegion.map((r) => r.under[setting]));
      const title = setting === 'every-region' ? 'every region reaches every cell' : 'home region plus one failover region';
      return `${title}: ${total} cell endpoints, up to ${most} in one router VPC, ${needs(most)}${setting === reach ? ' (now)' : ''}`;
    };
    out.push({
      id: 'router-reach',
      title: 'Which router regions reach which cells',
      nowUsd,
      alternativeUsd,
      effects: [
        effect('every-region'),
        effect('home-and-failover'),
        "with home plus failover, a request entering a region that does not link its cell is answered 307 to the cell's region (router.regionUrls): one more round trip for clients that enter elsewhere",
      ],
      setting: `router.reach: '${reach}' (docs/cost.md, "Levers")`,
    });
  }
  const nat = owners.flatMap((o) => o.lines.filter((l) => l.priceId === 'nat-gateway-hour').map((l) => ({ o, l })));
  if (nat.length) {
    const vpcs = new Map<string, { usd: number; count: number; one: number }>();
    for (const { o, l } of nat) {
      const key = `${o.kind}:${o.id}:${l.stack}`;
      const v = vpcs.get(key) ?? { usd: 0, count: 0, one: l.monthlyUsd };
      v.usd += l.monthlyUsd;
      v.count += 1;
      vpcs.set(key, v);
    }
    const nowUsd = sum([...vpcs.values()].map((v) => v.usd));
    const alternativeUsd = sum([...vpcs.values()].map((v) => v.one));
    out.push({
      id: 'nat-per-zone',
      title: 'NAT gateways: one per zone, one per VPC, or none',
      nowUsd,
      alternativeUsd,
      effects: [
        `now: ${nat.length} NAT gateways in ${vpcs.size} VPCs, ${usd(nowUsd)} a month (with their public IPv4 addresses priced apart)`,
        `one per VPC: ${vpcs.size} NAT gateways, ${usd(alternativeUsd)} a month; a zone's outage then cuts the other zones' egress`,
        `none (dependencies reached through VPC endpoints or IPv6): ${usd(nowUsd)} a month saved, and the per-GB processing charge with it`,
      ],
      setting:
        "cells: shapes.<name>.natGateways, 'per-zone' (the default) or 'one'; the routers' VPCs keep one per zone; none is not a setting (docs/cost.md, \"Levers\")",
    });
  }
  const crossZone = routers.flatMap((o) => o.usage.filter((u) => u.priceId === 'cross-az-gb'));
  if (crossZone.length) {
    const nowUsd = sum(crossZone.map((u) => u.monthlyUsd));
    const affinity = input.zoneAffinity ?? 'spread';
    const other: ZoneAffinity = affinity === 'spread' ? 'own-zone' : 'spread';
    // The same bytes at the other setting's share of them crossing zones, region by region.
    const alternativeUsd = sum(
      routers.flatMap((o) => {
        const zones = input.routerZones[o.id] ?? 1;
        return o.usage
          .filter((u) => u.priceId === 'cross-az-gb')
          .map((u) => (u.monthlyUsd * crossZoneShare(zones, other)) / crossZoneShare(zones, affinity));
      }),
    );
    out.push({
      id: 'cross-zone',
      title: 'Cross-zone traffic from the router to the cells',
      nowUsd,
      alternativeUsd,
      effects: [
        `spread: router tasks spread requests over every zone's cell endpoint (roundrobin): ${usd(affinity === 'spread' ? nowUsd : alternativeUsd)} a month of cross-zone data at the assumed traffic${affinity === 'spread' ? ' (now)' : ''}`,
        `own-zone: each task's own zone first (weights 100 to 1), the rest only when the own zone's share of a cell is full: ${usd(affinity === 'own-zone' ? nowUsd : alternativeUsd)}${affinity === 'own-zone' ? ' (now)' : ''}; a cell's load in a zone then follows how many router tasks run there`,
      ],
      setting: `router.zoneAffinity: '${affinity}' (docs/router.md, "Zones")`,
    });
  }
  const shapes = new Map<string, { usd: number; cells: number; engine: Set<string> }>();
  for (const o of owners.filter((x) => x.kind === 'cell')) {
    const db = o.lines.filter((l) => l.component.startsWith('Database'));
    const s = shapes.get(o.shape!) ?? { usd: 0, cells: 0, engine: new Set() };
    s.usd += sum(db.map((l) => l.monthlyUsd));
    s.cells += 1;
    for (const l of db) s.engine.add(l.component);
    shapes.set(o.shape!, s);
  }
  if (shapes.size) {
    const nowUsd = sum([...shapes.values()].map((s) => s.usd));
    out.push({
      id: 'database',
      title: 'Aurora or RDS, and the instance class, per shape',
      nowUsd,
      alternativeUsd: nowUsd,
      effects: [...shapes].map(([shape, s]) => `${shape}: ${usd(s.usd / s.cells)} a cell (${[...s.engine].join('; ')}), ${s.cells} cells`),
      setting: 'a fleet setting: shapes.<name>.database (engine, instanceClass, allocatedStorageGiB)',
    });
  }
  return out;
}
