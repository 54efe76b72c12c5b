import { lookup as dnsLookup } from 'dns/promises';
import { isIPv4 } from 'net';
import { MappingDocument, tableCount } from '../../domain/mapping';
import { FULL_WEIGHT, OTHER_ZONE_WEIGHT, weightOf, ZonesDocument } from '../../domain/zones';
import { MAX_ELSEWHERE_REGIONS } from '../../domain/fleet/defaults';
import type { ZoneAffinity } from '../../domain/fleet/types';
import { awayName, bucketNetworks, HOME_TABLES_ENV, MAP_FILES, slotName, zoneServer } from './haproxy-config';
import { bucketRoutes, forEachExactRoute, FROZEN_BACKEND } from './freeze';
import { RuntimeApi } from './runtime-api';

/** Map entries of a document, as HAProxy reads them (`key value` per line). */
export interface MapContents {
  readonly exact: readonly [string, string][];
  readonly prefix: readonly [string, string][];
  readonly buckets: readonly [string, string][];
  /** Home-region key prefix → its table's first bucket (tables after the first; none in schema 1). */
  readonly homes: readonly [string, string][];
  readonly cells: readonly [string, string][];
  readonly meta: readonly [string, string][];
  readonly hosts: readonly [string, string][];
  readonly away: readonly [string, string][];
}

/**
 * Where a router sends other regions' cells while it has no link to them (`router.reach`): each
 * cell's redirect backend, and each backend's URL. Built from the agent's `ELSEWHERE` ({ url: [cell, …] }).
 */
export interface Elsewhere {
  /** Cell → its redirect backend (`away<i>`). */
  readonly backends: ReadonlyMap<string, string>;
  /** The away map's entries: backend → URL, in backend order. */
  readonly urls: readonly [string, string][];
}

/** `{ url: [cell, …] }` as an Elsewhere: one backend per URL, in URL order; a cell under two URLs is refused. */
export function elsewhereOf(byUrl: Readonly<Record<string, readonly string[]>> = {}): Elsewhere {
  const urls = Object.keys(byUrl).sort();
  if (urls.length > MAX_ELSEWHERE_REGIONS)
    throw new Error(`${urls.length} regions to send requests to; the router has ${MAX_ELSEWHERE_REGIONS} redirect backends`);
  const backends = new Map<string, string>();
  urls.forEach((url, i) => {
    for (const cell of byUrl[url]) {
      if (backends.has(cell)) throw new Error(`cell ${cell} is sent to two regions' URLs; each cell has one home region`);
      backends.set(cell, awayName(i));
    }
  });
  return { backends, urls: urls.map((url, i) => [awayName(i), url]) };
}

const NOWHERE: Elsewhere = { backends: new Map(), urls: [] };

/**
 * Expands a document into map entries; `slots` says which backend slot serves each cell. Route
 * maps name slots, not cells, so HAProxy needs no second lookup per request. Frozen keys and
 * buckets name the `frozen` backend (see freeze.ts).
 */
export function mapContents(doc: MappingDocument, slots: ReadonlyMap<string, number>, elsewhere: Elsewhere = NOWHERE): MapContents {
  // One name string per slot, shared by every entry routed to it.
  const names = new Map<string, string>(elsewhere.backends);
  const slotOf = (cell: string) => {
    let name = names.get(cell);
    if (name === undefined) {
      const slot = slots.get(cell);
      if (slot === undefined) throw new Error(`cell ${cell} has no backend slot`);
      names.set(cell, (name = slotName(slot)));
    }
    return name;
  };
  const exact: [string, string][] = [];
  forEachExactRoute(doc, (key, cell) => exact.push([key, cell === undefined ? FROZEN_BACKEND : slotOf(cell)]));
  return {
    exact,
    prefix: Object.entries(doc.overrides.prefix).map(([prefix, cell]) => [prefix, slotOf(cell)]),
    buckets: bucketRoutes(doc).flatMap((range) =>
      bucketNetworks(range.from, range.to).map((net): [string, string] => [net, range.cell === undefined ? FROZEN_BACKEND : slotOf(range.cell)]),
    ),
    cells: slotRegistry(slots),
    homes: (doc.homes?.tables ?? []).flatMap((table, t) =>
      t === 0 ? [] : table.prefixes.map((p): [string, string] => [p, String(t * doc.bucketCount)]),
    ),
    meta: [['version', String(doc.version)]],
    hosts: [...slots.entries()]
      .filter(([cell]) => doc.cells[cell])
      .map(([cell, slot]) => [slotName(slot), endpointAddress(doc.cells[cell].endpoint).host]),
    away: elsewhere.urls,
  };
}

