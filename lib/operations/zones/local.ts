import * as fs from 'fs';
import * as path from 'path';
import { writeFileAtomic } from '../../domain/files';
import { FULL_WEIGHT, initialZones, parseZones, undrainSteps, weightOf, withZoneWeight, ZonesDocument } from '../../domain/zones';
import { zoneServer } from '../../runtime/router/haproxy-config';
import { RuntimeApi } from '../../runtime/router/runtime-api';
import type { FleetFile, FleetFileZones } from '../local-fleet/fleet';

/** What the routers' zonal servers of one zone add up to, over every router (lane) and cell. */
export interface ZoneCounters {
  /** Sessions (requests sent) since HAProxy started: new requests are the difference of two readings. */
  readonly sessions: number;
  /** Requests at the zone's servers now. */
  readonly inFlight: number;
  /** The weights its servers carry (one per router and cell), distinct. */
  readonly weights: readonly number[];
  readonly responses5xx: number;
  /** Servers whose health check fails. */
  readonly down: number;
  readonly servers: number;
}

/** The running fleet's zones (fleet.json), or why there are none. */
export function fleetZones(fleet: FleetFile, stateDir: string): FleetFileZones {
  if (!fleet.zones)
    throw new Error(
      `the local fleet in ${stateDir} runs each cell in one zone; start it with zones (\`cellctl fleet local --zones 3 --fresh\`) to drain one`,
    );
  return fleet.zones;
}

/** The local fleet's zones document (every zone at its full share when there is none yet). */
export function readLocalZones(zones: FleetFileZones): ZonesDocument {
  if (!fs.existsSync(zones.file)) return initialZones(zones.region, zones.ids);
  const parsed = parseZones(fs.readFileSync(zones.file, 'utf8'), { region: zones.region, knownZones: zones.ids });
  if (!parsed.ok)
    throw new Error(
      `${zones.file} is not a valid zones document (${parsed.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}); the routers keep their last-known-good: fix it or delete it (every zone at its full share)`,
    );
  return parsed.document;
}

/** The runtime API of each router of the fleet (one, or one per lane). */
export function fleetRouterApis(fleet: FleetFile): RuntimeApi[] {
  const routerDir = path.join(path.dirname(fleet.mappingFile), 'router');
  const dirs = fleet.lanes ? fleet.lanes.routers.map((r) => path.join(routerDir, `lane-${r.lane}`)) : [routerDir];
  return dirs.filter((d) => fs.existsSync(path.join(d, 'admin.sock'))).map((d) => new RuntimeApi(path.join(d, 'admin.sock')));
}

/** Every zone's counters, summed over the routers' cell servers that are in use (not in maintenance). */
export async function zoneCounters(apis: readonly RuntimeApi[], zoneIds: readonly string[]): Promise<Map<string, ZoneCounters>> {
  const totals = new Map(zoneIds.map((z) => [z, { sessions: 0, inFlight: 0, weights: new Set<number>(), responses5xx: 0, down: 0, servers: 0 }]));
  for (const api of apis) {
    for (const row of await api.stats()) {
      if (!/^slot\d+$/.test(row.pxname) || row.status.startsWith('MAINT')) continue;
      const z = zoneIds.findIndex((_, i) => row.svname === zoneServer(i));
      if (z < 0) continue;
      const t = totals.get(zoneIds[z])!;
      t.sessions += Number(row.stot || 0);
      t.inFlight += Number(row.scur || 0);
      t.weights.add(Number(row.weight));
      t.responses5xx += Number(row.hrsp_5xx || 0);
      t.down += row.status.startsWith('DOWN') ? 1 : 0;
      t.servers += 1;
    }
  }
  return new Map([...totals].map(([z, t]) => [z, { ...t, weights: [...t.weights].sort((a, b) => a - b) }]));
}

/** One weight change, measured at the routers. */
export interface ZoneChangeResult {
  readonly zone: string;
  readonly version: number;
  readonly weightBefore: number;
  readonly weight: number;
  /** From writing the document to every router's servers of the zone carrying the weight. */
  readonly appliedMs: number;
  /** The routers' poll interval. */
  readonly pollMs: number;
  /** New requests in the measurement after it applied: in all, and at the zone's servers. */
  readonly measured: { readonly ms: number; readonly requests: number; readonly inZone: number };
  /** The zone's share of new requests its weight gives it (weight over the weights' sum). */
  readonly expectedShare: number;
  /** Requests at the zone's servers when it applied, and (for a drain to 0) when the last of them had finished. */
  readonly inFlightAtChange: number;
  readonly inFlightDoneMs?: number;
}

