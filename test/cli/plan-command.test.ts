import * as path from 'path';
import { duration } from '../../lib/cli';
import { cellctl } from '../support/cli';
import { REPO_ROOT } from '../support/fleet';

describe('cellctl plan', () => {
  const config = path.join(REPO_ROOT, 'cells.config.ts');

  it('prints waves with cells, regions, bake, exposure and the minimum rollout time', async () => {
    const result = await cellctl('plan', '--config', config);
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/wave-1-canary\s+canary\s+canary-eu\s+eu-west-1\s+1h\s+1\/8 \(12\.5%\)/);
    expect(result.out).toMatch(/wave-5-group\s+group\s+us-2,us-3,us-4\s+us-east-1\s+15m\s+8\/8 \(100\.0%\)/);
    expect(result.out).toContain('minimum end-to-end rollout: 5h of bake across 5 cell waves and 4 router waves');
    expect(result.out).toMatch(
      /wave-5-group[^\n]*\n\nthen the routers[^\n]*\n[^\n]*\nrouters-eu-west-1-canary-group\s+eu-west-1\s+1h\nrouters-eu-west-1\s+eu-west-1\s+30m\nrouters-us-east-1-canary-group\s+us-east-1\s+30m\nrouters-us-east-1\s+us-east-1\s+30m/,
    );
  });

  it('prints JSON with --json', async () => {
    const plan = JSON.parse((await cellctl('plan', '--config', config, '--json')).out);
    expect(plan.waves).toHaveLength(5);
    expect(plan.minimumRolloutSeconds).toBe(9000 + 3600 + 3 * 1800);
  });

  it('formats durations', () => {
    expect([duration(0), duration(59), duration(3600), duration(5430)]).toEqual(['0s', '59s', '1h', '1h 30m 30s']);
  });
});
