import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { BaseImages, buildImage, ContainerStepError, lastError, podman } from '../../runtime/images/podman';
import { PartitionKeySource } from '../../domain/fleet/types';
import { renderHaproxyConfig } from '../../runtime/router/haproxy-config';
import { localHaproxyConfigOptions } from '../../runtime/router/local';
import { RouterRouting, routerStateFiles, routerTaskConfig } from '../../runtime/router/task-config';
import { RuntimeApi } from '../../runtime/router/runtime-api';
import { freeLoopbackPort } from './postgres';

/** Label on every container and volume of a local fleet run from images: the fleet's state directory. */
export const FLEET_LABEL = 'cell-factory.fleet';
/** Where the HAProxy image keeps its map files and 503 page (a VOLUME shared with the agent container). */
const ROUTER_STATE = '/var/lib/cell-router';

/** The images a local fleet runs. */
export interface FleetImages {
  readonly workload: string;
  readonly haproxy: string;
  readonly agent: string;
}

/**
 * Builds the workload and router images from the contexts synth uses (lib/runtime/images), or finds them
 * built (the tag carries the context's hash and the base images' ids). The HAProxy image holds the
 * configuration of a router task routing as `routing` says, as synth renders it; the local router
 * mounts its own over it (startImageRouter).
 */
export async function buildFleetImages(bases: BaseImages, routing: RouterRouting, log: (line: string) => void): Promise<FleetImages> {
  const tags: Record<string, string> = {};
  const rendered = { 'router-haproxy': routerStateFiles(routerTaskConfig(routing), routing.partitionKey) } as Record<
    string,
    Record<string, string> | undefined
  >;
  for (const [key, name] of [
    ['workload', 'workload'],
    ['haproxy', 'router-haproxy'],
    ['agent', 'router-agent'],
  ] as const) {
    log(`image ${name}: building (or reusing) from its context, base images ${bases === 'local' ? 'local stand-ins' : 'pulled'}`);
    tags[key] = (await buildImage(name, bases, rendered[name])).tag;
    log(`image ${name}: ${tags[key]}`);
  }
  return tags as unknown as FleetImages;
}

/** The name prefix of a fleet's containers: unique per state directory, so two fleets on one machine do not collide. */
export function containerPrefix(stateDir: string): string {
  return `cell-factory-${createHash('sha256').update(path.resolve(stateDir)).digest('hex').slice(0, 8)}`;
}

/** The podman flags every container of the fleet gets: host network (loopback ports, like the source fleet), runc, the fleet's label. */
export function fleetContainerFlags(stateDir: string): string[] {
  return ['--network', 'host', '--runtime', 'runc', '--label', `${FLEET_LABEL}=${path.resolve(stateDir)}`];
}

/** Removes every container and volume of the fleet run from `stateDir` (force); returns the containers' names. */
export async function removeFleetContainers(stateDir: string): Promise<string[]> {
  const filter = `label=${FLEET_LABEL}=${path.resolve(stateDir)}`;
  const listed = await podman(['ps', '--all', '--filter', filter, '--format', '{{.Names}}']);
  if (listed.status !== 0) throw new ContainerStepError(`listing the fleet's containers: ${lastError(listed.stderr)}`);
  const names = listed.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  for (const name of names) await podman(['rm', '--force', '--time', '10', name]);
  const volumes = await podman(['volume', 'ls', '--filter', filter, '--format', '{{.Name}}']);
  for (const volume of volumes.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean))
    await podman(['volume', 'rm', '--force', volume]);
  return names;
}

