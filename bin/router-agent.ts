/**
 * The mapping agent of a router task (container entry point). Configuration from the environment:
 *   MAPPING_BUCKET, ROUTER_GROUP          where the group's document lives (groups/<group>/mapping.json)
 *   MAPPING_FILE                          instead of the bucket: a mapping file mounted into the container,
 *                                         re-read when it changes (`cellctl fleet local --images`); no
 *                                         served-version reports then (no bucket to write them to)
 *   HAPROXY_ADMIN=127.0.0.1:9999          HAProxy's runtime API (shared task localhost)
 *   STATE_DIR=/var/lib/cell-router        map files (shared volume with HAProxy) and last-known-good
 *   SLOTS=64, ZONES=3, CELL_MAX_CONN      HAProxy's backend slots, servers per slot, requests per cell
 *   POLL_SECONDS=5, HEALTH_PORT=8082, METRICS_SECONDS=60, REFRESH_SECONDS=30 (endpoint addresses)
 *   METRICS_ACROSS_GROUPS=false           also each cell's requests and 5xx by Cell alone (lanes: docs/lanes.md)
 *   CONNECTION_LIMIT                      HAProxy's serving limit (maxConn), what connection use is measured against
 *   ZONE_CIDRS                            this task's zone (its subnet), comma-separated; by default
 *                                         read from the ECS task metadata endpoint (v4)
 *   ZONE_NETWORKS                         the router VPC's subnets by AZ ID, JSON ({"use1-az1":["10.0.0.0/24"],…}, in
 *                                         the fleet's zone order): server z<i> of each cell is its endpoint's address
 *                                         in the i-th zone, weighted by the region's zones document (zones/<REGION>.json in the
 *                                         bucket, or ZONES_FILE beside MAPPING_FILE); REGION names the region it is for
 *   ALLOW_LOOPBACK_ENDPOINTS=true         tests only: accept cell endpoints on loopback
 *   FREEZE_POLL_MS=250                    poll interval while the mapping in force freezes a move's
 *                                         subject (its flip comes next: a shorter freeze window)
 *   TARGET_GROUP_ARN                      this task's target group: a full task may report itself unready
 *                                         while at most half of its group is out (FullReadinessGate,
 *                                         every FULL_READINESS_SECONDS=60, asking the load balancer only
 *                                         past 80% of CONNECTION_LIMIT); without it a full task never
 *                                         does. TARGET_IP, by default this task's address from the ECS
 *                                         task metadata endpoint (v4)
 *   REPORT_SECONDS=10                     heartbeat of served/<group>/<task id>.json (the version in
 *                                         force, what moves wait on); TASK_ID, by default the ECS
 *                                         task id from the task metadata endpoint (v4), else the host name
 * AWS SDK settings come from the standard chain (task role, AWS_REGION, AWS_ENDPOINT_URL_S3);
 * S3_FORCE_PATH_STYLE=true for an S3-compatible store addressed by path (bucket not in the host).
 * Exit code 2: a configuration error, which restarting the container does not fix.
 */
import { hostname } from 'os';
import { ElasticLoadBalancingV2Client } from '@aws-sdk/client-elastic-load-balancing-v2';
import { S3Client } from '@aws-sdk/client-s3';
// By module, not through lib/runtime/router's index: the agent image bundles what this file reaches.
import { MappingAgent, runAgentLoop } from '../lib/runtime/router/agent';
import { FullReadinessGate, runFullReadiness } from '../lib/runtime/router/full-readiness';
import { targetGroupTargets } from '../lib/runtime/router/target-health';
import { elsewhereOf, MappingApplier } from '../lib/runtime/router/apply';
import { RuntimeApi } from '../lib/runtime/router/runtime-api';
import { S3ServedReporter, SERVED_FRESHNESS_MS } from '../lib/runtime/router/served';
import { FileMappingSource, S3MappingSource } from '../lib/runtime/router/sources';
import { ZoneWeightsFollower } from '../lib/runtime/router/zones';
import { fleetReadServer } from '../lib/runtime/router/fleet-read';
import { zonesKey } from '../lib/adapters/mapping-store/store';
import { ZONE_ID_PATTERN, ZONES_MAX_BYTES } from '../lib/domain/zones';
import type { ZoneAffinity } from '../lib/domain/fleet/types';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`router-agent: ${name} is not set\n`);
    process.exit(2);
  }
  return value;
}

