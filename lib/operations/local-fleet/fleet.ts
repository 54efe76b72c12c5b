import { ChildProcess, spawn } from 'child_process';
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { pidRunning, watchChild, writeFileAtomic } from '../../domain/files';
import { REPO_ROOT } from '../../domain/files/repo-root';
import { DEFAULT_PARTITION_KEY } from '../../domain/fleet/defaults';
import { PartitionKeySource } from '../../domain/fleet/types';
import { adoptionMapping, bucketCounts, initialMapping, lookup, parseMapping, validateMapping } from '../../domain/mapping';
import { extendShards, LaneSettings, laneSettingsProblems, Shard } from '../../domain/lanes';
import { initialZones } from '../../domain/zones';
import { LocalRouter, startLocalRouter } from '../../runtime/router/local';
import { RuntimeApi } from '../../runtime/router/runtime-api';
import { BaseImages, containerEnv, missingContainerTools, podman, podmanArgs } from '../../runtime/images/podman';
import { buildFleetImages, containerPrefix, FleetImages, fleetContainerFlags, removeFleetContainers, startImageRouter } from './images';
import { ExistingData, makeExistingDatabase } from './cell-zero';
import { assertPortFree, freeLoopbackPort, PostgresServer, setTreePriority, startPostgresServer } from './postgres';

/** The database each cell's workload uses inside its own PostgreSQL cluster. */
export const LOCAL_DATABASE = 'cell';
export const FLEET_FILE = 'fleet.json';
/** The running fleet's control socket in its state directory (`cellctl fleet add-cell` talks to it). */
export const CONTROL_SOCKET = 'control.sock';
/** What a local fleet's state directory holds: it is emptied (with --fresh) only when it holds nothing else. */
const STATE_DIR_ENTRIES = new Set([
  'fleet.json',
  'mapping.json',
  'cells',
  'router',
  'logs',
  'moves',
  'zones.json',
  'control.sock',
  'fleet-read.token',
  'images',
  'router-image',
  'handoff',
  'handoffs',
  'plans',
]);
/** The bearer token of the local router's fleet-wide read, in its state directory. */
export const FLEET_READ_TOKEN_FILE = 'fleet-read.token';

/** `fleet.json` (contract 4): what `cellctl move … --local` and scripts read to find the running fleet. */
export interface FleetFile {
  readonly schemaVersion: 1;
  /** The `cellctl fleet local` process while it runs. */
  readonly pid: number;
  readonly startedAt: string;
  readonly routerUrl: string;
  readonly routerPort: number;
  readonly mappingFile: string;
  readonly partitionKey: PartitionKeySource;
  readonly bucketCount: number;
  readonly healthCheckPath: string;
  readonly cells: readonly FleetFileCell[];
  /** The control socket (HTTP over a Unix socket) while the fleet runs: POST /cells adds a cell. */
  readonly controlSocket?: string;
  /** Run from images (`--images`): the image tags the workloads and the router run. */
  readonly images?: FleetImages;
  /** With a cell zero (`--cell-zero`): its id; it is one of `cells` (the existing service, outside the factory's cells). */
  readonly cellZero?: string;
  /** With lanes (`--lanes N --per-tenant K`): each lane's router and the default shards over them. `routerUrl` is lane 1's. */
  readonly lanes?: FleetFileLanes;
  /** With zones (`--zones N`, N > 1): the zone ids, each one's loopback network, and the zones document the router follows (`cellctl zone … --local`). */
  readonly zones?: FleetFileZones;
  /** The router's fleet-wide read listener (`cellctl fleet get`) and the file holding its bearer token (mode 0600). Not with --images. */
  readonly fleetRead?: { readonly url: string; readonly tokenFile: string };
}

/** The local fleet's zones: each cell's workload runs once per zone, on an address in the zone's network. */
export interface FleetFileZones {
  readonly region: typeof LOCAL_REGION;
  readonly ids: readonly string[];
  /** Zone id → its loopback network (the stand-in for the router VPC's subnet in that zone). */
  readonly networks: Readonly<Record<string, string>>;
  readonly file: string;
}

/** The local fleet's shuffle-sharded lanes: one router each, on its own port, over the same cells. */
export interface FleetFileLanes extends LaneSettings {
  readonly shards: readonly Shard[];
  readonly routers: readonly { readonly lane: number; readonly url: string; readonly port: number; readonly haproxyPid?: number }[];
}

export interface FleetFileCell {
  readonly id: string;
  readonly workloadUrl: string;
  readonly workloadPort: number;
  readonly workloadPid?: number;
  /** With zones: the cell's workload in each zone (`workloadUrl` is the first zone's, and what the mapping names). */
  readonly zones?: readonly { readonly zone: string; readonly url: string; readonly pid?: number }[];
  readonly database: {
    readonly host: string;
    readonly port: number;
    readonly user: string;
    readonly password: string;
    readonly database: string;
    readonly url: string;
    readonly dataDir: string;
    readonly pid?: number;
  };
}

