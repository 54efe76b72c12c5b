import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { imageContext, imageDockerfile, ImageName } from '../../../lib/runtime/images';
import { routerImageConfig } from '../../../lib/constructs/isolation';
import { routerStateFiles } from '../../../lib/runtime/router';
import { HAPROXY_ADMIN, ROUTER_USER, STATE_DIR } from '../../../lib/constructs/router';
import { REPO_ROOT } from '../../../lib/domain/files/repo-root';
import { exampleFleet } from '../../support/fleet';
import { until } from '../../support/cells';

/** The Dockerfile's instructions, continuation lines joined. */
function instructions(image: ImageName): string[] {
  const text = fs.readFileSync(path.join(REPO_ROOT, imageDockerfile(image)), 'utf8');
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

describe('router images', () => {
  const haproxy = instructions('router-haproxy');
  const agent = instructions('router-agent');
  const runtime = haproxy.slice(haproxy.findIndex((l) => /^FROM .*haproxy/.test(l)));

  it('run HAProxy from the official image, with the configuration rendered at synth, stopped by SIGUSR1 (soft stop)', () => {
    expect(runtime[0]).toMatch(/^FROM public\.ecr\.aws\/docker\/library\/haproxy:\d/);
    // One stage: nothing runs at build to make the configuration.
    expect(haproxy.filter((l) => l.startsWith('FROM'))).toHaveLength(1);
    expect(runtime).toContain('STOPSIGNAL SIGUSR1');
    expect(haproxy).toContain('COPY haproxy.cfg /usr/local/etc/haproxy/haproxy.cfg');
    expect(haproxy).toContain(`COPY 503.http *.map *.pem ${STATE_DIR}/`);
  });

  it('declare the state directory a VOLUME, so ECS copies the generated maps into the task volume', () => {
    const volume = runtime.findIndex((l) => l === `VOLUME ["${STATE_DIR}"]`);
    expect(volume).toBeGreaterThan(0);
    // Docker discards changes to a volume path made after the VOLUME instruction.
    expect(runtime.slice(volume + 1).filter((l) => /^(RUN|COPY|ADD)\b/.test(l) && l.includes(STATE_DIR))).toEqual([]);
    // Owned by the user both containers run as (the volume keeps the image directory's owner).
    expect(runtime.slice(0, volume).some((l) => l.startsWith('RUN') && l.includes(`chown -R ${ROUTER_USER} ${STATE_DIR}`))).toBe(true);
  });

  it("run the agent as the HAProxy image's user, pointed at the same state directory and runtime API", () => {
    expect(agent.filter((l) => l.startsWith('USER'))).toEqual([`USER ${ROUTER_USER}`]);
    expect(agent.find((l) => l.startsWith('ENV'))).toContain(`STATE_DIR=${STATE_DIR}`);
    expect(agent.find((l) => l.startsWith('ENV'))).toContain(`HAPROXY_ADMIN=${HAPROXY_ADMIN}`);
    expect(routerImageConfig(exampleFleet())).toContain(`stats socket ipv4@${HAPROXY_ADMIN} level admin`);
  });
});

/** An exit hook that writes the modules the process loaded (`require.cache`) to a file. */
const probe = (out: string) =>
  `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(Object.keys(require.cache))));`;

/** The agent Dockerfile's stages, each from its FROM line. */
const agentStages = instructions('router-agent').reduce<string[][]>((stages, line) => {
  if (line.startsWith('FROM ')) stages.push([]);
  stages[stages.length - 1].push(line);
  return stages;
}, []);

describe('router images: what their entry points load', () => {
  it('the HAProxy image: its Dockerfile and the files rendered for it, nothing else', () => {
    const config = routerImageConfig(exampleFleet());
    const context = imageContext('router-haproxy', { rendered: routerStateFiles(config) });
    expect(fs.readdirSync(context).sort()).toEqual(['Dockerfile', ...Object.keys(routerStateFiles(config))].sort());
    expect(fs.readFileSync(path.join(context, 'haproxy.cfg'), 'utf8')).toBe(config);
    expect(() => imageContext('router-haproxy')).toThrow(/image router-haproxy: its context needs the rendered .*haproxy\.cfg/);
  });

  it('the agent image: one bundled file that loads no package at all (the runtime stage has no node_modules and no npm)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'image-deps-'));
    const bundle = path.join(dir, 'router-agent.js');
    fs.copyFileSync(path.join(imageContext('router-agent'), 'router-agent.js'), bundle);
    const out = path.join(dir, 'modules.json');
    // Run from an empty directory: nothing can be found in a node_modules.
    const agent = spawn(process.execPath, ['-e', `${probe(out)} require(${JSON.stringify(bundle)});`], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'ignore'],
      env: {
        PATH: process.env.PATH,
        MAPPING_BUCKET: 'b',
        ROUTER_GROUP: 'main',
        STATE_DIR: dir,
        HAPROXY_ADMIN: '127.0.0.1:1',
        HEALTH_PORT: '0',
        AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:1',
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'x',
        AWS_SECRET_ACCESS_KEY: 'x',
        AWS_MAX_ATTEMPTS: '1',
      },
    });
    // Running, not just started: its first poll went to S3 (nothing listens there) and failed.
    let stdout = '';
    agent.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    await until("the agent's first poll", async () => stdout.includes('"event":"fetch-error"'), 60_000);
    agent.kill('SIGTERM');
    await new Promise((r) => agent.once('exit', r));
    const loaded = JSON.parse(fs.readFileSync(out, 'utf8')) as string[];
    expect(loaded).toEqual([bundle]);
    const runtimeStage = agentStages[agentStages.length - 1];
    expect(runtimeStage.filter((l) => /\bnpm\b|\bnpx\b/.test(l) && !l.startsWith('RUN rm'))).toEqual([]);
    expect(runtimeStage).toContain('COPY router-agent.js /app/router-agent.js');
    expect(runtimeStage[runtimeStage.length - 1]).toBe('CMD ["node", "/app/router-agent.js"]');
    fs.rmSync(dir, { recursive: true, force: true });
  }, 180_000);
});