const env = (name: string, fallback: string) => process.env[name] ?? fallback;

function misconfigured(message: string): never {
  process.stderr.write(`router-agent: ${message}\n`);
  process.exit(2);
}

/** A positive number of seconds from the environment, at most `max`; anything else stops the agent with why. */
function seconds(name: string, fallback: string, max: number, why: string): number {
  const value = Number(env(name, fallback));
  if (!Number.isFinite(value) || value <= 0 || value > max) {
    process.stderr.write(`router-agent: ${name}=${process.env[name]} must be a number of seconds in (0, ${max}]${why}\n`);
    process.exit(2);
  }
  return value;
}

// A move counts a report older than SERVED_FRESHNESS_MS as a dead task's: report and poll well inside it.
const reportLimit = SERVED_FRESHNESS_MS / 2000;
const reportWhy = ` (moves count a served report older than ${SERVED_FRESHNESS_MS / 1000} s as a dead task's)`;

/**
 * The subnet of this task (awsvpc): the ECS container metadata endpoint v4 reports it as
 * `Networks[].IPv4SubnetCIDRBlock` (Amazon ECS Developer Guide, "Task metadata endpoint version 4").
 * Interface endpoints of the cells sit in the same subnets, so an address in it is in this task's zone.
 */
async function zoneCidrs(): Promise<string[]> {
  if (process.env.ZONE_CIDRS)
    return process.env.ZONE_CIDRS.split(',')
      .map((c) => c.trim())
      .filter(Boolean);
  const uri = process.env.ECS_CONTAINER_METADATA_URI_V4;
  if (!uri) return [];
  try {
    const metadata = (await (await fetch(uri, { signal: AbortSignal.timeout(2000) })).json()) as { Networks?: { IPv4SubnetCIDRBlock?: string }[] };
    return (metadata.Networks ?? []).map((n) => n.IPv4SubnetCIDRBlock).filter((c): c is string => !!c);
  } catch (error) {
    process.stdout.write(`${JSON.stringify({ level: 'warn', event: 'zone-unknown', error: (error as Error).message })}\n`);
    return [];
  }
}

/**
 * This task's id: the last part of `TaskARN` from the ECS task metadata endpoint v4 (`${ECS_CONTAINER_METADATA_URI_V4}/task`,
 * Amazon ECS Developer Guide, "Task metadata endpoint version 4"), which both containers of a task
 * share and a restarted agent container reads again; else the host name.
 */
async function taskId(): Promise<string> {
  if (process.env.TASK_ID) return process.env.TASK_ID;
  const uri = process.env.ECS_CONTAINER_METADATA_URI_V4;
  if (uri) {
    try {
      const task = (await (await fetch(`${uri}/task`, { signal: AbortSignal.timeout(2000) })).json()) as { TaskARN?: string };
      const id = task.TaskARN?.split('/').pop();
      if (id) return id;
    } catch (error) {
      process.stdout.write(`${JSON.stringify({ level: 'warn', event: 'task-id-unknown', error: (error as Error).message })}\n`);
    }
  }
  return (
    hostname()
      .replace(/[^A-Za-z0-9_.-]/g, '-')
      .slice(0, 128) || 'unknown'
  );
}

/**
 * This task's target id in an `ip` target group: its private IPv4 address (the container metadata
 * endpoint v4's `Networks[].IPv4Addresses`, Amazon ECS Developer Guide, "Task metadata endpoint
 * version 4"); undefined when there is no endpoint (the gate then keeps the task in).
 */
async function targetIp(): Promise<string | undefined> {
  if (process.env.TARGET_IP) return process.env.TARGET_IP;
  const uri = process.env.ECS_CONTAINER_METADATA_URI_V4;
  if (!uri) return undefined;
  const metadata = (await (await fetch(uri, { signal: AbortSignal.timeout(2000) })).json()) as { Networks?: { IPv4Addresses?: string[] }[] };
  return metadata.Networks?.flatMap((n) => n.IPv4Addresses ?? [])[0];
}

/**
 * An environment variable holding a JSON object of string lists, `{ "<key>": ["<value>", …], … }`,
 * each key and value checked; anything else is a configuration error (exit 2) saying what to give.
 */
