import * as fs from 'fs';
import * as path from 'path';
import type { CloudAssembly } from 'aws-cdk-lib/cx-api';
import { BuiltImage, buildContext, ContainerStepError, lastError, podman } from './containers';
import type { NlbStandIn } from './nlb';

/** A container definition as the synthesized template holds it (AWS::ECS::TaskDefinition). */
export interface ContainerDefinition {
  readonly Name: string;
  readonly Image: unknown;
  readonly Essential?: boolean;
  readonly User?: string;
  readonly ReadonlyRootFilesystem?: boolean;
  readonly StopTimeout?: number;
  readonly Environment?: { Name: string; Value: unknown }[];
  readonly MountPoints?: { ContainerPath: string; SourceVolume: string; ReadOnly?: boolean }[];
  readonly Ulimits?: { Name: string; SoftLimit: number; HardLimit: number }[];
  readonly HealthCheck?: { Command: string[]; Interval?: number; Timeout?: number; Retries?: number; StartPeriod?: number };
}

type Json = Record<string, unknown>;

/** The resources of `type` in a stack's synthesized template. */
export function resourcesOf(assembly: CloudAssembly, stackName: string, type: string): Json[] {
  const template = assembly.getStackByName(stackName).template as { Resources: Record<string, { Type: string; Properties: Json }> };
  return Object.values(template.Resources)
    .filter((r) => r.Type === type)
    .map((r) => r.Properties);
}

/** The image asset hash a container definition's `Image` names (`…:<hash>`). */
function assetHash(image: unknown): string {
  const text = JSON.stringify(image);
  const m = /:([0-9a-f]{64})"/.exec(text);
  if (!m) throw new Error(`container image ${text}: not an image asset of this app`);
  return m[1];
}

/**
 * Builds the image a container definition runs, from the very asset directory synth staged in the
 * cloud assembly (what the pipeline's Assets stage would build and push).
 */
export function buildContainerImage(assembly: CloudAssembly, def: ContainerDefinition): Promise<BuiltImage> {
  const dir = path.join(assembly.directory, `asset.${assetHash(def.Image)}`);
  if (!fs.existsSync(path.join(dir, 'Dockerfile'))) throw new Error(`container ${def.Name}: no staged asset ${dir}`);
  return buildContext(def.Name, dir);
}

/** The environment of a container definition, with values the template leaves to deploy time given by `tokens`. */
export function environmentOf(def: ContainerDefinition, tokens: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { Name, Value } of def.Environment ?? []) {
    if (typeof Value === 'string') env[Name] = Value;
    else if (tokens[Name] !== undefined) env[Name] = tokens[Name];
    else throw new Error(`container ${def.Name}: ${Name} is ${JSON.stringify(Value)} in the template; give the test's value`);
  }
  return env;
}

export interface RunContainerOptions {
  /** The container's podman name (unique on the machine). */
  readonly name: string;
  readonly image: string;
  readonly def: ContainerDefinition;
  readonly env: Record<string, string>;
  /** Task volume name → podman volume name. */
  readonly volumes?: Record<string, string>;
  /** Extra read-only bind mounts `host path:container path` (test-only files). */
  readonly binds?: readonly string[];
  /** Replaces the image's CMD (the entry point stays). */
  readonly command?: readonly string[];
}

/** This process's [soft, hard] limit named `title` in /proc/self/limits ('Max open files'); Infinity when unlimited. */
function hostLimit(title: string): [number, number] {
  const line = fs
    .readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(title))!;
  const [soft, hard] = line
    .slice(title.length)
    .trim()
    .split(/\s+/)
    .map((v) => (v === 'unlimited' ? Infinity : Number(v)));
  return [soft, hard];
}

/** This process's hard limit on open files: a container cannot get more without CAP_SYS_RESOURCE. */
export function hostOpenFilesLimit(): number {
  return hostLimit('Max open files')[1];
}

/**
 * Starts a container the way ECS starts this definition on Fargate (awsvpc: the task's containers
 * share one localhost, here the host's): its user, a read-only root file system without podman's own
 * tmpfs mounts, its ulimits, its mount points on named volumes (an empty named volume is filled with
 * the image's files at that path, as ECS does for a path the image declares a VOLUME).
 */
