import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { IMAGE_NAMES } from '../../../lib/runtime/images';
import { routerImageConfig } from '../../../lib/constructs/isolation';
import { routerStateFiles } from '../../../lib/runtime/router';
import { exampleFleet } from '../../support/fleet';
import { BuiltImage, buildContext, buildImage, missingContainerTools, podman } from '../../support/containers';
import { removeAll, runContainer, untilTaskHealthy } from '../../support/ecs-task';
import { NlbStandIn } from '../../support/nlb';

/**
 * Every image this repository ships, built from the contexts synth uses (lib/runtime/images) with buildah on
 * stand-in base images; and the failures a build or a run reports in one line.
 */
const missing = missingContainerTools();
const describeImages = missing ? describe.skip : describe;
if (missing) test('the image tests can run here', () => { throw new Error(`image tests: ${missing}`); });

describeImages('the images', () => {
  const built: Record<string, BuiltImage> = {};
  beforeAll(async () => {
    const rendered: Partial<Record<string, Record<string, string>>> = { 'router-haproxy': routerStateFiles(routerImageConfig(exampleFleet())) };
    for (const name of IMAGE_NAMES) built[name] = await buildImage(name, 'local', rendered[name]);
  }, 1_200_000);

  it.each(['workload', 'mover', 'router-agent'])('%s runs its bundle on Node.js 24 with no npm in the image', async (name) => {
    const r = await podman(['run', '--rm', '--network', 'host', '--entrypoint', 'sh', built[name].tag, '-c', 'node --version; command -v npm || echo no-npm; ls /app']);
    const [version, npm, files] = r.stdout.trim().split('\n');
    expect(version).toMatch(/^v24\./);
    expect(npm).toBe('no-npm');
    expect(files).toBe(`${name}.js`);
  });

  it('the HAProxy image holds the configuration rendered for the router, valid for HAProxy, and its state files', async () => {
    const r = await podman(['run', '--rm', '--network', 'host', '--ulimit', 'host', built['router-haproxy'].tag, 'haproxy', '-c', '-f', '/usr/local/etc/haproxy/haproxy.cfg', '-n', '4000']);
    expect([r.status, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('Configuration file is valid')]);
    const config = await podman(['run', '--rm', '--network', 'host', '--entrypoint', 'sh', built['router-haproxy'].tag, '-c', 'cat /usr/local/etc/haproxy/haproxy.cfg; ls /var/lib/cell-router >&2']);
    expect(config.stdout).toBe(routerImageConfig(exampleFleet()));
    expect(config.stderr.trim().split('\n').sort()).toEqual(Object.keys(routerStateFiles('')).filter((f) => f !== 'haproxy.cfg').sort());
  });

  it('a failed Dockerfile build reports the step and the reason in one line', async () => {
    const context = fs.mkdtempSync(path.join(os.tmpdir(), 'broken-image-'));
    fs.writeFileSync(path.join(context, 'Dockerfile'), 'FROM public.ecr.aws/docker/library/node:24-bookworm-slim\nCOPY router-agent.js /app/router-agent.js\n');
    await expect(buildContext('broken', context)).rejects.toThrow(/^image broken: STEP 2\/2: COPY router-agent\.js \/app\/router-agent\.js: .*(no such file|not found|does not exist)/i);
    fs.rmSync(context, { recursive: true, force: true });
  });

  it('an image missing the file its entry point runs fails in one line naming it', async () => {
    const context = fs.mkdtempSync(path.join(os.tmpdir(), 'empty-image-'));
    fs.writeFileSync(path.join(context, 'Dockerfile'), 'FROM public.ecr.aws/docker/library/node:24-bookworm-slim\nCMD ["node", "/app/router-agent.js"]\n');
    const image = await buildContext('no-entry', context);
    const r = await podman(['run', '--rm', '--network', 'host', image.tag]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/Cannot find module '\/app\/router-agent\.js'/);
    fs.rmSync(context, { recursive: true, force: true });
  });

  it('a task whose health check never passes fails in one line with the last answer', async () => {
    // HAProxy alone: no agent, so no mapping is ever in force and readiness stays 503.
    const name = `never-healthy-${process.pid}`;
    await removeAll([name], [`${name}-state`]);
    const nlb = await NlbStandIn.start({
      proxyProtocolV2: true, deregistrationDelayMs: 0,
      healthCheck: { path: '/ready', port: 8081, intervalMs: 500, timeoutMs: 2000, healthyThreshold: 2, unhealthyThreshold: 2 },
    });
    try {
      await runContainer({
        name, image: built['router-haproxy'].tag, env: {}, volumes: { state: `${name}-state` },
        def: { Name: 'haproxy', Image: '', User: '99:99', ReadonlyRootFilesystem: true, MountPoints: [{ ContainerPath: '/var/lib/cell-router', SourceVolume: 'state' }] },
        command: ['haproxy', '-f', '/usr/local/etc/haproxy/haproxy.cfg', '-n', '4000'],
      });
      nlb.register('127.0.0.1', 8080);
      await expect(untilTaskHealthy(nlb, 8080, [name], 5000)).rejects.toThrow(/^router task: not healthy through the NLB stand-in after 5 s; last health check: 503 .*"reason":"no mapping in force"/);
    } finally {
      await nlb.close();
      await removeAll([name], [`${name}-state`]);
    }
  });
});