function stringListsFromEnv(
  name: string,
  text: string | undefined,
  valid: { readonly key: (k: string) => boolean; readonly value: (v: string) => boolean },
  shape: string,
  example: string,
): Record<string, string[]> | undefined {
  if (!text) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return misconfigured(`${name} is not JSON (${(error as Error).message}); give ${shape}`);
  }
  const ok =
    typeof parsed === 'object' &&
    parsed !== null &&
    !Array.isArray(parsed) &&
    Object.entries(parsed).every(([k, list]) => valid.key(k) && Array.isArray(list) && list.every((v) => typeof v === 'string' && valid.value(v)));
  if (!ok) return misconfigured(`${name} ${text}: give ${shape}, for example ${example}`);
  return parsed as Record<string, string[]>;
}

/** ZONE_NETWORKS: AZ ID → the router VPC's subnets there. */
function zoneNetworksOf(text: string | undefined): Record<string, string[]> | undefined {
  return stringListsFromEnv(
    'ZONE_NETWORKS',
    text,
    { key: (zone) => ZONE_ID_PATTERN.test(zone), value: (cidr) => /^\d+\.\d+\.\d+\.\d+\/\d+$/.test(cidr) },
    '{"<AZ ID>":["<IPv4 CIDR>",…],…}',
    '{"use1-az1":["10.0.0.0/24"]}',
  );
}

