import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { IMAGE_NAMES } from '../../lib/images';
import { BuiltImage, buildContext, buildImage, missingContainerTools, podman } from '../support/containers';

/**
 * Every image this repository ships, built from the contexts synth uses (lib/images) with buildah on
 * stand-in base images; and the failures a build or a run reports in one line.
 */
const missing = missingContainerTools();
const describeImages = missing ? describe.skip : describe;
if (missing) test('the image tests can run here', () => { throw new Error(`image tests: ${missing}`); });

describeImages('the images', () => {
  const built: Record<string, BuiltImage> = {};
  beforeAll(async () => {
    for (const name of IMAGE_NAMES) built[name] = await buildImage(name);
  }, 1_200_000);

  it.each(['workload', 'mover', 'router-agent'])('%s runs its bundle on Node.js 24 with no npm in the image', async (name) => {
    const r = await podman(['run', '--rm', '--network', 'host', '--entrypoint', 'sh', built[name].tag, '-c', 'node --version; command -v npm || echo no-npm; ls /app']);
    const [version, npm, files] = r.stdout.trim().split('\n');
    expect(version).toMatch(/^v24\./);
    expect(npm).toBe('no-npm');
    expect(files).toBe(`${name}.js`);
  });

  it('the HAProxy image holds the configuration cellctl generated at build, valid for HAProxy', async () => {
    const r = await podman(['run', '--rm', '--network', 'host', '--ulimit', 'host', built['router-haproxy'].tag, 'haproxy', '-c', '-f', '/usr/local/etc/haproxy/haproxy.cfg', '-n', '4000']);
    expect([r.status, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('Configuration file is valid')]);
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
});
