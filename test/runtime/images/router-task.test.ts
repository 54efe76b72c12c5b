import * as http from 'http';
import * as net from 'net';
import { CloudAssembly } from 'aws-cdk-lib/cx-api';
import { S3Client } from '@aws-sdk/client-s3';
import { addCell, initialMapping, lookup, MappingDocument, pinKey } from '../../../lib/domain/mapping';
import { MappingStore, publishMapping } from '../../../lib/adapters/mapping-store';
import { routerGroupsStackPropsOf, routerStackPropsOf } from '../../../lib/app';
import { RouterGroupsStack, RouterStack } from '../../../lib/constructs/router';
import { routerParameters } from '../../../lib/domain/names';
import { FakeCell, routed, startCell, until } from '../../support/cells';
import { missingContainerTools, podman } from '../../support/containers';
import {
  buildContainerImage, ContainerDefinition, containerState, environmentOf, hostOpenFilesLimit, removeAll, resourcesOf, runContainer, signal, stopSignalOf, untilTaskHealthy,
} from '../../support/ecs-task';
import { cdkApp, exampleFleet } from '../../support/fleet';
import { healthCheckGet, NlbStandIn } from '../../support/nlb';
import { LocalS3, localS3Client, startLocalS3 } from '../../support/s3';

/**
 * The router task as ECS and the NLB run it, from the images synth stages (the cloud assembly's
 * asset directories, built with buildah on stand-in base images): the task definition's two
 * containers with their user, read-only root, ulimits, environment and shared state volume, taken
 * from the synthesized template; the NLB stand-in in front with the target group's health check,
 * proxy protocol and deregistration delay taken from the template too.
 *
 * Time is compressed for the NLB's own clocks only (health-check interval and deregistration delay,
 * divided by TIME_SCALE); the task's stop timeout, the deadline for SIGKILL, is the template's.
 */
const TIME_SCALE = 5;
const REGION = 'eu-west-1';
const missing = missingContainerTools();
const describeImages = missing ? describe.skip : describe;
if (missing) {
  // The suite must not pass unseen on a machine without the tools: CI installs them.
  test('the image tests can run here', () => { throw new Error(`image tests: ${missing}`); });
}

const NAMES = { haproxy: `router-haproxy-${process.pid}`, agent: `router-agent-${process.pid}` };
const VOLUMES = { state: `router-state-${process.pid}`, 'agent-tmp': `router-agent-tmp-${process.pid}` };