/** ELSEWHERE (router.reach): region URL → the other region's cells; each cell under one URL, at most MAX_ELSEWHERE_REGIONS URLs. */
function elsewhereFromEnv(text: string | undefined): Record<string, string[]> | undefined {
  const byUrl = stringListsFromEnv(
    'ELSEWHERE',
    text,
    { key: (url) => /^https?:\/\/[^/\s?#]+$/.test(url), value: () => true },
    '{"<region URL>":["<cell>",…],…}',
    '{"https://eu-west-1.api.example.com":["cell-b"]}',
  );
  try {
    elsewhereOf(byUrl);
  } catch (error) {
    return misconfigured(`ELSEWHERE: ${(error as Error).message}`);
  }
  return byUrl;
}

/** ZONE_AFFINITY: `own-zone` or `spread` (the default); anything else is a configuration error (exit 2). */
function zoneAffinityFromEnv(text: string | undefined): ZoneAffinity {
  if (text === undefined || text === '' || text === 'spread') return 'spread';
  if (text === 'own-zone') return 'own-zone';
  return misconfigured(`ZONE_AFFINITY ${text}: give own-zone or spread`);
}

async function main(): Promise<void> {
  const mappingFile = process.env.MAPPING_FILE;
  const bucket = mappingFile ? '' : required('MAPPING_BUCKET');
  const group = mappingFile ? env('ROUTER_GROUP', 'local') : required('ROUTER_GROUP');
  const stateDir = env('STATE_DIR', '/var/lib/cell-router');
  const api = new RuntimeApi(env('HAPROXY_ADMIN', '127.0.0.1:9999'));
  const zoneAffinity = zoneAffinityFromEnv(process.env.ZONE_AFFINITY);
  let localNetworks = await zoneCidrs();
  // Own zone first needs this task's subnet: a metadata read that failed is tried again (1, 2, 4, 8 s)
  // before the task settles for spreading over every zone.
  for (let wait = 1000; zoneAffinity === 'own-zone' && localNetworks.length === 0 && wait <= 8000; wait *= 2) {
    await new Promise((resolve) => setTimeout(resolve, wait));
    localNetworks = await zoneCidrs();
  }
  const s3 = new S3Client({ forcePathStyle: env('S3_FORCE_PATH_STYLE', 'false') === 'true' });
  const emit = (line: string) => process.stdout.write(`${line}\n`);
  const served = mappingFile
    ? undefined
    : new S3ServedReporter(s3, bucket, group, await taskId(), { heartbeatMs: seconds('REPORT_SECONDS', '10', reportLimit, reportWhy) * 1000, emit });
  const zoneNetworks = zoneNetworksOf(process.env.ZONE_NETWORKS);
  const applier = new MappingApplier(api, {
    stateDir,
    slots: Number(env('SLOTS', '64')),
    zones: Number(env('ZONES', '3')),
    cellMaxConn: process.env.CELL_MAX_CONN ? Number(process.env.CELL_MAX_CONN) : undefined,
    localNetworks,
    zoneNetworks,
    allowLoopback: env('ALLOW_LOOPBACK_ENDPOINTS', 'false') === 'true',
    elsewhere: elsewhereFromEnv(process.env.ELSEWHERE),
    zoneAffinity,
  });
  if (zoneAffinity === 'own-zone')
    emit(
      JSON.stringify(
        applier.ownZone
          ? { level: 'info', event: 'zone-affinity', ownZone: applier.ownZone }
          : {
              level: 'warn',
              event: 'zone-affinity',
              problem: 'own zone unknown (no subnet of this task in ZONE_NETWORKS): spreading over every zone',
              localNetworks,
            },
      ),
    );
  const zonesSource = !zoneNetworks
    ? undefined
    : mappingFile
      ? process.env.ZONES_FILE
        ? new FileMappingSource(process.env.ZONES_FILE)
        : undefined
      : new S3MappingSource(s3, bucket, group, 5000, ZONES_MAX_BYTES, zonesKey(required('REGION')));
  const agent = new MappingAgent({
    api,
    source: mappingFile ? new FileMappingSource(mappingFile) : new S3MappingSource(s3, bucket, group),
    applier,
    ...(zonesSource
      ? {
          zones: new ZoneWeightsFollower({
            source: zonesSource,
            applier,
            stateDir,
            region: process.env.REGION,
            emit: (l) => process.stdout.write(`${l}\n`),
          }),
        }
      : {}),
    stateDir,
    group,
    metricsAcrossGroups: env('METRICS_ACROSS_GROUPS', 'false') === 'true',
    ...(process.env.CONNECTION_LIMIT ? { connectionLimit: Number(process.env.CONNECTION_LIMIT) } : {}),
    refreshAddressesMs: Number(env('REFRESH_SECONDS', '30')) * 1000,
    emit,
    served,
  });
  agent.loadLastKnownGood();
  const server = agent.healthServer().listen(Number(env('HEALTH_PORT', '8082')));
  // The fleet-wide read (scatter-gather) listens only when given a port and a token; never behind the NLB.
  const fleetRead =
    process.env.FLEET_READ_PORT && process.env.FLEET_READ_TOKEN
      ? fleetReadServer({ cells: () => agent.activeCells(), token: process.env.FLEET_READ_TOKEN }).listen(Number(process.env.FLEET_READ_PORT))
      : undefined;
  // A full task leaves its target group's rotation only while half of the group stays in. The
  // client is in the target group's own region (AWS_REGION is the mapping bucket's).
  const targetGroupArn = process.env.TARGET_GROUP_ARN;
  let self: string | undefined;
  const readinessMs = seconds('FULL_READINESS_SECONDS', '60', 300, '') * 1000;
  const gate =
    targetGroupArn && process.env.CONNECTION_LIMIT
      ? new FullReadinessGate({
          api,
          stateDir,
          connectionLimit: Number(process.env.CONNECTION_LIMIT),
          // One attempt, three seconds: the next tick asks again (twice as late after a failure), and
          // a throttled call must not be retried into the account's shared ELB API budget.
          targets: targetGroupTargets(
            new ElasticLoadBalancingV2Client({ region: targetGroupArn.split(':')[3], maxAttempts: 1, requestHandler: { requestTimeout: 3000 } }),
            targetGroupArn,
          ),
          // Asked until known: a task's address does not change.
          self: async () => (self ??= await targetIp()),
          // Three ticks: a stuck or dead agent's last permission expires by itself.
          holdMs: 3 * readinessMs,
          emit,
        })
      : undefined;
  const fullReadiness = gate ? runFullReadiness(gate, readinessMs) : undefined;
  // While a move's freeze is in force its flip comes within seconds: the loop polls faster until it has.
  const poll = runAgentLoop(agent, {
    pollMs: seconds('POLL_SECONDS', '5', reportLimit, reportWhy) * 1000,
    freezePollMs: Number(env('FREEZE_POLL_MS', '250')),
  });
  let stopping = false;
  const metrics = setInterval(
    () => {
      void agent.metrics().then((lines) => lines.forEach((l) => process.stdout.write(`${l}\n`)));
      void agent.tenantMetrics().then((lines) => lines.forEach((l) => process.stdout.write(`${l}\n`)));
    },
    Number(env('METRICS_SECONDS', '60')) * 1000,
  );
  const stop = () => {
    if (stopping) return;
    stopping = true;
    poll.stop();
    clearInterval(metrics);
    fullReadiness?.stop();
    server.close();
    fleetRead?.close();
    // The task is stopping: say so, with the version still in force for the requests it finishes,
    // so a move does not wait for this task once its stop timeout has passed.
    void served?.stop(agent.versionInForce);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

void main();