/** The running containers of the fleet run from `stateDir`. */
export async function runningFleetContainers(stateDir: string): Promise<string[]> {
  const r = await podman(['ps', '--filter', `label=${FLEET_LABEL}=${path.resolve(stateDir)}`, '--format', '{{.Names}}']);
  if (r.status !== 0) throw new ContainerStepError(`listing the fleet's containers: ${lastError(r.stderr)}`);
  return r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

export interface ImageRouterOptions {
  readonly images: FleetImages;
  readonly stateDir: string;
  readonly mappingFile: string;
  readonly port: number;
  readonly partitionKey: PartitionKeySource;
  readonly bucketCount: number;
  readonly healthCheckPath: string;
  readonly slots: number;
  readonly cellMaxConn?: number;
  readonly log: (line: string) => void;
}

export interface ImageRouter {
  readonly containers: readonly string[];
  stop(): Promise<void>;
}

/**
 * The router as its ECS task runs it, from the two images: HAProxy and the mapping agent in two
 * containers on one localhost (host network), sharing the state volume the HAProxy image fills.
 * The configuration the image bakes binds the task's fixed ports behind the NLB (8080 and 8081 with
 * the PROXY protocol, the runtime API on 127.0.0.1:9999) and cannot be changed by the environment;
 * here the same generator (`renderHaproxyConfig`) writes one for this fleet's router port on
 * 127.0.0.1, no PROXY protocol (no NLB in front), debug headers on and a free admin port, mounted over
 * the image's. The agent reads the fleet's mapping file (MAPPING_FILE) instead of the bucket.
 */
export async function startImageRouter(o: ImageRouterOptions): Promise<ImageRouter> {
  const prefix = containerPrefix(o.stateDir);
  const names = { haproxy: `${prefix}-router-haproxy`, agent: `${prefix}-router-agent` };
  const volume = `${prefix}-router-state`;
  const configDir = path.join(o.stateDir, 'router-image');
  fs.mkdirSync(configDir, { recursive: true });
  fs.chmodSync(configDir, 0o755);
  const adminPort = await freeLoopbackPort();
  const healthPort = await freeLoopbackPort();
  const cellMaxConn = o.cellMaxConn ?? 100;
  const configFile = path.join(configDir, 'haproxy.cfg');
  fs.writeFileSync(
    configFile,
    renderHaproxyConfig(
      localHaproxyConfigOptions(
        {
          port: o.port,
          partitionKey: o.partitionKey,
          bucketCount: o.bucketCount,
          healthCheckPath: o.healthCheckPath,
          cellMaxConn,
          debugHeaders: true,
        },
        { adminSocket: `ipv4@127.0.0.1:${adminPort}`, stateDir: ROUTER_STATE, slots: o.slots },
      ),
    ),
  );
  fs.chmodSync(configFile, 0o644);
  const flags = fleetContainerFlags(o.stateDir);
  const logTo = (name: string) => ['--log-driver', 'k8s-file', '--log-opt', `path=${path.join(o.stateDir, 'logs', `${name}.log`)}`];
  const must = async (what: string, args: string[]) => {
    const r = await podman(args);
    if (r.status !== 0) throw new ContainerStepError(`router: ${what}: ${lastError(r.stderr)}`);
  };
  const stop = async () => {
    // The agent first (SIGTERM), then HAProxy with its image's STOPSIGNAL (SIGUSR1: a soft stop).
    await podman(['rm', '--force', '--time', '10', names.agent]);
    await podman(['stop', '--time', '30', names.haproxy]);
    await podman(['rm', '--force', '--time', '0', names.haproxy]);
    await podman(['volume', 'rm', '--force', volume]);
  };
  await stop();
  try {
    await must('create the state volume', ['volume', 'create', '--label', `${FLEET_LABEL}=${path.resolve(o.stateDir)}`, volume]);
    await must('start HAProxy', [
      'run',
      '--detach',
      '--name',
      names.haproxy,
      ...flags,
      ...logTo('router-haproxy'),
      '--read-only',
      '--read-only-tmpfs=false',
      '--ulimit',
      'host',
      '--volume',
      `${volume}:${ROUTER_STATE}`,
      '--volume',
      `${configDir}:/usr/local/etc/haproxy:ro`,
      o.images.haproxy,
    ]);
    const api = new RuntimeApi(`127.0.0.1:${adminPort}`);
    const deadline = Date.now() + 30_000;
    while ((await api.info().catch(() => ({}) as Record<string, string>)).Pid === undefined) {
      const state = await podman(['inspect', names.haproxy, '--format', '{{.State.Running}}']);
      if (state.stdout.trim() !== 'true')
        throw new ContainerStepError(`router: the HAProxy container exited at start: ${lastError((await podman(['logs', names.haproxy])).stderr)}`);
      if (Date.now() > deadline)
        throw new ContainerStepError(
          `router: HAProxy did not answer on its runtime API (127.0.0.1:${adminPort}) within 30 s; see ${path.join(o.stateDir, 'logs', 'router-haproxy.log')}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
    const mappingDir = path.dirname(path.resolve(o.mappingFile));
    await must('start the agent', [
      'run',
      '--detach',
      '--name',
      names.agent,
      ...flags,
      ...logTo('router-agent'),
      '--read-only',
      '--read-only-tmpfs=false',
      '--volume',
      `${volume}:${ROUTER_STATE}`,
      '--volume',
      `${mappingDir}:/fleet:ro`,
      '--env',
      `MAPPING_FILE=/fleet/${path.basename(o.mappingFile)}`,
      '--env',
      `HAPROXY_ADMIN=127.0.0.1:${adminPort}`,
      '--env',
      `HEALTH_PORT=${healthPort}`,
      '--env',
      `SLOTS=${o.slots}`,
      '--env',
      `CELL_MAX_CONN=${cellMaxConn}`,
      '--env',
      'ALLOW_LOOPBACK_ENDPOINTS=true',
      '--env',
      'POLL_SECONDS=1',
      '--env',
      'TASK_ID=local',
      o.images.agent,
    ]);
    o.log(`router: containers ${names.haproxy} and ${names.agent} on 127.0.0.1:${o.port} (runtime API 127.0.0.1:${adminPort})`);
  } catch (error) {
    await stop();
    throw error;
  }
  return { containers: Object.values(names), stop };
}