/** The cells map: slot → cell, the agent's record of which slot serves which cell. */
function slotRegistry(slots: ReadonlyMap<string, number>): [string, string][] {
  return [...slots.entries()].map(([cell, slot]) => [slotName(slot), cell]);
}

/** A map file's text in pieces of about 64 KiB, for a file written without holding its whole text. */
export function* mapFileChunks(entries: readonly [string, string][]): Generator<string> {
  let chunk = '';
  for (const [k, v] of entries) {
    chunk += `${k} ${v}\n`;
    if (chunk.length >= 65536) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}

/** A parsed cell endpoint. */
export function endpointAddress(endpoint: string): { host: string; port: number; tls: boolean } {
  const url = new URL(endpoint);
  const tls = url.protocol === 'https:';
  return { host: url.hostname, port: Number(url.port || (tls ? 443 : 80)), tls };
}

/** IPv4 networks a cell endpoint can never be in AWS: loopback, "this network", link-local (instance and task metadata). */
export const FORBIDDEN_NETWORKS = ['127.0.0.0/8', '0.0.0.0/8', '169.254.0.0/16', '255.255.255.255/32'] as const;

const ipNumber = (ip: string) => ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);

/** Whether the IPv4 address `ip` lies in `cidr` (`10.0.1.0/24`). */
export function inNetwork(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/');
  const size = 2 ** (32 - Number(bits ?? 32));
  return Math.floor(ipNumber(ip) / size) === Math.floor(ipNumber(base) / size);
}

/** A document that is valid but cannot be applied here (an endpoint does not resolve, too few slots): rejected like an invalid one, before anything changes. */
export class UnappliableDocumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnappliableDocumentError';
  }
}

/** A cell endpoint's name does not exist here (NXDOMAIN): this router VPC has no link to the cell. */
export class EndpointNotFoundError extends UnappliableDocumentError {
  constructor(message: string) {
    super(message);
    this.name = 'EndpointNotFoundError';
  }
}

/** The resolver's answer that a name does not exist (as opposed to a failed or timed-out lookup). */
const NOT_FOUND_CODES = new Set(['ENOTFOUND', 'ENODATA']);

const PAYLOAD_BYTES = 12 * 1024; // under HAProxy's default 16 KiB buffer, with room for the command line

