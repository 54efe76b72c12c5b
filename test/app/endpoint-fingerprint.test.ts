import { Template } from 'aws-cdk-lib/assertions';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import { addFleet, cellStackPropsOf, cellZeroStackProps, routerStackPropsOf } from '../../lib/app';
import { CellStack, endpointServiceFingerprint } from '../../lib/constructs/cell';
import { CellZeroStack } from '../../lib/constructs/cell-zero';
import { CellLinksStack, RouterStack } from '../../lib/constructs/router';
import { lookupPhysicalId } from '../../lib/runtime/handlers/endpoint-lookup-properties';
import { Fleet, resolveFleet } from '../../lib/domain/fleet';
import { cdkApp, twoCellFleet } from '../support/fleet';
import { cellZeroInput } from '../support/cell-zero';

/** A cell's stack built again on its own, as addFleet builds it (same id and props): its fingerprint needs nothing else of the app. */
const cellStackAgain = (fleet: Fleet, i: number) => new CellStack(cdkApp(), `cell-${fleet.cells[i].id}`, cellStackPropsOf(fleet, fleet.cells[i]));

/**
 * The fleet both blocks read: the two-cell cut of the example (a cell per region: each router region
 * looks up its own region's cell and the other's) adopting cell zero (eu-west-1), built and
 * synthesized once.
 */
let fleet: Fleet;
let stacks: ReturnType<typeof addFleet>;
/** As the app computes them: when the stacks are built, before synthesis (whose aspects add tags); cells', then cell zero's. */
let fingerprints: string[];
let zeroFingerprint: string;
/** The first router region's lookups, as its template writes them: cell id -> fingerprint. */
let lookups: Record<string, string>;
beforeAll(() => {
  const input = cellZeroInput();
  fleet = resolveFleet({ ...input, cells: input.cells.filter((c) => twoCellFleet().cells.some((t) => t.id === c.id)) });
  stacks = addFleet(cdkApp(), fleet, { audit: false });
  fingerprints = stacks.cells.map((c) => endpointServiceFingerprint(c.cell.entry));
  zeroFingerprint = endpointServiceFingerprint(stacks.cellZero!.entry);
  const nested = stacks.routers[0].node
    .findAll()
    .filter((c) => c.constructor.name === 'CellLinksStack') as unknown as import('aws-cdk-lib').NestedStack[];
  lookups = Object.fromEntries(
    nested
      .flatMap((n) => Object.values(Template.fromStack(n).findResources('Custom::CellEndpointServiceName')))
      .map((r) => [r.Properties.CellId as string, r.Properties.Fingerprint as string]),
  );
});

/**
 * A router region reads each cell's endpoint service name from the cell's account through a custom
 * resource. CloudFormation updates (re-runs) it only when its properties change, so the lookup
 * carries the cell's endpoint-service fingerprint: a change that can replace the service re-reads
 * the name in every router region; anything else leaves the lookup alone.
 */
describe("cell endpoint lookups follow the cell's endpoint service", () => {
  it("gives every cell a fingerprint that the same fleet reproduces, and puts it in each router region's lookup", () => {
    expect(fleet.cells.map((c) => c.region)).toEqual(['eu-west-1', 'us-east-1']);
    for (const [i, cell] of fleet.cells.entries()) {
      expect(fingerprints[i]).toMatch(/^[0-9a-f]{16}$/);
      expect(endpointServiceFingerprint(cellStackAgain(fleet, i).cell.entry)).toBe(fingerprints[i]);
      expect([cell.id, lookups[cell.id]]).toEqual([cell.id, fingerprints[i]]);
    }
  });

  it('changes with the endpoint service or its load balancer, and with nothing else of the cell', () => {
    const fresh = [cellStackAgain(fleet, 0), cellStackAgain(fleet, 1)];
    const entry = fresh[0].cell.entry;
    const first = endpointServiceFingerprint(entry);
    // Elsewhere in the cell (an alarm's threshold): the lookup is left alone.
    (fresh[0].cell.alarms.errorRate.node.defaultChild as cloudwatch.CfnAlarm).threshold = 99;
    expect(endpointServiceFingerprint(entry)).toBe(first);
    // The PrivateLink NLB (a property CloudFormation replaces it for): the name is read again.
    (entry.privateLink.node.defaultChild as elbv2.CfnLoadBalancer).scheme = 'internet-facing';
    const second = endpointServiceFingerprint(entry);
    expect(second).not.toBe(first);
    // The endpoint service itself.
    (entry.endpointService.node.findAll().find((c) => c instanceof ec2.CfnVPCEndpointService) as ec2.CfnVPCEndpointService).acceptanceRequired = true;
    expect(endpointServiceFingerprint(entry)).not.toBe(second);
    // Another cell's is untouched.
    expect(endpointServiceFingerprint(fresh[1].cell.entry)).toBe(fingerprints[1]);
  });
});

