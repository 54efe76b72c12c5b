import { ChildProcess, spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { PartitionKeySource, ZoneAffinity } from '../../domain/fleet/types';
import { watchChild } from '../../domain/files/watchdog';
import { AgentOptions, MappingAgent } from './agent';
import { MappingApplier } from './apply';
import { ERROR_503, HaproxyConfigOptions, jwtKeyFile, MAP_FILES, READINESS_MAP, READINESS_MAP_CONTENT, renderHaproxyConfig } from './haproxy-config';
import { RuntimeApi } from './runtime-api';
import { FileMappingSource, MappingSource } from './sources';
import { ZoneWeightsFollower } from './zones';
import { fleetReadServer } from './fleet-read';

export const HAPROXY_INSTALL_HINT =
  'install it with `apt-get install -y haproxy` (Debian/Ubuntu) or `brew install haproxy` (macOS); version 2.6 or newer';

/** A cell endpoint that does not resolve on this machine (the `mapping init` default endpoints are AWS names). */
export const LOCAL_UNAPPLIABLE_HINT =
  'cells on this machine are reached on loopback: write a JSON file of cell id → URL (`{"eu-1": "http://127.0.0.1:9001"}`) and create the mapping with `cellctl mapping init --endpoints FILE --force`, or let `cellctl fleet local` run cells and router together; the router tries the document again, and reports it again only when it changes';

/** The installed HAProxy's version, or undefined when there is none on PATH. */
export function haproxyVersion(binary = 'haproxy'): string | undefined {
  const result = spawnSync(binary, ['-v'], { encoding: 'utf8' });
  if (result.error || result.status !== 0) return undefined;
  return /version (\S+)/.exec(result.stdout)?.[1];
}

export interface LocalRouterOptions {
  /** The mapping file to serve and watch (also the initial document). */
  readonly mappingFile?: string;
  /** Read the mapping from here instead of `mappingFile` (the S3 router group in tests). */
  readonly source?: MappingSource;
  readonly port: number;
  readonly debugHeaders?: boolean;
  readonly partitionKey: PartitionKeySource;
  readonly bucketCount: number;
  /** Route a schema-2 mapping's home tables (HaproxyConfigOptions.homeTables). @default false */
  readonly homeTables?: boolean;
  readonly healthCheckPath: string;
  /** @default 16 */
  readonly slots?: number;
  /** @default 100 */
  readonly cellMaxConn?: number;
  /** Requests one tenant may have in flight at once (`tenantMaxConnOf(cellMaxConn)`: half its cell's slots). @default - no per-tenant cap */
  readonly tenantMaxConn?: number;
  /** What one client address may hold in one cell, whichever keys it sends (HaproxyConfigOptions.clientMaxConnPerCell). @default - no per-address cap */
  readonly clientMaxConnPerCell?: number;
  readonly queueTimeoutMs?: number;
  /** Agent poll interval. @default 500 */
  readonly pollMs?: number;
  /** Where logs and metric lines go. */
  readonly log: (line: string) => void;
  readonly haproxyBinary?: string;
  /** Keep state here instead of a fresh temp directory (to test restarts); it is then left in place on stop. */
  readonly stateDir?: string;
  /** CA bundle for `https://` cells (a private CA). @default the system's trusted CAs */
  readonly caFile?: string;
  /** HAProxy serves readiness (as the NLB sees it) on this loopback port. */
  readonly readyPort?: number;
  /** Router frontend connection limit. @default 4000 */
  readonly maxConn?: number;
  /** @default 5000 */
  readonly requestTimeoutMs?: number;
  /** @default 8192 */
  readonly maxBodyBytes?: number;
  /** HaproxyConfigOptions.clientTimeoutMs. @default CLIENT_TIMEOUT_MS */
  readonly clientTimeoutMs?: number;
  /** Entries of the tenants' table (HaproxyConfigOptions.keyCacheEntries). @default KEY_CACHE_ENTRIES */
  readonly keyCacheEntries?: number;
  /** @default 100 */
  readonly badKeysPer10s?: number;
  /** Connections one client address may hold (every local client is 127.0.0.1 unless a PROXY stand-in says otherwise). @default maxConn */
  readonly maxConnPerClient?: number;
  /** Requests one client address may send per 10 s (like `maxConnPerClient`, unbounded by default: every local client is 127.0.0.1). @default 1000000000 */
  readonly requestsPerClientPer10s?: number;
  /** Clients arrive with a PROXY protocol v2 header (an NLB stand-in in tests). @default false */
  readonly acceptProxy?: boolean;
  /** Servers per cell backend (zonal addresses). @default 3 */
  readonly zones?: number;
  /** The agent's metrics also by `Cell` across groups, as a lane's in AWS (MappingAgent.metricsAcrossGroups). @default false */
  readonly metricsAcrossGroups?: boolean;
  /** Resolves endpoint hosts (tests give several loopback addresses). @default DNS */
  readonly resolve?: (host: string) => Promise<string[]>;
  /** Networks of "this task's zone": their addresses are tried first. */
  readonly localNetworks?: readonly string[];
  /** ApplyOptions.zoneAffinity (router.zoneAffinity). @default 'spread' */
  readonly zoneAffinity?: ZoneAffinity;
  /** ApplyOptions.elsewhere: cells this router sends to another region's URL (`router.reach`). @default - none */
  readonly elsewhere?: Readonly<Record<string, readonly string[]>>;
  /** Loopback networks standing in for the router VPC's subnets, by zone id (ApplyOptions.zoneNetworks). */
  readonly zoneNetworks?: Readonly<Record<string, readonly string[]>>;
  /** The zones document to follow (ZoneWeightsFollower), with `zoneNetworks`; a missing file means every zone at its full share. */
  readonly zonesFile?: string;
  /** @default 25000 */
  readonly hardStopAfterMs?: number;
  /** Agent: re-resolve endpoints this often. @default 30000 */
  readonly refreshAddressesMs?: number;
  /** Agent: try an unappliable document again after this long. @default 30000 */
  readonly retryUnappliableMs?: number;
  /** Agent: report the version in force here after every tick (S3ServedReporter, as router tasks in AWS do). */
  readonly served?: AgentOptions['served'];
  /** How long HAProxy may take to start (answer on its runtime API). @default `startTimeoutMs` of what it loads */
  readonly startTimeoutMs?: number;
  /** The fleet-wide read listener (fleetReadServer) on this loopback port, with this bearer token. @default none */
  readonly fleetRead?: { readonly port: number; readonly token: string };
}

/**
 * How long an HAProxy start may take: 10 s, plus 1 s per MiB of map files it loads from the state
 * directory (a restart after a large mapping was applied). HAProxy 2.6 loads a million-entry map of
 * 21 MiB in under half a second here; 1 s per MiB leaves room for a slow machine or a profiler
 * (valgrind runs it tens of times slower).
 */
export function startTimeoutMs(stateDir: string): number {
  const bytes = Object.values(MAP_FILES).reduce((n, name) => {
    const file = path.join(stateDir, name);
    return n + (fs.existsSync(file) ? fs.statSync(file).size : 0);
  }, 0);
  return 10_000 + Math.ceil(bytes / 1048576) * 1000;
}

export interface LocalRouter {
  readonly agent: MappingAgent;
  readonly stateDir: string;
  /** The running HAProxy's process id. */
  readonly haproxyPid: number | undefined;
  /**
   * Stops the agent, then HAProxy gracefully: SIGUSR1 (soft stop) closes the listener and lets
   * in-flight requests finish, up to `hardStopAfterMs` (SIGTERM would drop them); removes a state
   * directory it created.
   */
  stop(): Promise<void>;
  /** Kills HAProxy and starts it again from the same state directory (tests restarts). */
  restartHaproxy(): Promise<void>;
  /** Stops the agent only; HAProxy keeps serving (tests that the data plane survives it). */
  stopAgent(): void;
  startAgent(): void;
}

/** HAProxy exited before it was up; the message is one line. */
export class HaproxyStartError extends Error {
  override readonly name = 'HaproxyStartError';
}

/** One line for an HAProxy that exited at start: the port in use, or its first alert. */
/**
 * A pipe read can end in the middle of a line (a burst of HAProxy log lines under load): this keeps
 * the unfinished last line of each chunk until the rest arrives and returns only whole lines.
 */
export function wholeLines(): (chunk: string) => string[] {
  let partial = '';
  return (chunk) => {
    const text = partial + chunk;
    const end = text.lastIndexOf('\n');
    if (end < 0) {
      partial = text;
      return [];
    }
    partial = text.slice(end + 1);
    return text.slice(0, end).split('\n');
  };
}

export function haproxyStartError(output: string, port: number): string {
  if (/Address already in use|cannot bind|Cannot bind/i.test(output)) {
    return `port ${port} is already in use on 127.0.0.1; stop what is listening there or pick another --port`;
  }
  const alert =
    output
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.includes('[ALERT]')) ??
    output.trim().split('\n')[0] ??
    '';
  return `HAProxy exited at start: ${alert.replace(/^\[ALERT\]\s*(\(\d+\)\s*:\s*)?/, '') || 'no output'}`;
}

