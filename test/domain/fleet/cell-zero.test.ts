import { cellZeroStackProps } from '../../../lib/app';
import { cellEndpoint, CellZeroConfig, fleetProblems, loadBalancerFullName, resolveFleet, routedCells, seedMapping } from '../../../lib/domain/fleet';
import { lookup, validateMapping } from '../../../lib/domain/mapping';
import { CELL_ZERO_ACCOUNT, cellZeroConfig, cellZeroFleet, cellZeroInput } from '../../support/cell-zero';
import { validInput } from '../../support/fleet';

const problemsWith = (overrides: Partial<CellZeroConfig>) => fleetProblems(cellZeroInput(overrides));
const lb = cellZeroConfig().loadBalancer;
const db = cellZeroConfig().database;

describe('cell zero in the fleet file', () => {
  it('resolves with its defaults and is reached like a cell', () => {
    const fleet = cellZeroFleet();
    expect(fleet.cellZero).toMatchObject({
      id: 'zero',
      region: 'eu-west-1',
      account: CELL_ZERO_ACCOUNT,
      availabilityZones: ['euw1-az1', 'euw1-az2', 'euw1-az3'],
      loadBalancer: { protocol: 'http', listenerPort: 8080, healthCheckPath: fleet.workload.healthCheckPath },
      database: { port: 5432, name: 'orders' },
    });
    // Not one of the factory's cells: nothing stamps a cell stack, a wave or a capacity row for it.
    expect(fleet.cells.map((c) => c.id)).not.toContain('zero');
    expect(routedCells(fleet).at(-1)).toEqual({
      id: 'zero',
      region: 'eu-west-1',
      account: CELL_ZERO_ACCOUNT,
      port: 80,
      scheme: 'http',
      adopted: true,
    });
    expect(cellEndpoint(fleet, 'zero')).toBe('http://zero.orders.cells.internal');
    const https = cellZeroInput({ loadBalancer: { ...lb, protocol: 'https' } });
    const owned = resolveFleet({ ...https, router: { ...https.router, cellEndpointTemplate: '{scheme}://{cell}.cells.example.com' } });
    expect(cellEndpoint(owned, 'zero')).toBe('https://zero.cells.example.com');
    // One more router slot for it: the default doubles the routed cells.
    expect(fleet.router.slots).toBeGreaterThanOrEqual(routedCells(fleet).length + 1);
  });

  it('seeds every bucket on cell zero, with no override, and lists the other cells without buckets', () => {
    const fleet = cellZeroFleet();
    const doc = seedMapping(fleet);
    expect(validateMapping(doc)).toEqual([]);
    expect(doc.buckets).toEqual([{ from: 0, to: fleet.bucketCount - 1, cell: 'zero' }]);
    expect(doc.overrides).toEqual({ exact: {}, prefix: {} });
    expect(Object.keys(doc.cells)).toEqual([...fleet.cells.map((c) => c.id), 'zero']);
    // The canary's internal- tenants too: before the router, they were the existing stack's.
    for (const key of ['tenant-1', 'internal-smoke', 'acme', 'x']) expect(lookup(doc, key)?.cell).toBe('zero');
    // Without cell zero, the fleet's own first mapping, unchanged.
    expect(seedMapping(resolveFleet(validInput())).buckets.length).toBeGreaterThan(1);
  });

  it.each<[string, Partial<CellZeroConfig>, RegExp]>([
    [
      'an NLB where the adoption NLB needs an ALB target',
      { loadBalancer: { ...lb, arn: lb.arn.replace('/app/', '/net/') } },
      /^cellZero\.loadBalancer\.arn: a Network Load Balancer; the adoption NLB forwards only to an Application Load Balancer/,
    ],
    [
      'a load balancer in another region',
      { loadBalancer: { ...lb, arn: lb.arn.replace('eu-west-1', 'us-east-1') } },
      /^cellZero\.loadBalancer\.arn: the load balancer is in `us-east-1`, cell zero in `eu-west-1`/,
    ],
    [
      'a load balancer in another account',
      { loadBalancer: { ...lb, arn: lb.arn.replace(CELL_ZERO_ACCOUNT, '666666666666') } },
      /load balancer is in account 666666666666/,
    ],
    [
      'something that is not a load balancer ARN',
      { loadBalancer: { ...lb, arn: 'orders-prod' } },
      /^cellZero\.loadBalancer\.arn: `orders-prod` is not a load balancer ARN/,
    ],
    [
      'a listener port out of range',
      { loadBalancer: { ...lb, listenerPort: 70000 } },
      /^cellZero\.loadBalancer\.listenerPort: 70000 is not a TCP port/,
    ],
    [
      'a secret in another region',
      { database: { ...db, secretArn: db.secretArn.replace('eu-west-1', 'eu-central-1') } },
      /^cellZero\.database\.secretArn: the secret is in `eu-central-1`; the mover tasks read it in cell zero's region `eu-west-1`: replicate it there/,
    ],
    [
      'a partial secret ARN',
      { database: { ...db, secretArn: db.secretArn.replace(/-AbCdEf$/, '') } },
      /^cellZero\.database\.secretArn: `[^`]+` has no 6-character suffix; give the complete ARN/,
    ],
    [
      'a secret in another account',
      { database: { ...db, secretArn: db.secretArn.replace(CELL_ZERO_ACCOUNT, '666666666666') } },
      /the secret is in account 666666666666/,
    ],
    ['an unknown region', { region: 'ap-south-1' }, /^cellZero: unknown region `ap-south-1`/],
    ['the router account', { account: '222222222222' }, /^cellZero\.account: 222222222222 is the router or tooling account/],
    ["a cell's account", { account: '444444444441' }, /^cellZero\.account: 444444444441 is already a cell's account/],
    ["a cell's id", { id: 'eu-1' }, /^cellZero\.id: `eu-1` is also a cell of `cells`/],
    [
      'a single subnet',
      { vpc: { id: 'vpc-0123456789abcdef0', privateSubnetIds: ['subnet-0aaaaaaaaaaaaaaa1'] } },
      /^cellZero\.vpc\.privateSubnetIds: give at least two different subnets/,
    ],
    [
      'a malformed security group',
      { database: { ...db, clientSecurityGroupId: 'default' } },
      /^cellZero\.database\.clientSecurityGroupId: `default` is not a security group id/,
    ],
  ])('refuses %s with one line', (_what, overrides, message) => {
    const problems = problemsWith(overrides);
    expect(problems.filter((p) => p.startsWith('cellZero'))).toHaveLength(1);
    expect(problems).toEqual([expect.stringMatching(message)]);
  });

  it('refuses unknown keys and a second cell zero in the structure check', () => {
    const input = { ...validInput(), cellZero: { ...cellZeroConfig(), loadBalancerArn: lb.arn } };
    expect(fleetProblems(input as never)).toEqual(['cellZero: unknown key `loadBalancerArn`; did you mean `loadBalancer`?']);
    // One cell zero: a list is refused by type.
    expect(fleetProblems({ ...validInput(), cellZero: [cellZeroConfig(), cellZeroConfig()] } as never)).toEqual([
      expect.stringMatching(/^cellZero must be an object, got a list/),
    ]);
  });

  it("bakes on the fleet's thresholds unless cell zero names its own, each value apart", () => {
    const fleet = cellZeroFleet();
    expect(fleet.cellZero!.alarms).toEqual({
      errorRatePercent: fleet.alarms.errorRatePercent,
      p99LatencyMs: fleet.alarms.p99LatencyMs,
      evaluationPeriods: fleet.alarms.evaluationPeriods,
    });
    const own = cellZeroFleet({ alarms: { p99LatencyMs: 4500 } });
    expect(own.cellZero!.alarms).toEqual({
      errorRatePercent: fleet.alarms.errorRatePercent,
      p99LatencyMs: 4500,
      evaluationPeriods: fleet.alarms.evaluationPeriods,
    });
    // The cells keep the fleet's; the adoption stack's alarms get cell zero's.
    expect(own.alarms.p99LatencyMs).toBe(fleet.alarms.p99LatencyMs);
    expect(cellZeroStackProps(own).alarms.p99LatencyMs).toBe(4500);
  });

  it.each([
    [{ errorRatePercent: 0 }, /^cellZero\.alarms\.errorRatePercent: 0 must be a percentage above 0 and at most 100$/],
    [{ errorRatePercent: 150 }, /^cellZero\.alarms\.errorRatePercent: 150 must be/],
    [{ p99LatencyMs: -1 }, /^cellZero\.alarms\.p99LatencyMs: -1 must be a positive number of milliseconds$/],
    [{ evaluationPeriods: 0 }, /^cellZero\.alarms\.evaluationPeriods: 0 must be a whole number of 1-minute periods, at least 1$/],
  ])('refuses cell zero alarms %j with one line', (alarms, message) => {
    expect(problemsWith({ alarms })).toEqual([expect.stringMatching(message)]);
  });

  it("refuses an https cell zero under the default .internal name: the routers could not verify the existing ALB's certificate", () => {
    expect(problemsWith({ loadBalancer: { ...lb, protocol: 'https' } })).toEqual([
      expect.stringMatching(
        /^cellZero\.loadBalancer\.protocol: https, but routers reach cell zero as `zero\.orders\.cells\.internal` and verify the existing ALB's certificate against that name, which no public CA issues under `\.internal`; set router\.cellEndpointTemplate/,
      ),
    ]);
  });

  it('names the ALB for CloudWatch', () => {
    expect(loadBalancerFullName(lb.arn)).toBe('app/orders-prod/50dc6c495c0c9188');
  });
});