export interface ApplyOptions {
  readonly stateDir: string;
  /** Backend slots configured in HAProxy. */
  readonly slots: number;
  /** Servers per slot configured in HAProxy (one per zonal address of a cell's endpoint). @default 3 */
  readonly zones?: number;
  /** Resolves an endpoint host to all its IPv4 addresses (one per zone for an interface endpoint). @default DNS */
  readonly resolve?: (host: string) => Promise<string[]>;
  /** Networks of this router task's own zone (its subnet): addresses there are tried first. */
  readonly localNetworks?: readonly string[];
  /**
   * The router VPC's subnets by AZ ID, in the fleet's zone order: server z<i> of every cell is its
   * endpoint's address in the i-th zone (an interface endpoint has one network interface, so one
   * address, in each subnet it is placed in), and takes that zone's weight from the zones document.
   * Addresses in no listed subnet take the servers left, at full weight. @default - servers by address, no zone weights
   */
  readonly zoneNetworks?: Readonly<Record<string, readonly string[]>>;
  /** Allow loopback and link-local cell addresses (cellctl router local and tests only). @default false */
  readonly allowLoopback?: boolean;
  /**
   * Concurrent requests per cell (the fleet's `router.cellMaxConn`): split over the servers that have
   * an address, so a cell whose endpoint has fewer zonal addresses than servers keeps its whole
   * limit. @default the split HAProxy's configuration has (over every zone)
   */
  readonly cellMaxConn?: number;
  /** How long to wait for a newly enabled cell's health check before committing. @default 3000 */
  readonly healthWaitMs?: number;
  /**
   * Other regions' cells by the URL of their region (`router.regionUrls`). Such a cell is served
   * through a slot while its endpoint name exists in this router VPC (the region links it), and
   * answered `307` to its region's URL while the name does not exist (NXDOMAIN: `router.reach`
   * does not link it here, or its link is being removed). @default - none: every cell must resolve
   */
  readonly elsewhere?: Readonly<Record<string, readonly string[]>>;
  /**
   * `own-zone` (router.zoneAffinity): each cell's server in this task's own zone (the zone whose
   * `zoneNetworks` list this task's subnet, from `localNetworks`) weighs 100, each other zone's 1,
   * while every zone is fully in or fully drained; the servers' maxconn stay the even split, so
   * requests go to the other zones once the own zone's share of the cell is full. @default 'spread'
   */
  readonly zoneAffinity?: ZoneAffinity;
}

/** Where one cell's servers point. */
export interface Target {
  readonly addresses: readonly (string | undefined)[];
  readonly port: number;
  readonly tls: boolean;
}

/** Everything an apply needs, worked out before HAProxy is touched. */
export interface ApplyPlan {
  readonly doc: MappingDocument;
  readonly before: ReadonlyMap<string, number>;
  readonly slots: ReadonlyMap<string, number>;
  /** Per cell: the addresses for servers z0, z1, … (by zone, or own zone first; undefined: no address for that server), the port and whether it is TLS. */
  readonly targets: ReadonlyMap<string, Target>;
  /** Other regions' cells not linked here (their names do not exist): answered 307 to their region. */
  readonly away: ReadonlySet<string>;
}

async function dnsResolveAll(host: string): Promise<string[]> {
  return (await dnsLookup(host, { all: true, family: 4 })).map((a) => a.address);
}

/**
 * Drives a running HAProxy to `doc` without a reload: assigns backend slots to cells (keeping
 * existing ones), points each slot's zonal servers at the addresses of its endpoint, then swaps every
 * map atomically (prepare → add in chunks → check the staged count → commit) and reads every map back
 * to verify what was committed. Everything that can fail on the document itself (an endpoint that does
 * not resolve or resolves somewhere a cell cannot be, too few slots) is checked by `plan` before
 * anything changes. A new cell always gets a slot no committed route names, and a removed cell's slot
 * leaves service only after the routes moved away, so no request ever reaches a slot pointed at the
 * wrong cell. Returns the slot assignment now in effect.
 */
export class MappingApplier {
  /** The zones document whose weights the servers carry (ZoneWeightsFollower sets it). */
  private zonesDoc?: ZonesDocument;
  private readonly elsewhere: Elsewhere;

  constructor(
    private readonly api: RuntimeApi,
    private readonly options: ApplyOptions,
  ) {
    this.elsewhere = elsewhereOf(options.elsewhere);
    const zones = options.zoneNetworks ?? {};
    this.ownZone =
      options.zoneAffinity === 'own-zone'
        ? Object.keys(zones).find((zone) => zones[zone].some((n) => (options.localNetworks ?? []).includes(n)))
        : undefined;
  }

  /** This task's zone when own-zone affinity is on and the zone is known (its subnet is listed); else undefined. */
  public readonly ownZone?: string;