const PROXY_STOPPED = /Proxy \S+ stopped \(cumulated conns/;
/** HAProxy's console copy of a message: `[WARNING]  (1234) : Server slot0/z0 is DOWN, …`. */
const HAPROXY_CONSOLE_MESSAGE = /^\[(NOTICE|WARNING|ALERT)\]\s+\(\d+\) : /;

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const attempt = () =>
    check().catch((error: Error) => {
      if (error instanceof HaproxyStartError) throw error;
      return false;
    });
  while (!(await attempt())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The HAProxy configuration options of a router on this machine (`cellctl router local`, `cellctl
 * fleet local`, from source or from the images): loopback bind, no PROXY protocol unless asked, the
 * per-address limits unbounded by default (every local client is 127.0.0.1).
 */
export function localHaproxyConfigOptions(
  o: Omit<LocalRouterOptions, 'log'>,
  where: { readonly adminSocket: string; readonly stateDir: string; readonly slots: number },
): HaproxyConfigOptions {
  return {
    bind: { address: '127.0.0.1', port: o.port },
    adminSocket: where.adminSocket,
    stateDir: where.stateDir,
    partitionKey: o.partitionKey,
    bucketCount: o.bucketCount,
    homeTables: o.homeTables,
    slots: where.slots,
    cellMaxConn: o.cellMaxConn ?? 100,
    tenantMaxConn: o.tenantMaxConn,
    clientMaxConnPerCell: o.clientMaxConnPerCell,
    queueTimeoutMs: o.queueTimeoutMs,
    healthCheckPath: o.healthCheckPath,
    debugHeaders: o.debugHeaders,
    readyBind: o.readyPort === undefined ? undefined : { address: '127.0.0.1', port: o.readyPort },
    caFile: o.caFile,
    maxConn: o.maxConn,
    requestTimeoutMs: o.requestTimeoutMs,
    maxBodyBytes: o.maxBodyBytes,
    clientTimeoutMs: o.clientTimeoutMs,
    keyCacheEntries: o.keyCacheEntries,
    badKeysPer10s: o.badKeysPer10s,
    zones: o.zones,
    hardStopAfterMs: o.hardStopAfterMs,
    maxConnPerClient: o.maxConnPerClient ?? o.maxConn ?? 4000,
    requestsPerClientPer10s: o.requestsPerClientPer10s ?? 1_000_000_000,
    acceptProxy: o.acceptProxy,
  };
}

/**
 * HAProxy plus the mapping agent on this machine: the agent reads the mapping from a file and
 * re-reads it when it changes. What `cellctl router local` runs, and what the router tests drive.
 */
export async function startLocalRouter(o: LocalRouterOptions): Promise<LocalRouter> {
  const binary = o.haproxyBinary ?? 'haproxy';
  if (!haproxyVersion(binary)) throw new Error(`haproxy is not installed (or not on PATH); ${HAPROXY_INSTALL_HINT}`);
  const stateDir = o.stateDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'cell-router-'));
  const socket = path.join(stateDir, 'admin.sock');
  const slots = o.slots ?? 16;
  const configFile = path.join(stateDir, 'haproxy.cfg');
  fs.writeFileSync(configFile, renderHaproxyConfig(localHaproxyConfigOptions(o, { adminSocket: socket, stateDir, slots })));
  fs.writeFileSync(path.join(stateDir, '503.http'), ERROR_503);
  // The tenant-token public keys the configuration names (partitionKey.source jwt).
  if (o.partitionKey.source === 'jwt') o.partitionKey.publicKeys.forEach((pem, i) => fs.writeFileSync(jwtKeyFile(stateDir, i), pem));
  for (const name of Object.values(MAP_FILES)) {
    if (!fs.existsSync(path.join(stateDir, name))) fs.writeFileSync(path.join(stateDir, name), '');
  }
  fs.writeFileSync(path.join(stateDir, READINESS_MAP), READINESS_MAP_CONTENT);
  const source = o.source ?? (o.mappingFile ? new FileMappingSource(o.mappingFile) : undefined);
  if (!source) throw new Error('startLocalRouter: give mappingFile or source');

  let haproxy: ChildProcess | undefined;
  const api = new RuntimeApi(socket);
  const startHaproxy = async () => {
    fs.rmSync(socket, { force: true });
    // Its own process group: a terminal's Ctrl-C reaches the agent, which stops HAProxy gracefully
    // (SIGINT straight to HAProxy would drop in-flight requests). The watchdog stops it if the agent dies.
    const child = spawn(binary, ['-f', configFile, '-db'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    haproxy = child;
    // SIGUSR1: a soft stop, in-flight requests finish.
    watchChild(child, { signal: 'USR1', removeDir: o.stateDir ? undefined : stateDir, killAfterMs: (o.hardStopAfterMs ?? 25_000) + 5_000 });
    // Until HAProxy is up its output is kept for the error; after that it goes to the log.
    let output = '';
    let started = false;
    const forwarder = (stream: 'stdout' | 'stderr') => {
      const whole = wholeLines();
      return (d: Buffer) => {
        if (!started) {
          output += d.toString();
          return;
        }
        const lines = whole(d.toString()).filter(
          (l) =>
            l.trim() &&
            // A soft stop reports every proxy (one per backend slot): noise, not news.
            !PROXY_STOPPED.test(l) &&
            // Once up, HAProxy prints each event it logs (a server UP or DOWN, a backend with no
            // server left, a proxy stopped) a second time on stderr as `[WARNING] (pid) : …`: the log
            // (stdout) has it already. Anything else on stderr (a crash report) still goes through.
            !(stream === 'stderr' && HAPROXY_CONSOLE_MESSAGE.test(l)),
        );
        if (lines.length > 0) o.log(lines.join('\n'));
      };
    };
    child.stdout!.on('data', forwarder('stdout'));
    child.stderr!.on('data', forwarder('stderr'));
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    const deadline = o.startTimeoutMs ?? startTimeoutMs(stateDir);
    const maps = Object.values(MAP_FILES).reduce((n, name) => n + fs.statSync(path.join(stateDir, name)).size, 0);
    try {
      await waitFor(
        async () => {
          if (exited) throw new HaproxyStartError(haproxyStartError(output, o.port));
          return (await api.info()).Pid !== undefined;
        },
        deadline,
        'HAProxy to start',
      );
    } catch (error) {
      if (error instanceof HaproxyStartError) throw error;
      child.kill('SIGKILL');
      throw new HaproxyStartError(
        `HAProxy did not answer on its runtime API (${socket}) within ${deadline / 1000} s while loading ${(maps / 1048576).toFixed(1)} MiB of maps from ${stateDir}; on a slow machine or under a profiler, give it longer (--start-timeout SECONDS)`,
      );
    }
    started = true;
    if (output.trim()) o.log(output.trimEnd());
  };
  try {
    await startHaproxy();
  } catch (error) {
    if (!o.stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
    throw error;
  }

  const applier = new MappingApplier(api, {
    stateDir,
    slots,
    cellMaxConn: o.cellMaxConn ?? 100,
    zones: o.zones,
    resolve: o.resolve,
    localNetworks: o.localNetworks,
    zoneNetworks: o.zoneNetworks,
    allowLoopback: true,
    elsewhere: o.elsewhere,
    zoneAffinity: o.zoneAffinity,
  });
  const agent = new MappingAgent({
    api,
    source,
    applier,
    ...(o.zonesFile ? { zones: new ZoneWeightsFollower({ source: new FileMappingSource(o.zonesFile), applier, stateDir, emit: o.log }) } : {}),
    metricsAcrossGroups: o.metricsAcrossGroups,
    connectionLimit: o.maxConn ?? 4000,
    stateDir,
    emit: o.log,
    group: 'local',
    refreshAddressesMs: o.refreshAddressesMs,
    retryUnappliableMs: o.retryUnappliableMs,
    unappliableHint: LOCAL_UNAPPLIABLE_HINT,
    served: o.served,
  });
  agent.loadLastKnownGood();
  let timer: NodeJS.Timeout | undefined;
  const startAgent = () => {
    timer = setInterval(() => void agent.tick(), o.pollMs ?? 500);
  };
  await agent.tick();
  startAgent();
  const fleetRead = o.fleetRead ? fleetReadServer({ cells: () => agent.activeCells(), token: o.fleetRead.token }) : undefined;
  if (fleetRead && o.fleetRead) {
    const { port } = o.fleetRead;
    await new Promise<void>((resolve, reject) => fleetRead.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
  }

  const stopHaproxy = async () => {
    const child = haproxy;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      // 'close', not 'exit': its output pipes are drained too, so its last lines are in the log.
      child.once('close', () => resolve());
      child.kill('SIGUSR1');
    });
  };
  return {
    agent,
    stateDir,
    get haproxyPid() {
      return haproxy?.exitCode === null ? haproxy.pid : undefined;
    },
    stop: async () => {
      if (timer) clearInterval(timer);
      fleetRead?.close();
      await stopHaproxy();
      if (!o.stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
    },
    restartHaproxy: async () => {
      if (haproxy && haproxy.exitCode === null) {
        await new Promise<void>((resolve) => {
          haproxy!.once('exit', () => resolve());
          haproxy!.kill('SIGKILL');
        });
      }
      await startHaproxy();
    },
    stopAgent: () => {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
    startAgent,
  };
}
