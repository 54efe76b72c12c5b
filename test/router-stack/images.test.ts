import * as fs from 'fs';
import * as path from 'path';
import { REPO_ROOT, ROUTER_USER, STATE_DIR } from '../../lib/router-stack';

/** The Dockerfile's instructions, continuation lines joined. */
function instructions(image: string): string[] {
  const text = fs.readFileSync(path.join(REPO_ROOT, 'images', image, 'Dockerfile'), 'utf8');
  return text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
}

describe('router images', () => {
  const haproxy = instructions('router-haproxy');
  const agent = instructions('router-agent');
  const runtime = haproxy.slice(haproxy.findIndex((l) => /^FROM .*haproxy/.test(l)));

  it('run HAProxy from the official image, with the generated configuration', () => {
    expect(runtime[0]).toMatch(/^FROM public\.ecr\.aws\/docker\/library\/haproxy:\d/);
    expect(haproxy.some((l) => l.includes(`cellctl router config`) && l.includes(`--state-dir ${STATE_DIR}`))).toBe(true);
  });

  it('declare the state directory a VOLUME, so ECS copies the generated maps into the task volume', () => {
    const volume = runtime.findIndex((l) => l === `VOLUME ["${STATE_DIR}"]`);
    expect(volume).toBeGreaterThan(0);
    // Docker discards changes to a volume path made after the VOLUME instruction.
    expect(runtime.slice(volume + 1).filter((l) => /^(RUN|COPY|ADD)\b/.test(l) && l.includes(STATE_DIR))).toEqual([]);
    // Owned by the user both containers run as (the volume keeps the image directory's owner).
    expect(runtime.slice(0, volume).some((l) => l.startsWith('RUN') && l.includes(`chown -R ${ROUTER_USER} ${STATE_DIR}`))).toBe(true);
  });

  it('run the agent as the HAProxy image\'s user, pointed at the same state directory and runtime API', () => {
    expect(agent.filter((l) => l.startsWith('USER'))).toEqual([`USER ${ROUTER_USER}`]);
    expect(agent.find((l) => l.startsWith('ENV'))).toContain(`STATE_DIR=${STATE_DIR}`);
    const admin = /--admin-socket (\S+)/.exec(haproxy.find((l) => l.includes('cellctl router config'))!)![1];
    expect(agent.find((l) => l.startsWith('ENV'))).toContain(`HAPROXY_ADMIN=${admin}`);
  });
});