/**
 * Cell zero is linked like a cell: the routers' lookup of its adoption endpoint service carries that
 * service's fingerprint, so an adoption endpoint service that is replaced is read again.
 */
describe("cell zero's endpoint lookup follows its adoption endpoint service", () => {
  /** Cell zero's adoption stack built again on its own, as addFleet builds it. */
  const adoptionAgain = () => new CellZeroStack(cdkApp(), `cell-${fleet.cellZero!.id}-adoption`, cellZeroStackProps(fleet));

  it("puts the adoption entry's fingerprint in the router region's lookup of cell zero", () => {
    expect(zeroFingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(lookups[fleet.cellZero!.id]).toBe(zeroFingerprint);
    expect(endpointServiceFingerprint(adoptionAgain().entry)).toBe(zeroFingerprint);
  });

  it('changes with the adoption NLB or its endpoint service, not with the rest of the adoption stack', () => {
    const fresh = adoptionAgain();
    const first = endpointServiceFingerprint(fresh.entry);
    expect(first).toBe(zeroFingerprint);
    (fresh.alarms.health.node.defaultChild as cloudwatch.CfnCompositeAlarm).actionsEnabled = false;
    expect(endpointServiceFingerprint(fresh.entry)).toBe(first);
    (fresh.entry.loadBalancer.node.defaultChild as elbv2.CfnLoadBalancer).scheme = 'internet-facing';
    const second = endpointServiceFingerprint(fresh.entry);
    expect(second).not.toBe(first);
    (fresh.entry.endpointService.node.findAll().find((c) => c instanceof ec2.CfnVPCEndpointService) as ec2.CfnVPCEndpointService).acceptanceRequired =
      true;
    expect(endpointServiceFingerprint(fresh.entry)).not.toBe(second);
  });
});

/**
 * A cell's stack deleted and created again from the same template: its endpoint service comes back
 * under a new name and the same fingerprint. The operator raises the cell's endpointGeneration, and
 * the next router deploy reads the name again (a new physical id: the lookup is replaced, and the
 * interface endpoint with it); every other cell's lookup is left as it was.
 */
describe('a cell created again from the same template (endpointGeneration)', () => {
  it("re-reads that cell's name, and cell zero's when its generation is raised, leaving the others' lookups as they were", () => {
    const input = cellZeroInput();
    const raised = resolveFleet({
      ...input,
      cells: input.cells
        .filter((c) => twoCellFleet().cells.some((t) => t.id === c.id))
        .map((c, i) => (i === 0 ? { ...c, endpointGeneration: 2 } : c)),
      cellZero: { ...input.cellZero!, endpointGeneration: 1 },
    });
    const byCell = Object.fromEntries([...fleet.cells.map((c, i) => [c.id, fingerprints[i]]), [fleet.cellZero!.id, zeroFingerprint]]);
    const router = new RouterStack(cdkApp(), 'router', routerStackPropsOf(raised, 'eu-west-1', byCell));
    const again = Object.fromEntries(
      router.node
        .findAll()
        .filter((c): c is CellLinksStack => c instanceof CellLinksStack)
        .flatMap((n) => Object.values(Template.fromStack(n).findResources('Custom::CellEndpointServiceName')))
        .map((r) => [r.Properties.CellId as string, r.Properties]),
    );
    const [first, second] = fleet.cells.map((c) => c.id);
    expect(again[first].Fingerprint).toBe(`${fingerprints[0]}.g2`);
    expect(again[second].Fingerprint).toBe(lookups[second]);
    expect(again[fleet.cellZero!.id].Fingerprint).toBe(`${zeroFingerprint}.g1`);
    // A new physical id: CloudFormation replaces the lookup, which reads the name again.
    expect(lookupPhysicalId(again[first])).not.toBe(lookupPhysicalId({ ...again[first], Fingerprint: lookups[first] }));
  });

  it('refuses a generation that is not a whole number from 1, in one line', () => {
    const input = cellZeroInput();
    for (const bad of [0, -1])
      expect(() => resolveFleet({ ...input, cells: input.cells.map((c, i) => (i === 0 ? { ...c, endpointGeneration: bad } : c)) })).toThrow(
        `cell \`${input.cells[0].id}\`: endpointGeneration ${bad} must be a whole number from 1 (raise it by one each time the stack is deleted and created again after the routers linked it)`,
      );
    expect(() => resolveFleet({ ...input, cellZero: { ...input.cellZero!, endpointGeneration: 0 } })).toThrow(
      'cellZero: endpointGeneration 0 must be',
    );
    // Not a whole number: the config's structure check says so first.
    expect(() => resolveFleet({ ...input, cells: input.cells.map((c, i) => (i === 0 ? { ...c, endpointGeneration: 1.5 } : c)) })).toThrow(
      'endpointGeneration must be a whole number, got 1.5',
    );
  });
});