  /**
   * Where each cell of `doc` is served from now: its target (resolved addresses), or, for another
   * region's cell whose endpoint name does not exist here, that region (the `away` set). A name
   * that does not exist for a cell of no other region, or any other lookup failure, is an
   * UnappliableDocumentError, as before reach existed.
   */
  private async resolveCells(doc: MappingDocument): Promise<{ targets: Map<string, Target>; away: Set<string> }> {
    const targets = new Map<string, Target>();
    const away = new Set<string>();
    await Promise.all(
      Object.keys(doc.cells).map(async (cell) => {
        const { host, port, tls } = endpointAddress(doc.cells[cell].endpoint);
        try {
          targets.set(cell, { addresses: await this.addressesOf(cell, host), port, tls });
        } catch (error) {
          if (error instanceof EndpointNotFoundError && this.elsewhere.backends.has(cell)) away.add(cell);
          else throw error;
        }
      }),
    );
    return { targets, away };
  }

  /** The AZ ID of each server z0, z1, … (undefined: a server whose address is in no listed zone). */
  public get serverZones(): readonly (string | undefined)[] {
    const listed = Object.keys(this.options.zoneNetworks ?? {});
    return Array.from({ length: this.zones }, (_, z) => listed[z]);
  }

  /** The zones document whose weights every server pointed from now on takes (no HAProxy call). */
  public useZones(doc: ZonesDocument | undefined): void {
    this.zonesDoc = doc;
  }

  private get zones(): number {
    return this.options.zones ?? 3;
  }

  /** Whether HAProxy's configuration routes home tables (it sets HOME_TABLES_ENV and has the homes map). */
  private async routesHomeTables(): Promise<boolean> {
    return (await this.api.env(HOME_TABLES_ENV)) === '1';
  }

  private path(name: keyof typeof MAP_FILES): string {
    return `${this.options.stateDir}/${MAP_FILES[name]}`;
  }

  /** The slot assignment HAProxy currently has (from its cells map, slot → cell). */
  public async currentSlots(): Promise<Map<string, number>> {
    const entries = await this.api.showMap(this.path('cells'));
    return new Map([...entries].map(([slot, cell]) => [cell, Number(slot.replace(/^slot/, ''))]));
  }

  /** The mapping version HAProxy is serving, if any. */
  public async currentVersion(): Promise<number | undefined> {
    const version = (await this.api.showMap(this.path('meta'))).get('version');
    return version === undefined ? undefined : Number(version);
  }

  /**
   * All addresses of a cell's endpoint host, checked, one per server: with `zoneNetworks` the
   * address in each listed zone at that zone's server (undefined where the endpoint has none) and
   * the others after; else this task's own zone first.
   */
  public async addressesOf(cell: string, host: string): Promise<(string | undefined)[]> {
    const resolve = this.options.resolve ?? dnsResolveAll;
    let found: string[];
    try {
      found = await resolve(host);
    } catch (error) {
      const message = `cell ${cell}: endpoint host ${host} does not resolve (${(error as Error).message})`;
      throw NOT_FOUND_CODES.has((error as { code?: string }).code ?? '') ? new EndpointNotFoundError(message) : new UnappliableDocumentError(message);
    }
    const addresses = [...new Set(found)].filter((a) => isIPv4(a)).sort();
    if (addresses.length === 0) throw new UnappliableDocumentError(`cell ${cell}: endpoint host ${host} has no IPv4 address`);
    if (!this.options.allowLoopback) {
      const bad = addresses.find((a) => FORBIDDEN_NETWORKS.some((n) => inNetwork(a, n)));
      if (bad)
        throw new UnappliableDocumentError(
          `cell ${cell}: endpoint host ${host} resolves to ${bad}, a loopback, link-local or metadata address no cell endpoint can have`,
        );
    }
    const local = (a: string) => (this.options.localNetworks ?? []).some((n) => inNetwork(a, n));
    const ordered = [...addresses.filter(local), ...addresses.filter((a) => !local(a))];
    const zoneNetworks = this.options.zoneNetworks;
    if (!zoneNetworks) return ordered.slice(0, this.zones);
    const servers: (string | undefined)[] = this.serverZones.map((zone) =>
      zone === undefined ? undefined : ordered.find((a) => zoneNetworks[zone].some((n) => inNetwork(a, n))),
    );
    // Addresses in no listed subnet (an endpoint outside the router VPC's endpoint subnets) take the
    // servers left; they carry no zone's weight (zoneOfAddress).
    const unzoned = ordered.filter((a) => !servers.includes(a));
    for (let z = 0; z < servers.length && unzoned.length > 0; z++) if (servers[z] === undefined) servers[z] = unzoned.shift();
    return servers;
  }

