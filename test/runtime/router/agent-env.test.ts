/**
 * The router agent's environment (bin/router-agent.ts): a malformed value is a configuration error,
 * exit 2 with one line saying what to give, before the agent touches HAProxy or S3.
 */
import { spawnSync } from 'child_process';
import * as path from 'path';
import { REPO_ROOT } from '../../support/fleet';

function agent(env: Record<string, string>): { status: number | null; err: string } {
  const tsx = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
  const r = spawnSync(tsx, [path.join(REPO_ROOT, 'bin', 'router-agent.ts')], {
    env: { PATH: process.env.PATH ?? '', MAPPING_FILE: '/nonexistent/mapping.json', HAPROXY_ADMIN: '127.0.0.1:1', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, err: r.stderr };
}

describe('the router agent refuses a malformed environment (exit 2, one line)', () => {
  it.each([
    [{ ZONE_AFFINITY: 'nearest' }, /^router-agent: ZONE_AFFINITY nearest: give own-zone or spread$/m],
    [{ ZONE_NETWORKS: '{"use1-az1":' }, /^router-agent: ZONE_NETWORKS is not JSON \(.*\); give \{"<AZ ID>":\["<IPv4 CIDR>",…\],…\}$/m],
    [
      { ZONE_NETWORKS: '{"use1-az1":["10.0.0.0"]}' },
      /^router-agent: ZONE_NETWORKS \{"use1-az1":\["10.0.0.0"\]\}: give .*, for example \{"use1-az1":\["10.0.0.0\/24"\]\}$/m,
    ],
    [{ ELSEWHERE: '{"https://eu.example.com/v1":["c1"]}' }, /^router-agent: ELSEWHERE .*: give \{"<region URL>":\["<cell>",…\],…\}, for example/m],
    [
      { ELSEWHERE: '{"https://a.example.com":["c1"],"https://b.example.com":["c1"]}' },
      /^router-agent: ELSEWHERE: cell c1 is sent to two regions' URLs/m,
    ],
  ])(
    '%j',
    (env, message) => {
      const r = agent(env as Record<string, string>);
      expect(r.status).toBe(2);
      expect(r.err).toMatch(message);
    },
    70_000,
  );
});
