import { Template } from 'aws-cdk-lib/assertions';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import { addFleet } from '../../lib/app';
import { endpointServiceFingerprint } from '../../lib/cell';
import { Fleet } from '../../lib/fleet';
import { cdkApp, twoCellFleet } from '../support/fleet';
import { cellZeroFleet } from '../support/cell-zero';

/**
 * A router region reads each cell's endpoint service name from the cell's account through a custom
 * resource. CloudFormation updates (re-runs) it only when its properties change, so the lookup
 * carries the cell's endpoint-service fingerprint: a change that can replace the service re-reads
 * the name in every router region; anything else leaves the lookup alone.
 */
describe('cell endpoint lookups follow the cell\'s endpoint service', () => {
  const lookups = (stacks: ReturnType<typeof addFleet>) => {
    const router = stacks.routers[0];
    const nested = router.node.findAll().filter((c) => c.constructor.name === 'CellLinksStack') as unknown as import('aws-cdk-lib').NestedStack[];
    return Object.fromEntries(nested.flatMap((n) => Object.values(Template.fromStack(n).findResources('Custom::CellEndpointServiceName')))
      .map((r) => [r.Properties.CellId as string, r.Properties.Fingerprint as string]));
  };
  let base: Fleet;
  let before: ReturnType<typeof lookups>;
  /** As the app computes them: when the stacks are built, before synthesis (whose aspects add tags). */
  let fingerprints: string[];
  beforeAll(() => {
    // A cell per region: each router region looks up its own region's cell and the other's.
    base = twoCellFleet();
    const stacks = addFleet(cdkApp(), base, { audit: false });
    fingerprints = stacks.cells.map((c) => endpointServiceFingerprint(c.cell.entry));
    before = lookups(stacks);
  });

  it('gives every cell a fingerprint that the same fleet reproduces, and puts it in each router region\'s lookup', () => {
    const again = addFleet(cdkApp(), base, { audit: false });
    for (const [i, cell] of base.cells.entries()) {
      expect(fingerprints[i]).toMatch(/^[0-9a-f]{16}$/);
      expect(endpointServiceFingerprint(again.cells[i].cell.entry)).toBe(fingerprints[i]);
      expect([cell.id, before[cell.id]]).toEqual([cell.id, fingerprints[i]]);
    }
  });

  it('changes with the endpoint service or its load balancer, and with nothing else of the cell', () => {
    const stacks = addFleet(cdkApp(), base, { audit: false });
    const entry = stacks.cells[0].cell.entry;
    const first = endpointServiceFingerprint(entry);
    // Elsewhere in the cell (an alarm's threshold): the lookup is left alone.
    (stacks.cells[0].cell.alarms.errorRate.node.defaultChild as cloudwatch.CfnAlarm).threshold = 99;
    expect(endpointServiceFingerprint(entry)).toBe(first);
    // The PrivateLink NLB (a property CloudFormation replaces it for): the name is read again.
    (entry.privateLink.node.defaultChild as elbv2.CfnLoadBalancer).scheme = 'internet-facing';
    const second = endpointServiceFingerprint(entry);
    expect(second).not.toBe(first);
    // The endpoint service itself.
    (entry.endpointService.node.findAll().find((c) => c instanceof ec2.CfnVPCEndpointService) as ec2.CfnVPCEndpointService).acceptanceRequired = true;
    expect(endpointServiceFingerprint(entry)).not.toBe(second);
    // Another cell's is untouched.
    expect(endpointServiceFingerprint(stacks.cells[1].cell.entry)).toBe(fingerprints[1]);
  });
});

/**
 * Cell zero is linked like a cell: the routers' lookup of its adoption endpoint service carries that
 * service's fingerprint, so an adoption endpoint service that is replaced is read again.
 */
describe('cell zero\'s endpoint lookup follows its adoption endpoint service', () => {
  const zeroLookup = (stacks: ReturnType<typeof addFleet>) => {
    const nested = stacks.routers[0].node.findAll().filter((c) => c.constructor.name === 'CellLinksStack') as unknown as import('aws-cdk-lib').NestedStack[];
    return nested.flatMap((n) => Object.values(Template.fromStack(n).findResources('Custom::CellEndpointServiceName')))
      .find((r) => r.Properties.CellId === 'zero')?.Properties.Fingerprint as string | undefined;
  };
  let stacks: ReturnType<typeof addFleet>;
  let first: string;
  beforeAll(() => {
    stacks = addFleet(cdkApp(), cellZeroFleet(), { audit: false });
    first = endpointServiceFingerprint(stacks.cellZero!.entry);
  });

  it('puts the adoption entry\'s fingerprint in the router region\'s lookup of cell zero', () => {
    expect(first).toMatch(/^[0-9a-f]{16}$/);
    expect(zeroLookup(stacks)).toBe(first);
    expect(endpointServiceFingerprint(addFleet(cdkApp(), cellZeroFleet(), { audit: false }).cellZero!.entry)).toBe(first);
  });

  it('changes with the adoption NLB or its endpoint service, not with the rest of the adoption stack', () => {
    const fresh = addFleet(cdkApp(), cellZeroFleet(), { audit: false }).cellZero!;
    (fresh.alarms.health.node.defaultChild as cloudwatch.CfnCompositeAlarm).actionsEnabled = false;
    expect(endpointServiceFingerprint(fresh.entry)).toBe(first);
    (fresh.entry.loadBalancer.node.defaultChild as elbv2.CfnLoadBalancer).scheme = 'internet-facing';
    const second = endpointServiceFingerprint(fresh.entry);
    expect(second).not.toBe(first);
    (fresh.entry.endpointService.node.findAll().find((c) => c instanceof ec2.CfnVPCEndpointService) as ec2.CfnVPCEndpointService).acceptanceRequired = true;
    expect(endpointServiceFingerprint(fresh.entry)).not.toBe(second);
  });
});
