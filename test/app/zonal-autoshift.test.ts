import { Template } from 'aws-cdk-lib/assertions';
import { addFleet, FleetStacks } from '../../lib/app';
import { laneStackResources, resolveFleet } from '../../lib/domain/fleet';
import { routerGroupHealthAlarmName, routerParameters } from '../../lib/domain/names';
import { cdkApp, validInput } from '../support/fleet';

/**
 * `router.zonalAutoshift`: ARC zonal autoshift on the router's NLBs with weekly practice runs, each
 * with one outcome alarm: a lane's own group health, or for the entry NLB a composite over every
 * group's. Two fleets, one with lanes, one without; each synthesized once.
 */
describe('router.zonalAutoshift', () => {
  const fleetOf = (router: Record<string, unknown>) => {
    const input = validInput();
    return resolveFleet({
      ...input,
      cells: input.cells.filter((c) => ['canary-eu', 'eu-1', 'us-1'].includes(c.id)),
      router: { ...input.router, ...router },
    });
  };
  let entry: FleetStacks;
  let lanes: FleetStacks;
  const template = (stacks: FleetStacks, name: string) =>
    Template.fromStack([...stacks.routers, ...stacks.routerGroups].find((s) => s.stackName === name)!);
  beforeAll(() => {
    entry = addFleet(cdkApp(), fleetOf({ zonalAutoshift: true }), { audit: false });
    lanes = addFleet(cdkApp(), fleetOf({ zonalAutoshift: true, groups: undefined, lanes: { count: 3, perTenant: 2 } }), { audit: false });
  });

  it('is off unless declared', () => {
    const plain = addFleet(cdkApp(), fleetOf({}), { audit: false });
    for (const s of [...plain.routers, ...plain.routerGroups])
      Template.fromStack(s).resourceCountIs('AWS::ARCZonalShift::ZonalAutoshiftConfiguration', 0);
  });

  it("enables autoshift on the entry NLB, in the last group stack, with practice runs ending on any group's health alarm", () => {
    template(entry, 'orders-router-eu-west-1-canary-group').resourceCountIs('AWS::ARCZonalShift::ZonalAutoshiftConfiguration', 0);
    const rest = template(entry, 'orders-router-eu-west-1-groups');
    const [config] = Object.values(rest.findResources('AWS::ARCZonalShift::ZonalAutoshiftConfiguration'));
    expect(config.Properties.ZonalAutoshiftStatus).toBe('ENABLED');
    // The entry NLB, by the parameter the router stack writes.
    const parameter = rest.toJSON().Parameters[config.Properties.ResourceIdentifier.Ref];
    expect(parameter.Default).toBe(routerParameters.loadBalancerArn('orders'));
    const [outcome] = config.Properties.PracticeRunConfiguration.OutcomeAlarms;
    expect(outcome.Type).toBe('CLOUDWATCH');
    const [alarmId] = Object.entries(
      rest.findResources('AWS::CloudWatch::CompositeAlarm', { Properties: { AlarmName: 'orders-router-eu-west-1-entry-health' } }),
    )[0];
    expect(outcome.AlarmIdentifier).toEqual({ 'Fn::GetAtt': [alarmId, 'Arn'] });
    const rule = JSON.stringify(rest.toJSON().Resources[alarmId].Properties.AlarmRule);
    for (const g of ['canary', 'main']) expect(rule).toContain(routerGroupHealthAlarmName('orders', 'eu-west-1', g));
  });

  it("enables autoshift on each lane's NLB, its outcome the lane's own health alarm", () => {
    const canary = template(lanes, 'orders-router-eu-west-1-canary-group');
    const rest = template(lanes, 'orders-router-eu-west-1-groups');
    canary.resourceCountIs('AWS::ARCZonalShift::ZonalAutoshiftConfiguration', 1);
    rest.resourceCountIs('AWS::ARCZonalShift::ZonalAutoshiftConfiguration', 2);
    // The fleet check counts them: one more resource a lane.
    expect(Object.keys(rest.toJSON().Resources)).toHaveLength(laneStackResources(3, 0, true));
    for (const t of [canary, rest]) {
      const nlbs = Object.keys(t.findResources('AWS::ElasticLoadBalancingV2::LoadBalancer'));
      const health = t.findResources('AWS::CloudWatch::CompositeAlarm');
      for (const config of Object.values(t.findResources('AWS::ARCZonalShift::ZonalAutoshiftConfiguration'))) {
        expect(nlbs).toContain(config.Properties.ResourceIdentifier.Ref);
        const [outcome] = config.Properties.PracticeRunConfiguration.OutcomeAlarms;
        const alarm = health[outcome.AlarmIdentifier['Fn::GetAtt'][0]];
        // The lane's NLB and its group's health: lane-<n> both.
        const lane = /Lane(\d)/.exec(config.Properties.ResourceIdentifier.Ref)![1];
        expect(alarm.Properties.AlarmName).toBe(routerGroupHealthAlarmName('orders', 'eu-west-1', `lane-${lane}`));
      }
    }
  });
});
