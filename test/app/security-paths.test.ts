import { Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as targets from 'aws-cdk-lib/aws-elasticloadbalancingv2-targets';
import { addFleet } from '../../lib/app';
import { resolveFleet } from '../../lib/domain/fleet';
import { cdkApp } from '../support/fleet';
import { cellZeroInput } from '../support/cell-zero';
import { LoadBalancerPaths, SecurityPaths, TemplateJson } from '../support/security-paths';

/**
 * Every Network Load Balancer of a fleet with a cell zero (the cells' PrivateLink NLBs, cell zero's
 * adoption NLB, the routers' public NLBs), its security groups read as Elastic Load Balancing applies
 * them (test/support/security-paths.ts): clients reach each listener, and traffic and health checks
 * leave each NLB for its targets and are admitted there. Synthesized once, under cdk.json's feature
 * flags (among them `networkLoadBalancerWithSecurityGroupByDefault`).
 */
describe("the fleet's Network Load Balancers, through their security groups", () => {
  let nlbs: LoadBalancerPaths[];
  const byStack = (name: string) => nlbs.filter((n) => n.loadBalancer.startsWith(`${name}/`));

  beforeAll(() => {
    const input = cellZeroInput();
    const fleet = resolveFleet({ ...input, cells: input.cells.filter((c) => ['canary-eu', 'eu-1', 'us-1'].includes(c.id)) });
    const app = cdkApp();
    addFleet(app, fleet, { audit: false });
    const assembly = app.synth();
    nlbs = new SecurityPaths(
      assembly.stacks.map((s) => ({ name: s.stackName, region: s.environment.region, template: s.template as TemplateJson })),
    ).networkLoadBalancers();
  });

  it('finds every NLB: one per cell, one for cell zero, one per router region', () => {
    expect(nlbs.map((n) => n.loadBalancer.split('/')[0]).sort()).toEqual([
      'orders-cell-canary-eu',
      'orders-cell-eu-1',
      'orders-cell-us-1',
      'orders-cell-zero-adoption',
      'orders-router-eu-west-1',
      'orders-router-us-east-1',
    ]);
  });

  it('lets clients reach every listener, and traffic and health checks leave every NLB and reach its targets', () => {
    const blocked = nlbs.flatMap((n) =>
      n.listeners.flatMap((l) => [
        ...(l.clientsAdmitted ? [] : [`${n.loadBalancer}:${l.port}: clients refused`]),
        ...l.targets.flatMap((t) =>
          t.paths.flatMap((p) => [
            ...(p.leavesLoadBalancer ? [] : [`${n.loadBalancer} → ${t.targetGroup} ${p.purpose} on ${p.port}: the NLB's outbound rules refuse it`]),
            ...(p.admittedByTarget === false
              ? [`${n.loadBalancer} → ${t.targetGroup} ${p.purpose} on ${p.port}: the target's inbound rules refuse it`]
              : []),
          ]),
        ),
      ]),
    );
    expect(blocked).toEqual([]);
    expect(nlbs.every((n) => n.listeners.length > 0 && n.listeners.every((l) => l.targets.length > 0))).toBe(true);
  });

  it("gives a cell's PrivateLink NLB a group that reaches only its ALB, and leaves PrivateLink traffic unfiltered", () => {
    for (const cell of ['orders-cell-canary-eu', 'orders-cell-eu-1', 'orders-cell-us-1']) {
      const [nlb] = byStack(cell);
      expect(nlb).toMatchObject({ scheme: 'internal', privateLinkInboundEnforced: false });
      expect(nlb.securityGroups).toHaveLength(1);
      const [target] = nlb.listeners[0].targets;
      expect(target.targetType).toBe('alb');
      expect(target.paths.map((p) => [p.purpose, p.port, p.leavesLoadBalancer, p.admittedByTarget])).toEqual([
        ['traffic', 80, true, true],
        ['health check', 80, true, true],
      ]);
    }
  });

  it("gives cell zero's adoption NLB no security group at all: nothing of its own filters, the existing ALB admits its addresses", () => {
    const [nlb] = byStack('orders-cell-zero-adoption');
    expect(nlb.securityGroups).toEqual([]);
    expect(nlb.privateLinkInboundEnforced).toBe(true); // without groups there is nothing to enforce
    const [target] = nlb.listeners[0].targets;
    // The existing ALB's groups are not in any template: docs/cell-zero.md says what they must admit.
    expect(target).toMatchObject({ targetType: 'alb', targetGroups: [] });
    expect(target.paths.every((p) => p.leavesLoadBalancer && p.admittedByTarget === undefined)).toBe(true);
  });

  it("lets the internet reach a router's listener, and the NLB reach the router tasks on the traffic and readiness ports only", () => {
    for (const region of ['orders-router-eu-west-1', 'orders-router-us-east-1']) {
      const [nlb] = byStack(region);
      expect(nlb.scheme).toBe('internet-facing');
      expect(nlb.privateLinkInboundEnforced).toBeUndefined();
      const [listener] = nlb.listeners;
      expect(listener).toMatchObject({ port: 80, clientsAdmitted: true });
      // One target group per router group (canary, main), each reached by the group stacks' tasks.
      expect(listener.targets).toHaveLength(2);
      for (const target of listener.targets) {
        expect(target.targetGroups).toEqual([expect.stringMatching(new RegExp(`^${region}/TaskSecurityGroup`))]);
        expect(target.paths.map((p) => [p.purpose, p.port, p.leavesLoadBalancer, p.admittedByTarget])).toEqual([
          ['traffic', 8080, true, true],
          ['health check', 8081, true, true],
        ]);
      }
    }
  });
});

describe('the security-path check itself', () => {
  it('refuses an NLB that the feature flag gave a security group with no rules (the adoption NLB before it opted out)', () => {
    const app = cdkApp();
    const stack = new Stack(app, 'Probe', { env: { account: '111111111111', region: 'eu-west-1' } });
    const vpc = new ec2.Vpc(stack, 'Vpc', { availabilityZones: ['eu-west-1a', 'eu-west-1b'], natGateways: 0 });
    const nlb = new elbv2.NetworkLoadBalancer(stack, 'Nlb', { vpc, internetFacing: false });
    nlb.addListener('Tcp', { port: 80 }).addTargets('Alb', {
      port: 8080,
      targets: [new targets.AlbArnTarget('arn:aws:elasticloadbalancing:eu-west-1:111111111111:loadbalancer/app/x/1', 8080)],
    });
    const [paths] = new SecurityPaths([
      { name: 'Probe', region: 'eu-west-1', template: app.synth().getStackByName('Probe').template as TemplateJson },
    ]).networkLoadBalancers();
    expect(paths.securityGroups).toHaveLength(1);
    expect(paths.listeners[0].clientsAdmitted).toBe(false);
    expect(paths.listeners[0].targets[0].paths.map((p) => p.leavesLoadBalancer)).toEqual([false, false]);
  });
});
