/**
 * The mapping agent of a router task (container entry point). Configuration from the environment:
 *   MAPPING_BUCKET, ROUTER_GROUP          where the group's document lives (groups/<group>/mapping.json)
 *   HAPROXY_ADMIN=127.0.0.1:9999          HAProxy's runtime API (shared task localhost)
 *   STATE_DIR=/var/lib/cell-router        map files (shared volume with HAProxy) and last-known-good
 *   SLOTS=64, POLL_SECONDS=5, HEALTH_PORT=8081, METRICS_SECONDS=60
 * AWS SDK settings come from the standard chain (task role, AWS_REGION, AWS_ENDPOINT_URL_S3);
 * S3_FORCE_PATH_STYLE=true for an S3-compatible store addressed by path (bucket not in the host).
 * Exit code 2: a configuration error, which restarting the container does not fix.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { MappingAgent, MappingApplier, RuntimeApi, S3MappingSource } from '../lib/router';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`router-agent: ${name} is not set\n`);
    process.exit(2);
  }
  return value;
}

const env = (name: string, fallback: string) => process.env[name] ?? fallback;
const bucket = required('MAPPING_BUCKET');
const group = required('ROUTER_GROUP');
const stateDir = env('STATE_DIR', '/var/lib/cell-router');
const api = new RuntimeApi(env('HAPROXY_ADMIN', '127.0.0.1:9999'));
const agent = new MappingAgent({
  api,
  source: new S3MappingSource(new S3Client({ forcePathStyle: env('S3_FORCE_PATH_STYLE', 'false') === 'true' }), bucket, group),
  applier: new MappingApplier(api, { stateDir, slots: Number(env('SLOTS', '64')) }),
  stateDir,
  group,
  emit: (line) => process.stdout.write(`${line}\n`),
});
agent.loadLastKnownGood();
const server = agent.healthServer().listen(Number(env('HEALTH_PORT', '8081')));
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