export interface ZoneChangeOptions {
  readonly zones: FleetFileZones;
  readonly apis: readonly RuntimeApi[];
  readonly zone: string;
  readonly weight: number;
  readonly reason?: string;
  /** How long new requests are counted after the change applied. @default 3000 */
  readonly measureMs?: number;
  /** The routers' poll interval (what "within one poll" is against). @default 500 */
  readonly pollMs?: number;
  /** How long to wait for the routers to apply it. @default 30000 */
  readonly timeoutMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const sum = (counters: Map<string, ZoneCounters>) => [...counters.values()].reduce((n, c) => n + c.sessions, 0);

/**
 * Sets `zone`'s weight in the local fleet's zones document (the version raised, written atomically)
 * and measures it at the routers: when every router's servers of the zone carry the weight, and of
 * the new requests in the next `measureMs`, how many still reached the zone.
 */
export async function changeLocalZone(o: ZoneChangeOptions): Promise<ZoneChangeResult> {
  const sleep = o.sleep ?? defaultSleep;
  if (o.apis.length === 0)
    throw new Error('no router of the local fleet answers on its runtime API; is the fleet running (`cellctl fleet local --zones 3`)?');
  const doc = readLocalZones(o.zones);
  const next = withZoneWeight(doc, o.zone, o.weight, { zones: o.zones.ids, reason: o.reason });
  const started = Date.now();
  writeFileAtomic(o.zones.file, `${JSON.stringify(next, null, 2)}\n`);
  const timeout = o.timeoutMs ?? 30_000;
  let at: Map<string, ZoneCounters>;
  for (;;) {
    at = await zoneCounters(o.apis, o.zones.ids);
    const c = at.get(o.zone)!;
    if (c.servers > 0 && c.weights.length === 1 && c.weights[0] === o.weight) break;
    if (Date.now() - started > timeout)
      throw new Error(
        `the routers did not put version ${next.version} in force within ${timeout / 1000} s (the zone's servers carry weights ${c.weights.join(', ') || 'none'}); it is written (${o.zones.file}) and they apply it when they can: see logs/router*.log`,
      );
    await sleep(10);
  }
  const appliedMs = Date.now() - started;
  const inFlightAtChange = at.get(o.zone)!.inFlight;
  const measureMs = o.measureMs ?? 3000;
  let inFlightDoneMs: number | undefined;
  const measureStart = Date.now();
  let last = at;
  while (Date.now() - measureStart < measureMs) {
    await sleep(Math.min(50, measureMs));
    last = await zoneCounters(o.apis, o.zones.ids);
    if (o.weight === 0 && inFlightDoneMs === undefined && last.get(o.zone)!.inFlight === 0) inFlightDoneMs = Date.now() - started;
  }
  const weights = o.zones.ids.map((z) => (z === o.zone ? o.weight : weightOf(next, z)));
  const total = weights.reduce((a, b) => a + b, 0);
  return {
    zone: o.zone,
    version: next.version,
    weightBefore: weightOf(doc, o.zone),
    weight: o.weight,
    appliedMs,
    pollMs: o.pollMs ?? 500,
    measured: { ms: Date.now() - measureStart, requests: sum(last) - sum(at), inZone: last.get(o.zone)!.sessions - at.get(o.zone)!.sessions },
    expectedShare: total === 0 ? 0 : o.weight / total,
    inFlightAtChange,
    ...(inFlightDoneMs !== undefined ? { inFlightDoneMs } : {}),
  };
}

export interface UndrainOptions extends Omit<ZoneChangeOptions, 'weight'> {
  /** Percent steps (undrainSteps). */
  readonly steps?: readonly number[];
  /** How long each step bakes before the next, watching the zone's servers. @default 10000 */
  readonly bakeMs?: number;
  /** Each step's result as it comes. */
  readonly onStep?: (step: ZoneChangeResult) => void;
}

export interface UndrainResult {
  readonly steps: readonly ZoneChangeResult[];
  /** Set when a bake failed: why, and the weight the zone was put back to. */
  readonly failed?: { readonly atWeight: number; readonly reason: string; readonly backTo: number };
}

/**
 * Brings a zone back in steps: each step is a weight change (measured as `changeLocalZone`), then a
 * bake watching the zone's servers at every router; a server that fails its health check or
 * answers 5xx for more than 1% of the zone's requests in the bake puts the zone back to the weight
 * it had before the undrain, and stops.
 */
export async function undrainLocalZone(o: UndrainOptions): Promise<UndrainResult> {
  const sleep = o.sleep ?? defaultSleep;
  const startWeight = weightOf(readLocalZones(o.zones), o.zone);
  const weights = undrainSteps(startWeight, o.steps);
  if (weights.length === 0) throw new Error(`zone ${o.zone} is at ${startWeight}% already; nothing to undrain`);
  const steps: ZoneChangeResult[] = [];
  for (const weight of weights) {
    const step = await changeLocalZone({ ...o, weight, reason: weight < FULL_WEIGHT ? (o.reason ?? 'undrain') : undefined });
    steps.push(step);
    o.onStep?.(step);
    if (weight === FULL_WEIGHT) break;
    const before = (await zoneCounters(o.apis, o.zones.ids)).get(o.zone)!;
    await sleep(o.bakeMs ?? 10_000);
    const after = (await zoneCounters(o.apis, o.zones.ids)).get(o.zone)!;
    const requests = after.sessions - before.sessions;
    const errors = after.responses5xx - before.responses5xx;
    const reason =
      after.down > 0
        ? `${after.down} of the zone's ${after.servers} servers fail their health check`
        : errors > Math.max(1, requests / 100)
          ? `${errors} of the zone's ${requests} requests in the bake answered 5xx`
          : undefined;
    if (reason) {
      await changeLocalZone({ ...o, weight: startWeight, reason: `undrain stopped at ${weight}%: ${reason}`, measureMs: 0 });
      return { steps, failed: { atWeight: weight, reason, backTo: startWeight } };
    }
  }
  return { steps };
}