describeImages('the router task from its images, behind an NLB stand-in', () => {
  let s3: LocalS3;
  let client: S3Client;
  let store: MappingStore;
  let cells: FakeCell[];
  let nlb: NlbStandIn;
  let defs: Record<'haproxy' | 'agent', ContainerDefinition>;
  let images: Record<'haproxy' | 'agent', string>;
  let group: string;
  let routerPort: number;
  let v1: MappingDocument;
  /** The mapping in force once published. */
  let current: MappingDocument;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const NOW = { now: '2026-11-29T16:00:00.000Z' };

  const startAgent = async (env: Record<string, string>) => runContainer({ name: NAMES.agent, image: images.agent, def: defs.agent, env, volumes: VOLUMES });

  beforeAll(async () => {
    await removeAll(Object.values(NAMES), Object.values(VOLUMES));
    const fleet = exampleFleet();
    const app = cdkApp();
    const routerStack = new RouterStack(app, `router-${REGION}`, routerStackPropsOf(fleet, REGION));
    const groupsStack = new RouterGroupsStack(app, `router-${REGION}-canary-group`, routerGroupsStackPropsOf(fleet, REGION, 'canary'));
    const assembly: CloudAssembly = app.synth();

    const [taskDefinition] = resourcesOf(assembly, groupsStack.stackName, 'AWS::ECS::TaskDefinition');
    const containers = taskDefinition.ContainerDefinitions as ContainerDefinition[];
    defs = { haproxy: containers.find((c) => c.Name === 'haproxy')!, agent: containers.find((c) => c.Name === 'agent')! };
    // The router groups' target groups share one configuration (configureRouterTargetGroup).
    const [targetGroup] = resourcesOf(assembly, routerStack.stackName, 'AWS::ElasticLoadBalancingV2::TargetGroup').filter((tg) => tg.Protocol === 'TCP');
    const attributes = Object.fromEntries((targetGroup.TargetGroupAttributes as { Key: string; Value: string }[]).map((a) => [a.Key, a.Value]));
    routerPort = Number(targetGroup.Port);

    images = {
      haproxy: (await buildContainerImage(assembly, defs.haproxy)).tag,
      agent: (await buildContainerImage(assembly, defs.agent)).tag,
    };

    s3 = await startLocalS3();
    client = localS3Client(s3, 1);
    store = new MappingStore(client, s3.bucket);
    cells = await Promise.all(['canary', 'cell-a', 'cell-b', 'cell-c'].map((name) => startCell(name)));
    // The target group's ARN as it would be deployed: the agent asks the load balancer only past 80%
    // of its connection limit, which no test here reaches (full-readiness.test.ts, edge.test.ts).
    // The cell endpoints' subnets by AZ ID, as the router stack publishes them (its SSM parameter).
    const [zoneNetworks] = resourcesOf(assembly, routerStack.stackName, 'AWS::SSM::Parameter').filter((p) => p.Name === routerParameters.zoneNetworks(fleet.app));
    const env = environmentOf(defs.agent, {
      MAPPING_BUCKET: s3.bucket,
      ZONE_NETWORKS: String(zoneNetworks.Value),
      TARGET_GROUP_ARN: 'arn:aws:elasticloadbalancing:eu-west-1:111111111111:targetgroup/orders-router-main/0123456789abcdef',
    });
    group = env.ROUTER_GROUP;
    v1 = initialMapping(cells.slice(0, 3).map((c, i) => ({ id: c.name, endpoint: c.endpoint, state: 'active' as const, canary: i === 0 })), fleet.bucketCount, NOW);
    await publishMapping(store, v1, { groups: [group], bakeSeconds: 0 });
    current = v1;

    // A port the task needs taken on this machine would make every later failure misleading.
    for (const port of [routerPort, Number(targetGroup.HealthCheckPort), 9999, 8082]) {
      // Both addresses: the runtime API and the agent bind loopback, the listeners every address.
      const bindable = (host: string) => new Promise<boolean>((resolve) => {
        const probe = net.createServer().once('error', () => resolve(false)).listen(port, host, () => probe.close(() => resolve(true)));
      });
      const free = (await bindable('127.0.0.1')) && (await bindable('0.0.0.0'));
      if (!free) throw new Error(`router task: port ${port} is in use on this machine; the task's containers bind it (host network)`);
    }

    nlb = await NlbStandIn.start({
      proxyProtocolV2: attributes['proxy_protocol_v2.enabled'] === 'true',
      deregistrationDelayMs: Number(attributes['deregistration_delay.timeout_seconds'] ?? 300) * 1000 / TIME_SCALE,
      healthCheck: {
        path: String(targetGroup.HealthCheckPath),
        port: Number(targetGroup.HealthCheckPort),
        intervalMs: Number(targetGroup.HealthCheckIntervalSeconds ?? 30) * 1000 / TIME_SCALE,
        timeoutMs: Number(targetGroup.HealthCheckTimeoutSeconds ?? 6) * 1000,
        healthyThreshold: Number(targetGroup.HealthyThresholdCount ?? 5),
        unhealthyThreshold: Number(targetGroup.UnhealthyThresholdCount ?? 2),
      },
    });

    // The task: HAProxy first (the agent depends on its START), both on one shared localhost.
    // The task's open-files limit is sized for its connection limit; a machine whose own hard limit
    // is lower (no CAP_SYS_RESOURCE to raise it) cannot give it, and HAProxy refuses to start with a
    // maxconn it cannot hold. Then, and only then, HAProxy's `-n` lowers the global maxconn to what the
    // machine holds; everything else is the image's configuration.
    const nofile = defs.haproxy.Ulimits?.find((u) => u.Name === 'nofile')?.HardLimit ?? Infinity;
    const host = hostOpenFilesLimit();
    await runContainer({
      name: NAMES.haproxy, image: images.haproxy, def: defs.haproxy, env: environmentOf(defs.haproxy), volumes: VOLUMES,
      ...(nofile > host ? { command: ['haproxy', '-f', '/usr/local/etc/haproxy/haproxy.cfg', '-n', String(Math.floor(host / 2.5))] } : {}),
    });
    // What the task role, the S3 endpoint and the platform give in AWS, and loopback cells allowed.
    await startAgent({
      ...env,
      AWS_ENDPOINT_URL_S3: s3.endpoint, S3_FORCE_PATH_STYLE: 'true', AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER',
      ALLOW_LOOPBACK_ENDPOINTS: 'true', POLL_SECONDS: '1', TASK_ID: 'task-1',
    });
    nlb.register('127.0.0.1', routerPort);
    await untilTaskHealthy(nlb, routerPort, Object.values(NAMES), 120_000);
  }, 1_200_000);

  afterAll(async () => {
    agent.destroy();
    if (process.env.KEEP_CONTAINERS !== '1') await removeAll(Object.values(NAMES), Object.values(VOLUMES));
    await nlb?.close();
    await Promise.all((cells ?? []).map((c) => c.close()));
    client?.destroy();
    await s3?.stop();
  });

  it('runs as the template says: user 99, read-only root, the image\'s files in the shared state volume', async () => {
    for (const name of Object.values(NAMES)) {
      const r = await podman(['inspect', name, '--format', '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}']);
      expect(r.stdout.trim()).toBe('99:99 true');
    }
    // The maps the image baked are in the volume, owned by 99, and the agent wrote its own there.
    const listing = await podman(['exec', NAMES.agent, 'node', '-e', `
      const fs = require('fs');
      const files = fs.readdirSync('/var/lib/cell-router');
      console.log(JSON.stringify({ files, uid: fs.statSync('/var/lib/cell-router').uid }));
      try { fs.writeFileSync('/app/x', 'x'); } catch (e) { console.log(e.code); }`]);
    const [json, denied] = listing.stdout.trim().split('\n');
    const { files, uid } = JSON.parse(json) as { files: string[]; uid: number };
    expect(uid).toBe(99);
    expect(files).toEqual(expect.arrayContaining(['last-known-good.json', 'readiness.map']));
    expect(files.some((f) => f.endsWith('.map'))).toBe(true);
    expect(denied).toBe('EROFS');
    // The agent's full-task gate wrote HAProxy's readiness map over the runtime API (a failed write
    // logs full-readiness-error instead): below 80% of its limit it asked nobody and kept the task in.
    const logs = await podman(['logs', NAMES.agent]);
    expect(logs.stdout).toMatch(/"event":"full-readiness","mayLeave":false,"reason":"not full \(\d+ of \d+ connections\)"/);
    expect(logs.stdout).not.toContain('full-readiness-error');
  });

  it('passes the NLB health check only with the PROXY v2 header the NLB sends on health checks', async () => {
    expect(nlb.lastCheck(routerPort)).toMatch(/^200 .*"ready":true/);
    const plain = await healthCheckGet(8081, '/ready', { proxy: false, timeoutMs: 5000 }).catch((e: Error) => ({ status: 0, body: e.message }));
    expect(plain.status).not.toBe(200);
  });

  it('routes requests through the NLB stand-in to the cells by tenant', async () => {
    const keys = Array.from({ length: 200 }, (_, i) => `tenant-${i}`);
    for (const key of keys) expect((await routed(agent, nlb.port, key)).body).toBe(lookup(v1, key).cell);
    // The client address the NLB's PROXY header carries reached the cell.
    expect(cells.some((c) => c.lastHeaders?.['x-forwarded-for'] === '198.51.100.7')).toBe(true);
  });

  it('applies a published mapping', async () => {
    const v2 = pinKey(addCell(v1, { id: 'cell-c', endpoint: cells[3].endpoint }, NOW), 'tenant-moved', 'cell-c', NOW);
    await publishMapping(store, v2, { groups: [group], bakeSeconds: 0 });
    // An apply commits the overrides before the buckets: the agent's `applied` line says all of it is in force.
    const applied = new RegExp(`"event":"applied"[^\\n]*"version":${v2.version}[,}]`);
    await until('the agent to log the published mapping applied', async () => applied.test((await podman(['logs', NAMES.agent])).stdout), 60_000);
    expect((await routed(agent, nlb.port, 'tenant-moved')).body).toBe('cell-c');
    current = v2;
    const keys = Array.from({ length: 100 }, (_, i) => `tenant-${i}`);
    for (const key of keys) expect((await routed(agent, nlb.port, key)).body).toBe(lookup(v2, key).cell);
  });

  it('loses no request while the agent container is killed and started again', async () => {
    let restarted = false;
    const outcomes: string[] = [];
    const loops = Array.from({ length: 8 }, async (_, loop) => {
      for (let i = loop; !restarted; i += 8) {
        const r = await routed(agent, nlb.port, `tenant-${i % 50}`);
        outcomes.push(r.status === 200 && r.body === lookup(current, `tenant-${i % 50}`).cell ? 'ok' : `${r.status} ${r.body}`);
      }
    });
    await until('requests flowing', async () => outcomes.length > 20, 30_000);
    await signal(NAMES.agent, 'SIGKILL');
    await until('the agent container to stop', async () => !(await containerState(NAMES.agent)).running, 30_000);
    const whileDown = outcomes.length;
    // ECS restarts a non-essential container with a restart policy in place.
    expect((await podman(['start', NAMES.agent])).status).toBe(0);
    await until('the restarted agent to report ready', async () => (await podman(['exec', NAMES.agent, 'node', '-e',
      "require('http').get('http://127.0.0.1:8082/ready', r => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"])).status === 0, 60_000);
    await until('requests after the restart', async () => outcomes.length > whileDown + 20, 30_000);
    restarted = true;
    await Promise.all(loops);
    expect(outcomes.filter((o) => o !== 'ok')).toEqual([]);
  });

  it('stops as ECS stops it: deregistered, drained, then the image\'s STOPSIGNAL; requests in flight finish', async () => {
    const slow = cells.find((c) => c.name === lookup(current, 'tenant-slow').cell)!;
    slow.behaviour = 'slow';
    slow.delayMs = 3000;
    // Requests in flight at the cell when the stop begins.
    const inFlight = Array.from({ length: 4 }, () => routed(new http.Agent(), nlb.port, 'tenant-slow'));
    await until('the slow requests to reach the cell', async () => nlb.openConnections(routerPort) >= 4, 30_000);
    const stopSignal = await stopSignalOf(images.haproxy);
    expect(stopSignal).toBe('SIGUSR1');
    await nlb.deregister(routerPort);
    // No new connection goes to a deregistered target (the only one: the stand-in resets it).
    expect((await routed(new http.Agent(), nlb.port, 'tenant-1')).status).toBe(0);
    await signal(NAMES.haproxy, stopSignal);
    await signal(NAMES.agent, await stopSignalOf(images.agent));
    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => [a.status, a.body])).toEqual(Array(4).fill([200, slow.name]));
    // HAProxy left by itself once they were done, before the stop timeout (then ECS sends SIGKILL).
    const stopTimeoutMs = (defs.haproxy.StopTimeout ?? 30) * 1000;
    await until('HAProxy to exit after its soft stop', async () => !(await containerState(NAMES.haproxy)).running, stopTimeoutMs);
    expect((await containerState(NAMES.haproxy)).exitCode).toBe(0);
    slow.behaviour = 'ok';
  });
});