export async function runContainer(o: RunContainerOptions): Promise<void> {
  const args = ['run', '--detach', '--name', o.name, '--network', 'host', '--runtime', 'runc'];
  if (o.def.User) args.push('--user', o.def.User);
  if (o.def.ReadonlyRootFilesystem) args.push('--read-only', '--read-only-tmpfs=false');
  // A limit above the machine's own hard limit cannot be given without CAP_SYS_RESOURCE (the runtime
  // refuses to start the container, and podman then adds a process limit of its own that is refused
  // too): the machine's own limits are the most it can give.
  const over = (o.def.Ulimits ?? []).some((u) => u.Name === 'nofile' && u.HardLimit > hostOpenFilesLimit());
  if (over) args.push('--ulimit', 'host');
  else for (const u of o.def.Ulimits ?? []) args.push('--ulimit', `${u.Name}=${u.SoftLimit}:${u.HardLimit}`);
  for (const b of o.binds ?? []) args.push('--volume', `${b}:ro`);
  for (const m of o.def.MountPoints ?? []) {
    const volume = o.volumes?.[m.SourceVolume];
    if (!volume) throw new Error(`container ${o.def.Name}: mount point ${m.ContainerPath} needs task volume ${m.SourceVolume}`);
    args.push('--volume', `${volume}:${m.ContainerPath}${m.ReadOnly ? ':ro' : ''}`);
  }
  for (const [k, v] of Object.entries(o.env)) args.push('--env', `${k}=${v}`);
  args.push(o.image, ...(o.command ?? []));
  const r = await podman(args);
  if (r.status !== 0) throw new ContainerStepError(`container ${o.def.Name}: podman run: ${lastError(r.stderr)}`);
}

export interface ContainerState {
  readonly running: boolean;
  readonly exitCode: number;
}

export async function containerState(name: string): Promise<ContainerState> {
  const r = await podman(['inspect', name, '--format', '{{.State.Running}} {{.State.ExitCode}}']);
  if (r.status !== 0) throw new Error(`container ${name}: ${lastError(r.stderr)}`);
  const [running, code] = r.stdout.trim().split(' ');
  return { running: running === 'true', exitCode: Number(code) };
}

/** The container's output, both streams. */
export async function logsOf(name: string): Promise<string> {
  const r = await podman(['logs', name]);
  return `${r.stdout}${r.stderr}`;
}

/** The last line the container printed that says what went wrong (for a one-line failure). */
export async function lastLogLine(name: string): Promise<string> {
  return lastError(await logsOf(name));
}

export async function signal(name: string, sig: string): Promise<void> {
  await podman(['kill', '--signal', sig, name]);
}

/** The STOPSIGNAL an image declares (SIGTERM when it declares none), which ECS sends on stop. */
export async function stopSignalOf(image: string): Promise<string> {
  const r = await podman(['image', 'inspect', image, '--format', '{{.Config.StopSignal}}']);
  return r.stdout.trim() || 'SIGTERM';
}

/** Removes containers and volumes (force), ignoring what is already gone. */
export async function removeAll(containers: readonly string[], volumes: readonly string[] = []): Promise<void> {
  for (const c of containers) await podman(['rm', '--force', '--time', '0', c]);
  for (const v of volumes) await podman(['volume', 'rm', '--force', v]);
}

/**
 * Waits until the NLB stand-in counts the task's target healthy. Fails in one line when a container of
 * the task exits first (its exit code and last log line) or when `timeoutMs` passes (the last health
 * check's answer).
 */
export async function untilTaskHealthy(nlb: NlbStandIn, port: number, containers: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (nlb.state(port) !== 'healthy') {
    for (const name of containers) {
      const state = await containerState(name);
      if (!state.running)
        throw new ContainerStepError(
          `router task: container ${name} exited ${state.exitCode} before the task was healthy: ${await lastLogLine(name)}`,
        );
    }
    if (Date.now() > deadline)
      throw new ContainerStepError(
        `router task: not healthy through the NLB stand-in after ${timeoutMs / 1000} s; last health check: ${nlb.lastCheck(port)}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}
