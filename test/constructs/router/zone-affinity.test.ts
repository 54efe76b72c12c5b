import { Template } from 'aws-cdk-lib/assertions';
import { routerGroupsStackPropsOf, routerStackPropsOf } from '../../../lib/app';
import { RouterGroupsStack, RouterStack } from '../../../lib/constructs/router';
import { Fleet } from '../../../lib/domain/fleet';
import { routerParameters } from '../../../lib/domain/names';
import { cdkApp, exampleFleet } from '../../support/fleet';

/** The agent's environment in each task definition of a region's main group stack. */
function agentEnvironments(fleet: Fleet, region: string): Record<string, string>[] {
  const app = cdkApp();
  const stack = new RouterGroupsStack(app, `router-${region}-groups`, routerGroupsStackPropsOf(fleet, region, 'rest'));
  return Object.values(Template.fromStack(stack).findResources('AWS::ECS::TaskDefinition')).map((td) => {
    const agent = (td.Properties.ContainerDefinitions as { Name: string; Environment: { Name: string; Value: unknown }[] }[]).find(
      (c) => c.Name === 'agent',
    )!;
    return Object.fromEntries(agent.Environment.map((e) => [e.Name, e.Value as string]));
  });
}

describe('router.zoneAffinity in the router stacks', () => {
  const fleet = exampleFleet();
  const region = 'us-east-1';

  it("lists each zone's router task subnet beside its cell-endpoint subnet, so a task finds its own zone", () => {
    const stack = new RouterStack(cdkApp(), `router-${region}`, routerStackPropsOf(fleet, region));
    const params = Template.fromStack(stack).findResources('AWS::SSM::Parameter', { Properties: { Name: routerParameters.zoneNetworks(fleet.app) } });
    const value = JSON.parse(Object.values(params)[0].Properties.Value as string) as Record<string, string[]>;
    expect(Object.keys(value)).toEqual(fleet.regions[region].availabilityZones);
    for (const networks of Object.values(value)) {
      expect(networks).toHaveLength(2);
      expect(networks[0]).toMatch(/\/23$/); // the cell endpoints'
      expect(networks[1]).toMatch(/\/24$/); // the router tasks'
    }
  });

  it('tells the agent to weight its own zone first only when the fleet asks', () => {
    expect(agentEnvironments(fleet, region).every((env) => env.ZONE_AFFINITY === undefined)).toBe(true);
    const own = { ...fleet, router: { ...fleet.router, zoneAffinity: 'own-zone' as const } };
    const envs = agentEnvironments(own, region);
    expect(envs.length).toBeGreaterThan(0);
    expect(envs.every((env) => env.ZONE_AFFINITY === 'own-zone')).toBe(true);
  });
});