export interface LocalFleetOptions {
  /** @default 4 */
  readonly cells?: number;
  /** Router port on 127.0.0.1; 0 picks a free one. */
  readonly port: number;
  /** Everything the fleet keeps: mapping, data directories, logs, fleet.json. */
  readonly stateDir: string;
  readonly partitionKey?: PartitionKeySource;
  /** @default 16384 */
  readonly bucketCount?: number;
  /** @default '/healthz' */
  readonly healthCheckPath?: string;
  /** Start the workloads with WORKLOAD_TEST_FAULTS=1 (tests and the blast-radius script only). */
  readonly testFaults?: boolean;
  /** Throw the state directory away and start empty. */
  readonly fresh?: boolean;
  /** Restart a workload that exits unexpectedly after this long, like ECS replacing a task. @default 500 */
  readonly restartDelayMs?: number;
  /** Progress lines (the per-process logs go to files in the state directory). */
  readonly log?: (line: string) => void;
  /** Each step of the start as it begins, with its count where there is one (a terminal's progress line). */
  readonly onStep?: (text: string, count?: { readonly done: number; readonly total: number }) => void;
  /** Router backend slots. @default max(16, cells + 1) */
  readonly slots?: number;
  /** Per-cell connection cap in the router. @default 100 */
  readonly cellMaxConn?: number;
  /**
   * Run the workloads and the router from the built images (podman containers on the host network)
   * instead of from source, the base images pulled or made locally (lib/runtime/images/podman.ts).
   * @default - from source
   */
  readonly images?: { readonly baseImages: BaseImages };
  /**
   * Put the router in front of an existing service, cell zero (docs/cell-zero.md): one more reference
   * workload on its own PostgreSQL, outside the factory's `cells`, whose database predates the
   * movable-schema contract and holds `existing-1` … `existing-N` with their items; the first mapping
   * sends every bucket to it.
   * @default - no cell zero
   */
  readonly cellZero?: ExistingData & { readonly id: string };
  /**
   * Run `count` router lanes, each a router of its own on its own port over the same cells and
   * mapping, with the default shards over them (docs/lanes.md). From source only.
   * @default - one router
   */
  readonly lanes?: LaneSettings;
  /**
   * Run each cell's workload in `zones` zones (1–3), each process on an address of its zone's
   * loopback network (127.0.101.0/24, …) on the cell's port and on the cell's database, and the
   * router with one server per zone, weighted by the zones document `zones.json` in the state
   * directory (`cellctl zone drain --local`). Linux only (loopback answers on all of 127.0.0.0/8);
   * from source only. @default 1
   */
  readonly zones?: number;
}

/** The region name of the local fleet's zones document. */
export const LOCAL_REGION = 'local';
/** The local fleet's zone ids: AZ IDs of a made-up region `lcl1`. */
export const localZoneIds = (count: number) => Array.from({ length: count }, (_, z) => `lcl1-az${z + 1}`);
/** Cell number `n`'s address in zone `z` (0-based): zone z's network is 127.0.(101+z).0/24. */
export const localZoneAddress = (z: number, n: number) => `127.0.${101 + z}.${n}`;
const localZoneNetwork = (z: number) => `127.0.${101 + z}.0/24`;

/** One lane of a local fleet with lanes: its router, which a test may stop and start again. */
export interface LocalLane {
  readonly lane: number;
  readonly url: string;
  readonly port: number;
  readonly router: LocalRouter | undefined;
  /** Stops the lane's router (HAProxy soft stop): new connections to its port are refused. */
  stop(): Promise<void>;
  /** Starts the lane's router again on its port and waits until it serves. */
  start(): Promise<void>;
}

/** One cell of the local fleet: its workload process and its PostgreSQL server. */
export interface LocalCell {
  readonly id: string;
  readonly workloadPort: number;
  readonly workloadUrl: string;
  readonly database: PostgresServer;
  readonly workloadPid: number | undefined;
  /** SIGKILLs the workload; with `restart: false` it stays down until `startWorkload()`. */
  killWorkload(options?: { restart?: boolean }): Promise<void>;
  /** Starts the workload (when it is down) and waits until it is healthy. */
  startWorkload(): Promise<void>;
  /** Times the supervisor restarted this workload after it died on its own. */
  readonly restarts: number;
  /** With zones: the cell's workload in each zone. */
  readonly zones: readonly { readonly zone: string; readonly url: string; readonly pid: number | undefined }[];
  /**
   * Runs this cell's workload and database at CPU priority `nice` (19: the lowest), now and after
   * every restart of either. On one machine that is the nearest thing to the cell's own compute:
   * what the cell burns comes out of idle CPU, not out of the other cells' (the blast-radius script).
   */
  setPriority(nice: number): void;
}

export interface LocalFleet {
  readonly routerUrl: string;
  readonly routerPort: number;
  readonly mappingFile: string;
  readonly stateDir: string;
  readonly fleetFile: string;
  readonly cells: readonly LocalCell[];
  /** The router run from source; undefined when it runs from its images (`images`). */
  readonly router: LocalRouter | undefined;
  /** The images the fleet runs, with `images`. */
  readonly images: FleetImages | undefined;
  /** Cell zero, the existing service (`cellZero`); also one of `cells`. */
  readonly cellZero: LocalCell | undefined;
  /** With `lanes`: every lane, lane 1 first (its router is `router`); else empty. */
  readonly lanes: readonly LocalLane[];
  /** With `lanes`: the default shards. */
  readonly shards: readonly Shard[];
  /** With `zones` > 1: the zones (fleet.json's `zones`). */
  readonly zones: FleetFileZones | undefined;
  cell(id: string): LocalCell;
  /**
   * Starts one more cell (its own PostgreSQL and workload, `cell-<n+1>`) in the running fleet and
   * records it in fleet.json. It gets no traffic until the mapping names it: `cellctl mapping
   * add-cell <id> --endpoint <workloadUrl> --plan FILE`, then `cellctl move plan FILE --local`.
   */
  addCell(): Promise<LocalCell>;
  /** Stops the router, every workload and every database; leaves nothing running. */
  stop(): Promise<void>;
}

/** The fleet.json in `stateDir`, or undefined when there is none (or it is unreadable). */
export function readFleetFile(stateDir: string): FleetFile | undefined {
  const file = path.join(stateDir, FLEET_FILE);
  if (!fs.existsSync(file)) return undefined;
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as FleetFile;
  } catch {
    return undefined;
  }
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number, failed?: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const problem = failed?.();
    if (problem) throw new Error(`${what}: ${problem}`);
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function healthy(url: string): Promise<boolean> {
  const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
  await response.arrayBuffer();
  return response.status === 200;
}