  /** The listed zone whose subnets hold `address`, if any. */
  private zoneOfAddress(address: string): string | undefined {
    const networks = this.options.zoneNetworks ?? {};
    return Object.keys(networks).find((zone) => networks[zone].some((n) => inNetwork(address, n)));
  }

  /** Checks `doc` against this router (slots, endpoints) without changing anything. */
  public async plan(doc: MappingDocument): Promise<ApplyPlan> {
    if (tableCount(doc) > 1 && !(await this.routesHomeTables()))
      throw new UnappliableDocumentError(
        `the mapping has ${tableCount(doc)} home tables, but this router's configuration routes one (no ${HOME_TABLES_ENV}): deploy the routers with the fleet's \`homes\` first, then publish the document (docs/capacity.md, "Home regions")`,
      );
    const before = await this.currentSlots();
    const { targets, away } = await this.resolveCells(doc);
    const cells = Object.keys(doc.cells).filter((c) => !away.has(c));
    const slots = new Map<string, number>();
    for (const cell of cells) if (before.has(cell)) slots.set(cell, before.get(cell)!);
    const used = new Set([...before.values()]);
    let next = 0;
    for (const cell of cells.filter((c) => !slots.has(c))) {
      while (used.has(next)) next++;
      if (next >= this.options.slots) {
        throw new UnappliableDocumentError(
          `the mapping needs ${cells.length} cells but this router has ${this.options.slots} backend slots (some still held by removed cells); raise router.slots in the fleet (or --slots of cellctl router local)`,
        );
      }
      slots.set(cell, next);
      used.add(next);
    }
    return { doc, before, slots, targets, away };
  }

  private async replaceMap(name: keyof typeof MAP_FILES, entries: readonly [string, string][]): Promise<void> {
    const map = this.path(name);
    const prepared = await this.api.send(`prepare map ${map}`);
    const version = /New version created: (\d+)/.exec(prepared)?.[1];
    if (!version) throw new Error(`HAProxy refused to prepare ${map}: ${prepared.trim()}`);
    let chunk = '';
    const flush = async () => {
      if (chunk) await this.api.expectOk(`add map @${version} ${map} <<\n${chunk}\n`);
      chunk = '';
    };
    for (const [key, value] of entries) {
      chunk += `${key} ${value}\n`;
      if (chunk.length >= PAYLOAD_BYTES) await flush();
    }
    await flush();
    // Committing a version that received fewer entries than sent would silently drop routes.
    let count = 0;
    await this.api.sendLines(`show map @${version} ${map}`, (line) => {
      if (line.startsWith('0x')) count++;
    });
    if (count !== entries.length) throw new Error(`${map}: staged ${count} entries, expected ${entries.length}; not committed`);
    await this.api.expectOk(`commit map @${version} ${map}`);
  }

