/**
 * The mapping agent of a router task (container entry point). Configuration from the environment:
 *   MAPPING_BUCKET, ROUTER_GROUP          where the group's document lives (groups/<group>/mapping.json)
 *   HAPROXY_ADMIN=127.0.0.1:9999          HAProxy's runtime API (shared task localhost)
 *   STATE_DIR=/var/lib/cell-router        map files (shared volume with HAProxy) and last-known-good
 *   SLOTS=64, ZONES=3, CELL_MAX_CONN      HAProxy's backend slots, servers per slot, requests per cell
 *   POLL_SECONDS=5, HEALTH_PORT=8082, METRICS_SECONDS=60, REFRESH_SECONDS=30 (endpoint addresses)
 *   ZONE_CIDRS                            this task's zone (its subnet), comma-separated; by default
 *                                         read from the ECS task metadata endpoint (v4)
 *   ALLOW_LOOPBACK_ENDPOINTS=true         tests only: accept cell endpoints on loopback
 * AWS SDK settings come from the standard chain (task role, AWS_REGION, AWS_ENDPOINT_URL_S3);
 * S3_FORCE_PATH_STYLE=true for an S3-compatible store addressed by path (bucket not in the host).
 * Exit code 2: a configuration error, which restarting the container does not fix.
 */
import { S3Client } from '@aws-sdk/client-s3';
// By module, not through lib/router's index: the agent image bundles what this file reaches.
import { MappingAgent } from '../lib/router/agent';
import { MappingApplier } from '../lib/router/apply';
import { RuntimeApi } from '../lib/router/runtime-api';
import { S3MappingSource } from '../lib/router/sources';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`router-agent: ${name} is not set\n`);
    process.exit(2);
  }
  return value;
}

const env = (name: string, fallback: string) => process.env[name] ?? fallback;

/**
 * The subnet of this task (awsvpc): the ECS container metadata endpoint v4 reports it as
 * `Networks[].IPv4SubnetCIDRBlock` (Amazon ECS Developer Guide, "Task metadata endpoint version 4").
 * Interface endpoints of the cells sit in the same subnets, so an address in it is in this task's zone.
 */
async function zoneCidrs(): Promise<string[]> {
  if (process.env.ZONE_CIDRS) return process.env.ZONE_CIDRS.split(',').map((c) => c.trim()).filter(Boolean);
  const uri = process.env.ECS_CONTAINER_METADATA_URI_V4;
  if (!uri) return [];
  try {
    const metadata = await (await fetch(uri, { signal: AbortSignal.timeout(2000) })).json() as { Networks?: { IPv4SubnetCIDRBlock?: string }[] };
    return (metadata.Networks ?? []).map((n) => n.IPv4SubnetCIDRBlock).filter((c): c is string => !!c);
  } catch (error) {
    process.stdout.write(`${JSON.stringify({ level: 'warn', event: 'zone-unknown', error: (error as Error).message })}\n`);
    return [];
  }
}

async function main(): Promise<void> {
  const bucket = required('MAPPING_BUCKET');
  const group = required('ROUTER_GROUP');
  const stateDir = env('STATE_DIR', '/var/lib/cell-router');
  const api = new RuntimeApi(env('HAPROXY_ADMIN', '127.0.0.1:9999'));
  const localNetworks = await zoneCidrs();
  const agent = new MappingAgent({
    api,
    source: new S3MappingSource(new S3Client({ forcePathStyle: env('S3_FORCE_PATH_STYLE', 'false') === 'true' }), bucket, group),
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
    refreshAddressesMs: Number(env('REFRESH_SECONDS', '30')) * 1000,
    emit: (line) => process.stdout.write(`${line}\n`),
  });
  agent.loadLastKnownGood();
  const server = agent.healthServer().listen(Number(env('HEALTH_PORT', '8082')));
  const poll = setInterval(() => void agent.tick(), Number(env('POLL_SECONDS', '5')) * 1000);
  const metrics = setInterval(() => {
    void agent.metrics().then((lines) => lines.forEach((l) => process.stdout.write(`${l}\n`)));
  }, Number(env('METRICS_SECONDS', '60')) * 1000);
  void agent.tick();
  const stop = () => {
    clearInterval(poll);
    clearInterval(metrics);
    server.close();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

void main();