/**
 * A whole fleet on this machine, loopback only: per cell a real PostgreSQL cluster and a reference
 * workload process, and the real router (HAProxy + mapping agent) in front, serving a mapping made
 * the way `cellctl mapping init` makes it and re-reading it when it changes. A crashed workload is
 * restarted (as ECS replaces a task); `stop()` ends every process it started.
 *
 * State directory: `mapping.json`, `fleet.json`, `cells/<id>/pgdata`, `router/`, `logs/`. A second
 * start with the same number of cells reuses it (data, ports and mapping kept); otherwise, or with
 * `fresh`, it is recreated.
 */
export async function startLocalFleet(o: LocalFleetOptions): Promise<LocalFleet> {
  const count = o.cells ?? 4;
  if (!Number.isInteger(count) || count < 1 || count > 64) throw new Error(`cells ${count}: give 1 to 64`);
  const log = o.log ?? (() => undefined);
  const stateDir = path.resolve(o.stateDir);
  const partitionKey = o.partitionKey ?? DEFAULT_PARTITION_KEY;
  const bucketCount = o.bucketCount ?? 16384;
  const healthCheckPath = o.healthCheckPath ?? '/healthz';

  const previous = readFleetFile(stateDir);
  if (previous && previous.pid > 0 && previous.pid !== process.pid && pidRunning(previous.pid)) {
    throw new Error(
      `a local fleet is already running from ${stateDir} (pid ${previous.pid}); stop it (kill ${previous.pid}) or pass another --state-dir`,
    );
  }
  if (o.lanes) {
    const problems = laneSettingsProblems(o.lanes, (f) => `lanes.${f}`);
    if (problems.length > 0) throw new Error(problems.join('; '));
    if (o.images) throw new Error('lanes: the local fleet runs lanes from source; drop --images or --lanes');
  }
  const zoneCount = o.zones ?? 1;
  if (!Number.isInteger(zoneCount) || zoneCount < 1 || zoneCount > 3) throw new Error(`zones ${zoneCount}: give 1 to 3`);
  if (zoneCount > 1 && o.images) throw new Error('zones: the local fleet runs zones from source; drop --images or give --zones 1');
  if (zoneCount > 1 && process.platform !== 'linux')
    throw new Error(
      `zones: each zone is a loopback network (127.0.101.0/24, …), which only Linux answers on without aliases; give --zones 1 on ${process.platform}`,
    );
  if (o.port !== 0) await assertPortFree(o.port, '--port');
  // Before anything starts: a workload that is not there fails here in one line, not in a restart loop.
  const workload = o.images ? undefined : localWorkloadCommand();
  if (o.images) {
    const missing = missingContainerTools(o.images.baseImages);
    if (missing) throw new Error(`--images: ${missing}`);
  }
  if (previous) await reapOrphans(previous, stateDir, log);
  // Containers a killed fleet left running (run from images, or an earlier start with --images).
  if (o.images || previous?.images) {
    // Without podman (a start from source after one from images) there is nothing it could have left.
    const removed = await removeFleetContainers(stateDir).catch((error: Error) => {
      if (o.images) throw error;
      log(`could not look for containers an earlier fleet from images left: ${error.message}`);
      return [];
    });
    if (removed.length) log(`removed ${removed.length} containers left by an earlier fleet: ${removed.join(', ')}`);
  }
  const slots = o.slots ?? Math.max(16, count + 1);
  const routing = { partitionKey, bucketCount, slots, zones: 3, cellMaxConn: o.cellMaxConn ?? 100, cellHealthCheckPath: healthCheckPath };
  const images = o.images ? await buildFleetImages(o.images.baseImages, routing, log) : undefined;
  const zeroId = o.cellZero?.id;
  if (zeroId !== undefined && /^cell-\d+$/.test(zeroId))
    throw new Error(`cell zero's id ${zeroId} is one the local fleet gives its own cells; give cell zero another (cellZero.id)`);
  const reuse =
    !o.fresh &&
    previous !== undefined &&
    previous.cells.length === count + (zeroId ? 1 : 0) &&
    previous.cellZero === zeroId &&
    (previous.lanes?.count ?? 0) === (o.lanes?.count ?? 0) &&
    (previous.zones?.ids.length ?? 1) === zoneCount;
  if (!reuse && fs.existsSync(stateDir)) {
    const foreign = fs.readdirSync(stateDir).filter((name) => !STATE_DIR_ENTRIES.has(name) && !/^(add|drain)-.*\.json$/.test(name));
    // Never empty a directory that is not a fleet's: `--state-dir .` in a checkout would be the checkout.
    if (foreign.length > 0) {
      throw new Error(
        `${stateDir} is not a local fleet's state directory (it holds ${foreign.slice(0, 3).join(', ')}${foreign.length > 3 ? ', …' : ''}): give a new or empty --state-dir`,
      );
    }
    // A fleet's data is not thrown away for a different start: the operator says so with --fresh.
    if (previous && !o.fresh) {
      const was = `${previous.cells.length - (previous.cellZero ? 1 : 0)} cells${previous.cellZero ? ` and cell zero ${previous.cellZero}` : ''}${previous.lanes ? `, ${previous.lanes.count} lanes` : ''}${previous.zones ? `, ${previous.zones.ids.length} zones` : ''}`;
      const asked = `${count} cells${zeroId ? ` and cell zero ${zeroId}` : ''}${o.lanes ? `, ${o.lanes.count} lanes` : ''}${zoneCount > 1 ? `, ${zoneCount} zones` : ''}`;
      throw new Error(
        `${stateDir} holds a fleet of ${was}, with its databases and mapping; starting ${asked} would replace it: add --fresh to start over (its data is deleted), start it as it was (leave out the options), or give another --state-dir`,
      );
    }
    if (previous || fs.readdirSync(stateDir).length > 0) log(`recreating ${stateDir}${previous ? ` (it held ${previous.cells.length} cells)` : ''}`);
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
  fs.mkdirSync(path.join(stateDir, 'logs'), { recursive: true });
  fs.chmodSync(stateDir, 0o755);
  const mappingFile = path.join(stateDir, 'mapping.json');
  const fleetFile = path.join(stateDir, FLEET_FILE);
  const zoneIds = localZoneIds(zoneCount);
  const zones: FleetFileZones | undefined =
    zoneCount > 1
      ? {
          region: LOCAL_REGION,
          ids: zoneIds,
          networks: Object.fromEntries(zoneIds.map((id, z) => [id, localZoneNetwork(z)])),
          file: path.join(stateDir, 'zones.json'),
        }
      : undefined;

  const started: { stop: () => Promise<void> }[] = [];
  let fleetFileWritten = false;
  // Set once the router runs; restarts of a workload rewrite fleet.json with the new pid.
  let writeFleetFile: () => void = () => undefined;
  const stopAll = async () => {
    for (const s of started.reverse()) await s.stop().catch((error: Error) => log(`stop: ${error.message}`));
    started.length = 0;
  };

  /**
   * The loopback ports this fleet has given out (kept from fleet.json or picked). A workload's port is
   * picked before its process binds it, so the OS can hand the same free port to the next pick.
   */
  const given = new Set<number>([
    ...(o.port !== 0 ? [o.port] : reuse ? [previous!.routerPort] : []),
    ...(reuse ? previous!.cells.flatMap((c) => [c.workloadPort, c.database.port]) : []),
  ]);
  const freePort = async (): Promise<number> => {
    for (;;) {
      const port = await freeLoopbackPort();
      if (!given.has(port)) {
        given.add(port);
        return port;
      }
    }
  };

  const cells: LocalCell[] = [];
  /** Starts cell `id`'s PostgreSQL server and supervised workload (not yet its workload process). */
  const startCell = async (id: string, before: FleetFileCell | undefined): Promise<LocalCell> => {
    const cellDir = path.join(stateDir, 'cells', id);
    fs.mkdirSync(cellDir, { recursive: true });
    fs.chmodSync(cellDir, 0o755);
    const pgLog = fs.createWriteStream(path.join(stateDir, 'logs', `${id}-postgres.log`), { flags: 'a' });
    const database = await startPostgresServer({
      dataDir: path.join(cellDir, 'pgdata'),
      port: before?.database.port ?? (await freePort()),
      databases: [LOCAL_DATABASE],
      log: (line) => pgLog.write(`${line}\n`),
    });
    const stopDatabase = {
      stop: async () => {
        await database.stop();
        pgLog.end();
      },
    };
    started.push(stopDatabase);
    const workloadPort = before?.workloadPort ?? (await freePort());
    // With zones: cell number n (its place in the fleet, kept in its URL) answers on 127.0.(101+z).n in zone z.
    const n = Number(/^http:\/\/127\.0\.101\.(\d+):/.exec(before?.workloadUrl ?? '')?.[1]) || cells.length + 1;
    const supervise = (zone: number) =>
      superviseWorkload({
        id,
        ...(zones ? { host: localZoneAddress(zone, n), zone: zoneIds[zone] } : {}),
        port: workloadPort,
        database,
        partitionKey,
        bucketCount,
        healthCheckPath,
        testFaults: o.testFaults ?? false,
        restartDelayMs: o.restartDelayMs ?? 500,
        logFile: path.join(stateDir, 'logs', zones && zone > 0 ? `${id}-${zoneIds[zone]}.log` : `${id}.log`),
        log,
        image: images ? { tag: images.workload, name: `${containerPrefix(stateDir)}-${id}`, flags: fleetContainerFlags(stateDir) } : undefined,
        workload: workload ?? [],
        onSpawn: () => {
          if (fleetFileWritten) writeFleetFile();
        },
      });
    const cell = zones
      ? zonalCell(
          Array.from({ length: zoneCount }, (_, z) => supervise(z)),
          zoneIds,
        )
      : supervise(0);
    const stopWorkload = { stop: () => cell.stop() };
    started.push(stopWorkload);
    cells.push(cell);
    undoCell.set(id, async () => {
      cells.splice(cells.indexOf(cell), 1);
      for (const s of [stopWorkload, stopDatabase]) {
        if (started.includes(s)) started.splice(started.indexOf(s), 1);
        await s.stop().catch(() => undefined);
      }
      fs.rmSync(cellDir, { recursive: true, force: true });
    });
    return cell;
  };
  /** Stops and removes a cell whose start failed (add-cell leaves nothing behind). */
  const undoCell = new Map<string, () => Promise<void>>();

  try {
    // Reused: the cells fleet.json names (with any added to the running fleet); else cell-1 … cell-N.
    // Cell zero (when there is one) first: the existing service.
    const ids = reuse ? previous!.cells.map((c) => c.id) : [...(zeroId ? [zeroId] : []), ...Array.from({ length: count }, (_, i) => `cell-${i + 1}`)];
    for (const [i, id] of ids.entries()) {
      o.onStep?.(`starting ${id}'s PostgreSQL`, { done: i, total: ids.length });
      await startCell(id, reuse ? previous!.cells[i] : undefined);
    }
    o.onStep?.(`starting ${ids.length} workloads and waiting for them to be healthy`);
    await Promise.all(cells.map((c) => c.startWorkload()));
    const zero = zeroId ? cells.find((c) => c.id === zeroId) : undefined;
    if (zero && !reuse) {
      const tenants = await makeExistingDatabase(zero.database.url(LOCAL_DATABASE), o.cellZero);
      log(
        `${zeroId}: the existing service, ${tenants.length} tenants in its database, which lacks the movable-schema contract's row versions and tombstones`,
      );
    }

    if (!reuse || !fs.existsSync(mappingFile)) {
      const now = { now: new Date().toISOString() };
      const listed = cells.map((c) => ({ id: c.id, state: 'active' as const, canary: false, endpoint: c.workloadUrl }));
      const doc = zero
        ? adoptionMapping(
            listed.find((c) => c.id === zero.id)!,
            listed.filter((c) => c.id !== zero.id),
            bucketCount,
            now,
          )
        : initialMapping(listed, bucketCount, now);
      const problems = validateMapping(doc);
      if (problems.length > 0)
        throw new Error(`the local fleet does not make a valid mapping: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
      writeFileAtomic(mappingFile, `${JSON.stringify(doc, null, 2)}\n`);
    }

    // Every zone at its full share until `cellctl zone drain --local` writes another (kept on a reuse).
    if (zones && !fs.existsSync(zones.file)) writeFileAtomic(zones.file, `${JSON.stringify(initialZones(LOCAL_REGION, zoneIds), null, 2)}\n`);
    const routerPort = o.port === 0 ? (reuse ? previous!.routerPort : await freePort()) : o.port;
    const routerDir = path.join(stateDir, 'router');
    fs.mkdirSync(routerDir, { recursive: true });
    let router: LocalRouter | undefined;
    /** Starts the router (from source) of lane `lane` (0: the one router of a fleet without lanes) on `port`. */
    // The fleet-wide read listens beside the first router, on a port of its own, with a fresh token.
    const fleetRead = images
      ? undefined
      : { port: await freePort(), token: crypto.randomBytes(24).toString('hex'), tokenFile: path.join(stateDir, FLEET_READ_TOKEN_FILE) };
    if (fleetRead) {
      fs.rmSync(fleetRead.tokenFile, { force: true });
      fs.writeFileSync(fleetRead.tokenFile, `${fleetRead.token}\n`, { mode: 0o600 });
    }
    o.onStep?.(images ? 'starting the router from its images' : `starting the router${o.lanes ? ` (${o.lanes.count} lanes)` : ''}`);
    const startSourceRouter = async (lane: number, port: number): Promise<{ router: LocalRouter; stop: () => Promise<void> }> => {
      const name = lane === 0 ? 'router' : `router-lane-${lane}`;
      const dir = lane === 0 ? routerDir : path.join(routerDir, `lane-${lane}`);
      fs.mkdirSync(dir, { recursive: true });
      const routerLog = fs.createWriteStream(path.join(stateDir, 'logs', `${name}.log`), { flags: 'a' });
      const running = await startLocalRouter({
        mappingFile,
        port,
        debugHeaders: true,
        partitionKey,
        bucketCount,
        healthCheckPath,
        slots,
        cellMaxConn: o.cellMaxConn,
        log: (line) => routerLog.write(`${line}\n`),
        stateDir: dir,
        metricsAcrossGroups: lane > 0,
        ...(fleetRead && lane <= 1 ? { fleetRead: { port: fleetRead.port, token: fleetRead.token } } : {}),
        zones: 3,
        ...(zones
          ? {
              // An interface endpoint's regional name answers with its address in every zone: the
              // first zone's address (the mapping's endpoint) stands for the cell's three.
              zoneNetworks: Object.fromEntries(zoneIds.map((id) => [id, [zones.networks[id]]])),
              zonesFile: zones.file,
              resolve: async (host: string) => {
                const n = /^127\.0\.101\.(\d+)$/.exec(host)?.[1];
                return n ? zoneIds.map((_, z) => localZoneAddress(z, Number(n))) : [host];
              },
            }
          : {}),
      });
      return {
        router: running,
        stop: async () => {
          await running.stop();
          routerLog.end();
        },
      };
    };
    const lanes: LocalLane[] = [];
    if (images) {
      const task = await startImageRouter({
        images,
        stateDir,
        mappingFile,
        port: routerPort,
        partitionKey,
        bucketCount,
        healthCheckPath,
        slots,
        cellMaxConn: o.cellMaxConn,
        log,
      });
      started.push({ stop: () => task.stop() });
    } else if (!o.lanes) {
      const one = await startSourceRouter(0, routerPort);
      router = one.router;
      started.push({ stop: one.stop });
    } else {
      const ports = [routerPort];
      for (let lane = 2; lane <= o.lanes.count; lane++) {
        const kept = reuse ? previous!.lanes?.routers.find((r) => r.lane === lane)?.port : undefined;
        if (kept !== undefined) given.add(kept);
        ports.push(kept ?? (await freePort()));
      }
      for (const [i, port] of ports.entries()) {
        const lane = i + 1;
        let current: { router: LocalRouter; stop: () => Promise<void> } | undefined = await startSourceRouter(lane, port);
        const url = `http://127.0.0.1:${port}`;
        const entry: LocalLane = {
          lane,
          url,
          port,
          get router() {
            return current?.router;
          },
          stop: async () => {
            const running = current;
            current = undefined;
            await running?.stop();
            if (fleetFileWritten) writeFleetFile();
          },
          start: async () => {
            if (current) return;
            current = await startSourceRouter(lane, port);
            await waitUntil(`lane ${lane} to serve`, () => servesEveryCell(url), 30_000);
            if (fleetFileWritten) writeFleetFile();
          },
        };
        lanes.push(entry);
        started.push({ stop: () => entry.stop() });
      }
      router = lanes[0].router;
    }
    const routerUrl = `http://127.0.0.1:${routerPort}`;
    // The local fleet has no cells.lanes.json: its shards are what `cellctl lanes init` generates.
    const shards: readonly Shard[] = o.lanes ? extendShards(o.lanes) : [];
    // Ready once HAProxy's health checks see every cell up: one tenant of each cell is served there.
    const parsed = parseMapping(fs.readFileSync(mappingFile, 'utf8'));
    if (!parsed.ok)
      throw new Error(`${mappingFile} is not a valid mapping; fix it (\`cellctl mapping validate ${mappingFile}\`) or start with --fresh`);
    const held = bucketCounts(parsed.document);
    const probes = Object.keys(parsed.document.cells)
      .filter((id) => parsed.document.cells[id].state === 'active' && (held.get(id) ?? 0) > 0)
      .map((id) => {
        for (let n = 0; n < 100_000; n++) if (lookup(parsed.document, `probe-${n}`).cell === id) return { id, key: `probe-${n}` };
        return undefined;
      })
      .filter((p): p is { id: string; key: string } => p !== undefined);
    /** One tenant of each cell served by the router at `url` through that cell. */
    async function servesEveryCell(url: string): Promise<boolean> {
      for (const probe of probes) {
        const response = await fetch(`${url}${healthCheckPath}`, {
          headers: partitionKey.source === 'header' ? { [partitionKey.name]: probe.key } : {},
          signal: AbortSignal.timeout(2000),
        });
        await response.arrayBuffer();
        if (response.status !== 200 || response.headers.get('x-cell') !== probe.id) return false;
      }
      return true;
    }
    o.onStep?.('waiting for the router to reach every cell');
    for (const url of lanes.length > 0 ? lanes.map((l) => l.url) : [routerUrl])
      await waitUntil(`the router${lanes.length > 0 ? ` at ${url}` : ''} to reach every cell`, () => servesEveryCell(url), 30_000);

    writeFleetFile = () => {
      const file: FleetFile = {
        schemaVersion: 1,
        pid: process.pid,
        startedAt: new Date().toISOString(),
        routerUrl,
        routerPort,
        mappingFile,
        partitionKey,
        bucketCount,
        healthCheckPath,
        ...(control ? { controlSocket: control.socket } : {}),
        ...(images ? { images } : {}),
        ...(zeroId ? { cellZero: zeroId } : {}),
        ...(zones ? { zones } : {}),
        ...(fleetRead ? { fleetRead: { url: `http://127.0.0.1:${fleetRead.port}`, tokenFile: fleetRead.tokenFile } } : {}),
        ...(o.lanes
          ? {
              lanes: {
                ...o.lanes,
                shards,
                routers: lanes.map((l) => ({
                  lane: l.lane,
                  url: l.url,
                  port: l.port,
                  ...(l.router?.haproxyPid ? { haproxyPid: l.router.haproxyPid } : {}),
                })),
              },
            }
          : {}),
        cells: cells.map((c) => ({
          id: c.id,
          workloadUrl: c.workloadUrl,
          workloadPort: c.workloadPort,
          workloadPid: c.workloadPid,
          ...(zones ? { zones: c.zones.map((z) => ({ zone: z.zone, url: z.url, ...(z.pid ? { pid: z.pid } : {}) })) } : {}),
          database: {
            host: c.database.host,
            port: c.database.port,
            user: c.database.user,
            password: c.database.password,
            database: LOCAL_DATABASE,
            url: c.database.url(LOCAL_DATABASE),
            dataDir: c.database.dataDir,
            pid: c.database.pid,
          },
        })),
      };
      writeFileAtomic(fleetFile, `${JSON.stringify(file, null, 2)}\n`);
    };
    let adding: Promise<unknown> = Promise.resolve();
    const addCell = (): Promise<LocalCell> => {
      // One at a time: each new cell takes the next id.
      const next = adding.then(async () => {
        const taken = new Set([...cells.map((c) => c.id), ...Object.keys(readMapping(mappingFile)?.cells ?? {})]);
        let n = cells.filter((c) => c.id !== zeroId).length + 1;
        while (taken.has(`cell-${n}`)) n++;
        const id = `cell-${n}`;
        log(`adding ${id}`);
        try {
          const cell = await startCell(id, undefined);
          await cell.startWorkload();
          writeFleetFile();
          log(`added ${id}: workload ${cell.workloadUrl}`);
          return cell;
        } catch (error) {
          await undoCell.get(id)?.();
          throw error;
        }
      });
      adding = next.catch(() => undefined);
      return next;
    };
    const control = await serveControl(path.join(stateDir, CONTROL_SOCKET), addCell, log);
    started.push({ stop: () => control.stop() });
    writeFleetFile();
    fleetFileWritten = true;

    return {
      routerUrl,
      routerPort,
      mappingFile,
      stateDir,
      fleetFile,
      cells,
      router,
      images,
      cellZero: zero,
      zones,
      lanes,
      shards,
      cell: (id) => {
        const found = cells.find((c) => c.id === id);
        if (!found) throw new Error(`no cell ${id}; the local fleet has ${cells.map((c) => c.id).join(', ')}`);
        return found;
      },
      addCell,
      stop: async () => {
        fleetFileWritten = false;
        await stopAll();
        // Keep fleet.json (ports and paths for the next start) but mark that nothing runs.
        const file = readFleetFile(stateDir);
        if (file)
          writeFileAtomic(
            fleetFile,
            `${JSON.stringify({ ...file, pid: 0, controlSocket: undefined, cells: file.cells.map((c) => ({ ...c, workloadPid: undefined, database: { ...c.database, pid: undefined } })) }, null, 2)}\n`,
          );
      },
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

function readMapping(file: string) {
  if (!fs.existsSync(file)) return undefined;
  const parsed = parseMapping(fs.readFileSync(file, 'utf8'));
  return parsed.ok ? parsed.document : undefined;
}

/** What the control socket answers to POST /cells. */
export interface AddedCell {
  readonly id: string;
  readonly workloadUrl: string;
  readonly database: string;
}

/**
 * The running fleet's control socket: HTTP on a Unix socket in the state directory (only this
 * user can reach it: the directory and the socket are the user's), so `cellctl fleet add-cell`
 * can ask the process that owns the fleet to start a cell it then supervises and stops.
 */
async function serveControl(
  socket: string,
  addCell: () => Promise<LocalCell>,
  log: (line: string) => void,
): Promise<{ socket: string; stop: () => Promise<void> }> {
  if (Buffer.byteLength(socket) > 100)
    throw new Error(`the state directory's path is too long for a Unix socket (${socket}); use a shorter --state-dir`);
  fs.rmSync(socket, { force: true }); // left by a fleet that was killed
  const server = http.createServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    req.resume();
    if (req.method !== 'POST' || req.url !== '/cells') return answer(404, { error: 'POST /cells is the only request here' });
    addCell().then(
      (cell) => answer(201, { id: cell.id, workloadUrl: cell.workloadUrl, database: cell.database.url(LOCAL_DATABASE) } satisfies AddedCell),
      (error: Error) => {
        log(`add-cell failed: ${error.message}`);
        answer(500, { error: error.message });
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
  fs.chmodSync(socket, 0o600);
  return {
    socket,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(socket, { force: true });
    },
  };
}

/**
 * Asks the fleet running from `stateDir` to add a cell (`cellctl fleet add-cell`). Starting a
 * PostgreSQL server and a workload takes seconds, so the request waits up to 2 minutes.
 */
export async function requestAddCell(stateDir: string): Promise<AddedCell> {
  const file = readFleetFile(stateDir);
  const where = path.resolve(stateDir);
  if (!file || !file.pid || !pidRunning(file.pid))
    throw new Error(`no local fleet is running from ${where}; start one with \`cellctl fleet local --state-dir ${stateDir}\``);
  if (!file.controlSocket || !fs.existsSync(file.controlSocket)) {
    throw new Error(`the local fleet running from ${where} (pid ${file.pid}) has no control socket; it was started by an older cellctl: restart it`);
  }
  return new Promise<AddedCell>((resolve, reject) => {
    const request = http.request({ socketPath: file.controlSocket, path: '/cells', method: 'POST', timeout: 120_000 }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () => {
        let body: { error?: string } & Partial<AddedCell>;
        try {
          body = JSON.parse(text) as typeof body;
        } catch {
          return reject(new Error(`the local fleet answered ${response.statusCode}: ${text.slice(0, 200)}`));
        }
        if (response.statusCode === 201) resolve(body as AddedCell);
        else reject(new Error(`the local fleet could not add a cell: ${body.error ?? text}`));
      });
    });
    request.on('timeout', () => request.destroy(new Error('the local fleet did not answer within 2 minutes')));
    request.on('error', (error) => reject(new Error(`cannot reach the local fleet's control socket ${file.controlSocket}: ${error.message}`)));
    request.end();
  });
}

/** The command line of `pid` (Linux), to tell our process from an unrelated one that reused the pid. */
function commandLine(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return undefined;
  }
}

/**
 * A fleet whose `cellctl fleet local` was killed without cleanup (SIGKILL, a crash) leaves its
 * workloads, PostgreSQL servers and HAProxy running; the next start stops them (checking each pid
 * still runs what fleet.json says) before it reuses or recreates the state directory.
 */
async function reapOrphans(previous: FleetFile, stateDir: string, log: (line: string) => void): Promise<void> {
  const targets: { what: string; pid: number; signal: NodeJS.Signals }[] = [];
  for (const cell of previous.cells) {
    if (cell.workloadPid && /workload\.ts/.test(commandLine(cell.workloadPid) ?? ''))
      targets.push({ what: `${cell.id} workload`, pid: cell.workloadPid, signal: 'SIGKILL' });
    if (cell.database.pid && /postgres/.test(commandLine(cell.database.pid) ?? ''))
      targets.push({ what: `${cell.id} database`, pid: cell.database.pid, signal: 'SIGINT' });
  }
  const socket = path.join(stateDir, 'router', 'admin.sock');
  if (fs.existsSync(socket)) {
    const pid = Number((await new RuntimeApi(socket).info().catch(() => ({}) as Record<string, string>)).Pid);
    if (pid > 0 && /haproxy/.test(commandLine(pid) ?? '')) targets.push({ what: 'router HAProxy', pid, signal: 'SIGTERM' });
  }
  for (const target of targets) {
    if (!pidRunning(target.pid)) continue;
    log(`stopping the ${target.what} (pid ${target.pid}) left running by an earlier fleet`);
    process.kill(target.pid, target.signal);
    const deadline = Date.now() + 10_000;
    while (pidRunning(target.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (pidRunning(target.pid)) process.kill(target.pid, 'SIGKILL');
  }
}

interface SupervisedOptions {
  readonly id: string;
  /** The address it listens on. @default 127.0.0.1 */
  readonly host?: string;
  /** The zone it serves from (ZONE_ID: `x-zone` on its responses). */
  readonly zone?: string;
  readonly port: number;
  readonly database: PostgresServer;
  readonly partitionKey: PartitionKeySource;
  readonly bucketCount: number;
  readonly healthCheckPath: string;
  readonly testFaults: boolean;
  readonly restartDelayMs: number;
  readonly logFile: string;
  readonly log: (line: string) => void;
  /** Called with each new workload process (fleet.json records the current pids). */
  readonly onSpawn: () => void;
  /** Run the workload image in a podman container in the foreground (its output to the log, its exit the process's) instead of bin/workload.ts. */
  readonly image?: { readonly tag: string; readonly name: string; readonly flags: readonly string[] };
  /** Node.js's arguments that run the workload outside a container (localWorkloadCommand). */
  readonly workload: readonly string[];
}

/**
 * How the local fleet runs the workload outside containers: its TypeScript source through tsx in a
 * checkout, its compiled entry point (dist/bin/workload.js, which the package ships) in an installed
 * package. Neither: one line that says what is missing and how to get it.
 */
export function localWorkloadCommand(root: string = REPO_ROOT): string[] {
  const source = path.join(root, 'bin', 'workload.ts');
  if (fs.existsSync(source)) return ['--require', require.resolve('tsx/cjs'), source];
  const compiled = path.join(root, 'dist', 'bin', 'workload.js');
  if (fs.existsSync(compiled)) return [compiled];
  throw new Error(
    `the local fleet's workload is missing: neither ${source} nor ${compiled} exists; in a checkout run \`npm ci\` (it compiles dist/), or reinstall the package`,
  );
}

/** A workload process that is restarted when it dies on its own (a crash), not when it was told to stop. */
function superviseWorkload(o: SupervisedOptions): LocalCell & { stop(): Promise<void> } {
  const url = `http://${o.host ?? '127.0.0.1'}:${o.port}`;
  const out = fs.openSync(o.logFile, 'a');
  let child: ChildProcess | undefined;
  let wanted = false;
  let restarts = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  let lastExit = '';
  let nice: number | undefined;

  const spawnOnce = () => {
    const env: Record<string, string | undefined> = {
      CELL_ID: o.id,
      HOST: o.host ?? '127.0.0.1',
      ...(o.zone ? { ZONE_ID: o.zone } : {}),
      PORT: String(o.port),
      HEALTH_CHECK_PATH: o.healthCheckPath,
      PARTITION_KEY: JSON.stringify(o.partitionKey),
      BUCKET_COUNT: String(o.bucketCount),
      DB_HOST: o.database.host,
      DB_PORT: String(o.database.port),
      DB_NAME: LOCAL_DATABASE,
      DB_USER: o.database.user,
      DB_PASSWORD: o.database.password,
      DB_SSL: 'false',
      DB_STATEMENT_TIMEOUT_MS: '10000',
      QUEUE_KIND: 'postgres',
      ...(o.testFaults ? { WORKLOAD_TEST_FAULTS: '1' } : {}),
    };
    const host = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR };
    // From the image: the same environment, given to the container (`--rm`: a restart is a new container, as ECS starts a new task).
    const proc = o.image
      ? spawn(
          'podman',
          podmanArgs([
            'run',
            '--rm',
            '--name',
            o.image.name,
            ...o.image.flags,
            ...Object.entries(env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
            o.image.tag,
          ]),
          { stdio: ['ignore', out, out], env: containerEnv() },
        )
      : spawn(process.execPath, o.workload, {
          cwd: REPO_ROOT,
          stdio: ['ignore', out, out],
          env: { ...host, ...env },
        });
    child = proc;
    if (nice !== undefined && proc.pid !== undefined) setTreePriority(proc.pid, nice);
    // Stopped (SIGTERM, SIGKILL after 5 s) if this process dies without stopping it.
    watchChild(proc, { signal: 'TERM', killAfterMs: 5_000 });
    o.onSpawn();
    proc.once('exit', (code, signal) => {
      lastExit = `exited with ${signal ?? `code ${code}`}`;
      if (child === proc) child = undefined;
      if (!wanted) return;
      o.log(`${o.id}: workload ${lastExit}; restarting in ${o.restartDelayMs} ms`);
      restarts += 1;
      restartTimer = setTimeout(() => {
        restartTimer = undefined;
        if (wanted && !child) spawnOnce();
      }, o.restartDelayMs);
    });
  };

  const kill = async (signal: NodeJS.Signals) => {
    const proc = child;
    if (!proc) return;
    await new Promise<void>((resolve) => {
      const force =
        signal === 'SIGTERM'
          ? setTimeout(() => (o.image ? void podman(['kill', '--signal', 'SIGKILL', o.image.name]) : proc.kill('SIGKILL')), 5000)
          : undefined;
      proc.once('exit', () => {
        if (force) clearTimeout(force);
        resolve();
      });
      // A container gets the signal from podman (SIGKILL to the podman client would leave it running).
      if (o.image) void podman(['kill', '--signal', signal, o.image.name]);
      else proc.kill(signal);
    });
  };

  return {
    id: o.id,
    workloadPort: o.port,
    workloadUrl: url,
    database: o.database,
    get workloadPid() {
      return child?.pid;
    },
    get restarts() {
      return restarts;
    },
    get zones() {
      return o.zone ? [{ zone: o.zone, url, pid: child?.pid }] : [];
    },
    setPriority: (value) => {
      nice = value;
      if (child?.pid !== undefined) setTreePriority(child.pid, value);
      o.database.setPriority(value);
    },
    killWorkload: async (options = {}) => {
      wanted = options.restart ?? false;
      await kill('SIGKILL');
    },
    startWorkload: async () => {
      wanted = true;
      if (!child && !restartTimer) spawnOnce();
      await waitUntil(
        `workload ${o.id} to become healthy on ${url} (log: ${o.logFile})`,
        () => healthy(`${url}${o.healthCheckPath}`),
        60_000,
        () => (!child && !restartTimer && lastExit ? `the workload ${lastExit}; see ${o.logFile}` : undefined),
      );
    },
    stop: async () => {
      wanted = false;
      if (restartTimer) clearTimeout(restartTimer);
      restartTimer = undefined;
      await kill('SIGTERM');
      fs.closeSync(out);
    },
  };
}

/** A cell whose workload runs in several zones: one supervised process per zone, on the same database; the first zone's stands for the cell. */
function zonalCell(processes: readonly (LocalCell & { stop(): Promise<void> })[], ids: readonly string[]): LocalCell & { stop(): Promise<void> } {
  const [first] = processes;
  return {
    id: first.id,
    workloadPort: first.workloadPort,
    workloadUrl: first.workloadUrl,
    database: first.database,
    get workloadPid() {
      return first.workloadPid;
    },
    get restarts() {
      return processes.reduce((n, p) => n + p.restarts, 0);
    },
    get zones() {
      return processes.map((p, z) => ({ zone: ids[z], url: p.workloadUrl, pid: p.workloadPid }));
    },
    setPriority: (value) => processes.forEach((p) => p.setPriority(value)),
    killWorkload: async (options) => {
      await Promise.all(processes.map((p) => p.killWorkload(options)));
    },
    startWorkload: async () => {
      await Promise.all(processes.map((p) => p.startWorkload()));
    },
    stop: async () => {
      await Promise.all(processes.map((p) => p.stop()));
    },
  };
}