  /**
   * Reads the map back as it streams in and compares it entry by entry, in order: HAProxy lists a
   * map's entries in the order they were added, which is the order they were sent. Nothing of the
   * answer is kept, so checking a map costs no memory in proportion to it.
   */
  private async verify(name: keyof typeof MAP_FILES, entries: readonly [string, string][]): Promise<void> {
    let i = 0;
    let wrong: string | undefined;
    await this.api.sendLines(`show map ${this.path(name)}`, (line) => {
      // "0x55d1c… key value"
      if (!line.startsWith('0x')) return;
      const first = line.indexOf(' ');
      const second = line.indexOf(' ', first + 1);
      const key = line.slice(first + 1, second);
      const value = line.slice(second + 1);
      const expected = entries[i++];
      if (wrong === undefined && (expected === undefined || expected[0] !== key || expected[1] !== value))
        wrong = `${key} → ${value}${expected ? ` where ${expected[0]} → ${expected[1]} was committed` : ', not committed'}`;
    });
    if (i !== entries.length || wrong) {
      throw new Error(`${this.path(name)} does not hold what was committed (${i} entries, expected ${entries.length}${wrong ? `; ${wrong}` : ''})`);
    }
  }

  private async waitUp(slot: number): Promise<boolean> {
    const deadline = Date.now() + (this.options.healthWaitMs ?? 3000);
    for (;;) {
      if (
        (await this.api.stats()).some(
          (r) => r.pxname === slotName(slot) && r.svname !== 'BACKEND' && r.svname !== 'FRONTEND' && r.status.startsWith('UP'),
        )
      )
        return true;
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Points the zonal servers of `slot` at `target` (address, port, TLS on or off), enables servers
   * that have an address and puts the others in maintenance. Returns whether a server was enabled.
   */
  private async pointSlot(slot: number, target: Target, stats: Record<string, string>[]): Promise<boolean> {
    let enabled = false;
    const weights = this.weightsOf(target);
    for (let z = 0; z < this.zones; z++) {
      const server = `${slotName(slot)}/${zoneServer(z)}`;
      const row = stats.find((r) => r.pxname === slotName(slot) && r.svname === zoneServer(z));
      const address = target.addresses[z];
      if (address === undefined) {
        if (!row?.status.startsWith('MAINT')) await this.api.expectOk(`set server ${server} state maint`);
        continue;
      }
      await this.api.expectOk(`set server ${server} addr ${address} port ${target.port}`, /^\s*$|changed from|no need to change/i);
      await this.api.expectOk(`set server ${server} ssl ${target.tls ? 'on' : 'off'}`, /^\s*$|ssl setting updated/i);
      await this.setWeight(server, row, weights[z]);
      if (!row || row.status.startsWith('MAINT')) {
        await this.api.expectOk(`set server ${server} state ready`);
        enabled = true;
      }
    }
    return enabled;
  }

  /**
   * Each server's weight (its address's zone's, 0–100; an address in no listed zone at 100) and maxconn: the cell's `cellMaxConn` split over the
   * servers with an address in proportion to their weights, so the servers left serving a drained
   * zone's share hold the cell's whole limit between them. A drained server keeps an even split's
   * maxconn (0 would mean no limit), which it does not use: it gets no new request.
   */
  private weightsOf(target: Target): { weight: number; maxconn: number | undefined }[] {
    const zoned = (z: number) => {
      const address = target.addresses[z];
      if (address === undefined) return 0;
      const zone = this.zoneOfAddress(address);
      return zone === undefined ? FULL_WEIGHT : weightOf(this.zonesDoc, zone);
    };
    // A cell reachable only through drained zones keeps them (fail open): a drain never leaves a
    // cell's tenants without a path, it only moves them off the zone when another zone can take them.
    const open = Array.from({ length: this.zones }, (_, z) => zoned(z)).every((w) => w === 0);
    const weight = (z: number) => (open && target.addresses[z] !== undefined ? FULL_WEIGHT : zoned(z));
    const total = Array.from({ length: this.zones }, (_, z) => weight(z)).reduce((a, b) => a + b, 0);
    const withAddress = target.addresses.filter((a) => a !== undefined).length;
    const limit = this.options.cellMaxConn;
    // Own-zone affinity: only while every zone is wholly in or out (a partial drain's steps are the
    // zones document's weights alone) and the own zone serves this cell.
    const zoneOf = (z: number) => (target.addresses[z] === undefined ? undefined : this.zoneOfAddress(target.addresses[z]!));
    const whole = Array.from({ length: this.zones }, (_, z) => weight(z)).every((w) => w === 0 || w === FULL_WEIGHT);
    const own =
      this.ownZone !== undefined && whole && Array.from({ length: this.zones }, (_, z) => z).some((z) => zoneOf(z) === this.ownZone && weight(z) > 0);
    const routed = (z: number) => (!own || weight(z) === 0 ? weight(z) : zoneOf(z) === this.ownZone ? FULL_WEIGHT : OTHER_ZONE_WEIGHT);
    return Array.from({ length: this.zones }, (_, z) => ({
      weight: routed(z),
      maxconn:
        limit === undefined
          ? undefined
          : weight(z) === 0 || total === 0
            ? Math.max(1, Math.ceil(limit / Math.max(1, withAddress)))
            : Math.max(1, Math.ceil((limit * weight(z)) / total)),
    }));
  }

  private async setWeight(
    server: string,
    row: Record<string, string> | undefined,
    { weight, maxconn }: { weight: number; maxconn: number | undefined },
  ): Promise<void> {
    if (maxconn !== undefined && Number(row?.slim) !== maxconn) await this.api.expectOk(`set maxconn server ${server} ${maxconn}`);
    if (row?.weight === undefined || Number(row.weight) !== weight) await this.api.expectOk(`set server ${server} weight ${weight}`, /^\s*$/);
  }

  /**
   * Puts `doc`'s zone weights in force on every server of the cells in force (and on every server
   * pointed from now on): a zone at 0 gets no new request, requests in flight finish. Returns the
   * servers whose weight changed.
   */
  public async applyZones(doc: ZonesDocument | undefined, mapping: MappingDocument | undefined): Promise<number> {
    this.zonesDoc = doc;
    if (!this.options.zoneNetworks || !mapping) return 0;
    const slots = await this.currentSlots();
    const stats = await this.api.stats();
    let changed = 0;
    for (const [cell, slot] of slots) {
      if (!mapping.cells[cell]) continue;
      const addresses = Array.from({ length: this.zones }, (_, z) =>
        stats.find((r) => r.pxname === slotName(slot) && r.svname === zoneServer(z)),
      ).map((r) => (r && !r.status.startsWith('MAINT') ? r.addr?.replace(/:\d+$/, '') : undefined));
      const weights = this.weightsOf({ addresses, port: 0, tls: false });
      for (let z = 0; z < this.zones; z++) {
        if (addresses[z] === undefined) continue;
        const row = stats.find((r) => r.pxname === slotName(slot) && r.svname === zoneServer(z));
        if (Number(row?.weight) !== weights[z].weight) changed++;
        await this.setWeight(`${slotName(slot)}/${zoneServer(z)}`, row, weights[z]);
      }
    }
    return changed;
  }

  /**
   * Re-resolves the endpoints of the cells in force and moves zonal servers whose addresses changed
   * (an interface endpoint gained or lost a zone). Maps are untouched; a host that does not resolve
   * keeps its current addresses. Returns the cells whose servers changed (`moved`), and the other
   * regions' cells that changed sides (`reach`: a slotted one whose name went, an unslotted one whose
   * name appeared), for which the agent applies the document in force again. One lookup per cell.
   */
  public async refreshAddresses(doc: MappingDocument): Promise<{ readonly moved: string[]; readonly reach: string[] }> {
    const slots = await this.currentSlots();
    const stats = await this.api.stats();
    const moved: string[] = [];
    const reach: string[] = [];
    for (const [cell, slot] of slots) {
      if (!doc.cells[cell]) continue;
      const { host, port, tls } = endpointAddress(doc.cells[cell].endpoint);
      let addresses: (string | undefined)[];
      try {
        addresses = await this.addressesOf(cell, host);
      } catch (error) {
        if (error instanceof EndpointNotFoundError && this.elsewhere.backends.has(cell)) reach.push(cell);
        continue;
      }
      const current = Array.from({ length: this.zones }, (_, z) => stats.find((r) => r.pxname === slotName(slot) && r.svname === zoneServer(z))).map(
        (r) => (r && !r.status.startsWith('MAINT') ? r.addr?.replace(/:\d+$/, '') : undefined),
      );
      if (current.every((a, z) => addresses[z] === a)) continue;
      await this.pointSlot(slot, { addresses, port, tls }, stats);
      moved.push(cell);
    }
    // Other regions' cells sent away: linked here now?
    const away = Object.keys(doc.cells).filter((cell) => this.elsewhere.backends.has(cell) && !slots.has(cell));
    await Promise.all(
      away.map(async (cell) => {
        try {
          await this.addressesOf(cell, endpointAddress(doc.cells[cell].endpoint).host);
          reach.push(cell);
        } catch {
          // still not linked here (or the lookup failed): stays sent to its region
        }
      }),
    );
    return { moved, reach: reach.sort() };
  }

  /** Checks (`plan`) and then applies `doc`. An `UnappliableDocumentError` means nothing was changed. */
  public async apply(doc: MappingDocument): Promise<Applied> {
    return this.execute(await this.plan(doc));
  }

  public async execute({ doc, before, slots, targets, away }: ApplyPlan): Promise<Applied> {
    const cells = Object.keys(doc.cells).filter((c) => !away.has(c));
    // The registry and the hosts map first hold old and new cells (a crash here leaves no slot free
    // that routes still name, and a TLS server enabled below already has its SNI), then the routes,
    // then the exact cell set.
    const union = new Map([...before, ...slots]);
    const contents = mapContents(doc, slots, {
      backends: new Map([...this.elsewhere.backends].filter(([cell]) => away.has(cell))),
      urls: this.elsewhere.urls,
    });
    // The redirect backends' URLs before any route names them.
    await this.replaceMap('away', contents.away);
    const liveHosts = await this.api.showMap(this.path('hosts'));
    const hosts = new Map([...liveHosts, ...contents.hosts]);
    await this.replaceMap(
      'hosts',
      [...hosts].filter(([slot]) => [...union.values()].some((s) => slotName(s) === slot)),
    );
    // Point every slot at its cell's current endpoint (a changed endpoint moves in place), and take
    // servers out of maintenance: new cells, and every cell after a HAProxy restart.
    const stats = await this.api.stats();
    for (const cell of cells) {
      const slot = slots.get(cell)!;
      if (await this.pointSlot(slot, targets.get(cell)!, stats)) await this.waitUp(slot);
    }
    await this.replaceMap('cells', slotRegistry(union));
    // The homes map after the buckets: a table the new buckets map adds is routed only once it is
    // there (until then its keys take table 0, whose ranges a converted document repeats).
    const homes = await this.routesHomeTables();
    for (const name of ['exact', 'prefix', 'buckets', ...(homes ? (['homes'] as const) : []), 'meta'] as const) {
      await this.replaceMap(name, contents[name]);
    }
    await this.replaceMap('cells', contents.cells);
    await this.replaceMap('hosts', contents.hosts);
    for (const name of ['exact', 'prefix', 'buckets', 'cells', 'meta', 'hosts', 'away', ...(homes ? (['homes'] as const) : [])] as const)
      await this.verify(name, contents[name]);
    for (const [cell, slot] of before) {
      if (!slots.has(cell)) {
        for (let z = 0; z < this.zones; z++) await this.api.expectOk(`set server ${slotName(slot)}/${zoneServer(z)} state maint`);
      }
    }
    return { slots: new Map(slots), contents };
  }
}

/** What an apply put in force: the slot of each cell, and the maps' entries (the agent persists them as they are). */
export interface Applied {
  readonly slots: Map<string, number>;
  readonly contents: MapContents;
}
