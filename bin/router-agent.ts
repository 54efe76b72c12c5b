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
 *   ALLOW_LOOPBACK_ENDPOINTS=true         tests only: accept cell endpoints on loopback
 *   FREEZE_POLL_MS=250                    poll interval while the mapping in force freezes a move's
 *                                         subject (its flip comes next: a shorter freeze window)
 *   REPORT_SECONDS=10                     heartbeat of served/<group>/<task id>.json (the version in
 *                                         force, what moves wait on); TASK_ID, by default the ECS
 *                                         task id from the task metadata endpoint (v4), else the host name
 * AWS SDK settings come from the standard chain (task role, AWS_REGION, AWS_ENDPOINT_URL_S3);
 * S3_FORCE_PATH_STYLE=true for an S3-compatible store addressed by path (bucket not in the host).
 * Exit code 2: a configuration error, which restarting the container does not fix.
 */
import { hostname } from 'os';
import { S3Client } from '@aws-sdk/client-s3';
// By module, not through lib/runtime/router's index: the agent image bundles what this file reaches.
import { MappingAgent, runAgentLoop } from '../lib/runtime/router/agent';
import { MappingApplier } from '../lib/runtime/router/apply';
import { RuntimeApi } from '../lib/runtime/router/runtime-api';
import { S3ServedReporter, SERVED_FRESHNESS_MS } from '../lib/runtime/router/served';
import { FileMappingSource, S3MappingSource } from '../lib/runtime/router/sources';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`router-agent: ${name} is not set\n`);
    process.exit(2);
  }
  return value;
}

const env = (name: string, fallback: string) => process.env[name] ?? fallback;

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

async function main(): Promise<void> {
  const mappingFile = process.env.MAPPING_FILE;
  const bucket = mappingFile ? '' : required('MAPPING_BUCKET');
  const group = mappingFile ? env('ROUTER_GROUP', 'local') : required('ROUTER_GROUP');
  const stateDir = env('STATE_DIR', '/var/lib/cell-router');
  const api = new RuntimeApi(env('HAPROXY_ADMIN', '127.0.0.1:9999'));
  const localNetworks = await zoneCidrs();
  const s3 = new S3Client({ forcePathStyle: env('S3_FORCE_PATH_STYLE', 'false') === 'true' });
  const emit = (line: string) => process.stdout.write(`${line}\n`);
  const served = mappingFile
    ? undefined
    : new S3ServedReporter(s3, bucket, group, await taskId(), { heartbeatMs: seconds('REPORT_SECONDS', '10', reportLimit, reportWhy) * 1000, emit });
  const agent = new MappingAgent({
    api,
    source: mappingFile ? new FileMappingSource(mappingFile) : new S3MappingSource(s3, bucket, group),
    applier: new MappingApplier(api, {
      stateDir,
      slots: Number(env('SLOTS', '64')),
      zones: Number(env('ZONES', '3')),
      cellMaxConn: process.env.CELL_MAX_CONN ? Number(process.env.CELL_MAX_CONN) : undefined,
      localNetworks,
      allowLoopback: env('ALLOW_LOOPBACK_ENDPOINTS', 'false') === 'true',
    }),
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
    server.close();
    // The task is stopping: say so, with the version still in force for the requests it finishes,
    // so a move does not wait for this task once its stop timeout has passed.
    void served?.stop(agent.versionInForce);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

void main();
