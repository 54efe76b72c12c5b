import {
  crossRegionProblems,
  defaultRouterSlots,
  FleetConfigError,
  FleetInput,
  fleetProblems,
  generateFleet,
  resolveFleet,
} from '../../../lib/domain/fleet';
import { validInput } from '../../support/fleet';

type Edit = (input: FleetInput) => FleetInput;
const withCells =
  (edit: (cells: FleetInput['cells']) => FleetInput['cells']): Edit =>
  (input) => ({ ...input, cells: edit(input.cells) });
const editCell = (index: number, patch: object): Edit => withCells((cells) => cells.map((c, i) => (i === index ? { ...c, ...patch } : c)));
const editShape =
  (name: string, patch: object): Edit =>
  (input) => ({ ...input, shapes: { ...input.shapes, [name]: { ...input.shapes[name], ...patch } } });

function problemsAfter(edit: Edit): string[] {
  return fleetProblems(edit(validInput()));
}

describe('fleetProblems', () => {
  it('accepts the example fleet', () => {
    expect(fleetProblems(validInput())).toEqual([]);
  });

  it('accepts HTTPS cells whose endpoint names are under a public domain', () => {
    const input = validInput();
    const tls = {
      ...input,
      router: { ...input.router, cellEndpointTemplate: '{scheme}://{cell}.cells.example.com' },
      cells: input.cells.map((c, n) => (n === 1 ? { ...c, certificateArn: `arn:aws:acm:${c.region}:${c.account}:certificate/abc` } : c)),
    };
    expect(fleetProblems(tls)).toEqual([]);
  });

  const cases: [string, Edit, RegExp][] = [
    ['duplicate cell id', editCell(2, { id: 'eu-1' }), /cell `eu-1`: duplicate id/],
    ['malformed cell id', editCell(1, { id: 'EU_1' }), /cells\[1\]: id `EU_1` is malformed/],
    ['unknown region', editCell(1, { region: 'eu-west-9' }), /cell `eu-1`: unknown region `eu-west-9`; add it to `regions`/],
    [
      'region not known to AWS',
      (i) => ({ ...i, regions: { ...i.regions, 'mars-1': { availabilityZones: ['mars-1a', 'mars-1b'] } } }),
      /region `mars-1`: unknown region/,
    ],
    [
      'AZ not in the region',
      (i) => ({ ...i, regions: { ...i.regions, 'eu-west-1': { availabilityZones: ['euw1-az1', 'use1-az2'] } } }),
      /Availability Zone `use1-az2` is not in this region/,
    ],
    [
      'AZ ID the region does not have',
      (i) => ({ ...i, regions: { ...i.regions, 'eu-west-1': { availabilityZones: ['euw1-az1', 'euw1-az6'] } } }),
      /`euw1-az6` is not in this region/,
    ],
    [
      'AZ name instead of ID',
      (i) => ({ ...i, regions: { ...i.regions, 'eu-west-1': { availabilityZones: ['eu-west-1a', 'euw1-az2'] } } }),
      /`eu-west-1a` is an Availability Zone name, which maps to a different zone in each account/,
    ],
    ['single AZ', (i) => ({ ...i, regions: { ...i.regions, 'eu-west-1': { availabilityZones: ['euw1-az1'] } } }), /list at least 2/],
    ['overlapping CIDRs', editCell(2, { cidr: '10.0.16.0/21' }), /cell `eu-2`: cidr 10.0.16.0\/21 overlaps cell `eu-1` \(10.0.16.0\/20\)/],
    ['malformed CIDR', editCell(2, { cidr: '10.0.16.1/20' }), /cell `eu-2`: cidr `10.0.16.1\/20` is not an IPv4 network address/],
    ['CIDR too small', editCell(2, { cidr: '10.9.0.0/26' }), /must be \/16 to \/22/],
    ['missing account', editCell(3, { account: undefined }), /cell `eu-3`: no account; run `cellctl accounts ensure`/],
    ['malformed account', editCell(3, { account: '1234' }), /account `1234` is not a 12-digit/],
    ['account shared by two cells', editCell(3, { account: '444444444441' }), /account 444444444441 is already cell `eu-1`'s/],
    ['cell in the router account', editCell(3, { account: '222222222222' }), /is the router or tooling account/],
    ['no canary cell', withCells((cells) => cells.map((c) => ({ ...c, canary: false }))), /no canary cell; mark one cell `canary: true`/],
    ['canary not active', editCell(0, { state: 'draining' }), /a canary cell must be active/],
    ['unknown shape', editCell(1, { shape: 'huge' }), /unknown shape `huge`/],
    [
      'empty wave policy',
      (i) => ({ ...i, waves: undefined as unknown as FleetInput['waves'] }),
      /^missing `waves` \(an object with singleCellWaves, growthFactor, maxCellsPerWave, bakeSeconds\)$/,
    ],
    ['zero cells per wave', (i) => ({ ...i, waves: { ...i.waves, maxCellsPerWave: 0 } }), /waves.maxCellsPerWave: 0 must be a positive integer/],
    ['growth factor that does not grow', (i) => ({ ...i, waves: { ...i.waves, growthFactor: 1 } }), /waves.growthFactor: 1 must be greater than 1/],
    [
      "per-tenant cap above the cell's slots",
      (i) => ({ ...i, router: { cellMaxConn: 100, tenantMaxConn: 150 } }),
      /^router.tenantMaxConn: 150 must be a whole number of requests from 1 to router.cellMaxConn \(100\); 50 leaves/,
    ],
    [
      'target utilisation of 1 or more',
      (i) => ({ ...i, capacity: { targetUtilisation: 1 } }),
      /^capacity.targetUtilisation: 1 must be a share above 0 and below 1 of a shape's tested requestsPerSecond/,
    ],
    [
      'target utilisation written as a percentage',
      (i) => ({ ...i, capacity: { targetUtilisation: 50 } }),
      /^capacity.targetUtilisation: 50 must be a share above 0 and below 1/,
    ],
    [
      'negative spare cells',
      (i) => ({ ...i, capacity: { spareCells: -1 } }),
      /^capacity.spareCells: -1 must be a whole number of cells from 0 to 100$/,
    ],
    ['fractional spare cells', (i) => ({ ...i, capacity: { spareCells: 1.5 } }), /^capacity.spareCells must be a whole number, got 1.5$/],
    [
      'large-tenant share of 0',
      (i) => ({ ...i, capacity: { largeTenantShare: 0 } }),
      /^capacity.largeTenantShare: 0 must be a share above 0 and at most 1/,
    ],
    [
      'unknown capacity key',
      (i) => ({ ...i, capacity: { targetUtilization: 0.5 } as never }),
      /^capacity: unknown key `targetUtilization`; did you mean `targetUtilisation`\?$/,
    ],
    [
      'bake time too short',
      (i) => ({ ...i, waves: { ...i.waves, bakeSeconds: { ...i.waves.bakeSeconds, single: 5 } } }),
      /waves.bakeSeconds.single: 5 is out of range/,
    ],
    [
      'bake time too long',
      (i) => ({ ...i, waves: { ...i.waves, bakeSeconds: { ...i.waves.bakeSeconds, group: 90_000 } } }),
      /waves.bakeSeconds.group: 90000 is out of range/,
    ],
    [
      'capacity min above desired',
      editShape('standard', { capacity: { min: 4, desired: 3, max: 12 } }),
      /shape `standard`: capacity needs integers with 2 <= min <= desired <= max/,
    ],
    ['capacity of one task', editShape('standard', { capacity: { min: 1, desired: 1, max: 1 } }), /capacity needs integers with 2 <= min/],
    ['Fargate memory that does not fit the CPU', editShape('standard', { memoryMiB: 512 }), /memoryMiB 512 does not fit cpu 1024/],
    ['Fargate CPU that does not exist', editShape('standard', { cpu: 300 }), /cpu 300 is not a Fargate size/],
    [
      'tenant limit above the whole cell',
      editShape('small', { limits: { requestsPerSecond: 10, maxTenants: 5, tenantRequestsPer5Min: 5000 } }),
      /lets one tenant exceed the whole cell's tested 10 rps/,
    ],
    [
      'tenant limit below WAF minimum',
      editShape('small', { limits: { requestsPerSecond: 10, maxTenants: 5, tenantRequestsPer5Min: 5 } }),
      /tenantRequestsPer5Min 5 must be an integer WAF accepts/,
    ],
    [
      'no tenants',
      editShape('small', { limits: { requestsPerSecond: 10, maxTenants: 0, tenantRequestsPer5Min: 100 } }),
      /limits.maxTenants must be a positive integer/,
    ],
    [
      'database class with db. prefix',
      editShape('small', { database: { engine: 'rds-postgresql', instanceClass: 'db.t4g.medium' } }),
      /no 'db.' prefix/,
    ],
    [
      'backup retention out of range',
      editShape('small', { database: { engine: 'rds-postgresql', instanceClass: 't4g.medium', backupRetentionDays: 40 } }),
      /backupRetentionDays 40 must be 1-35/,
    ],
    [
      'retired PostgreSQL minor',
      editShape('small', { database: { engine: 'rds-postgresql', instanceClass: 't4g.medium', engineVersion: '16.6' } }),
      /shape `small`: database.engineVersion 16.6 can no longer be created \(RDS and Aurora retired PostgreSQL 16 minors below 16.9\); use 16.9 or later, or 17.9/,
    ],
    [
      'PostgreSQL major RDS no longer creates',
      editShape('standard', { database: { engine: 'aurora-postgresql', instanceClass: 'r6g.large', engineVersion: '13.20' } }),
      /database.engineVersion PostgreSQL 13 cannot be created on RDS or Aurora \(majors 14, 15, 16, 17, 18\)/,
    ],
    [
      'PostgreSQL version without a minor',
      editShape('small', { database: { engine: 'rds-postgresql', instanceClass: 't4g.medium', engineVersion: '17' } }),
      /database.engineVersion `17` is not a PostgreSQL `major.minor` version such as `17.9`/,
    ],
    ['bucket count not a power of two', (i) => ({ ...i, bucketCount: 10000 }), /bucketCount: 10000 must be a power of two/],
    ['bad header name', (i) => ({ ...i, partitionKey: { source: 'header', name: 'X Tenant' } }), /partitionKey.name: `X Tenant`/],
    ['bad app name', (i) => ({ ...i, app: 'Orders!' }), /app: `Orders!` is not a valid name/],
    ['bad tooling account', (i) => ({ ...i, accounts: { ...i.accounts, tooling: 'abc' } }), /accounts.tooling: `abc` is not a 12-digit/],
    ['alarm percentage over 100', (i) => ({ ...i, alarms: { errorRatePercent: 150 } }), /alarms.errorRatePercent: 150 is a percentage/],
    ['negative alarm threshold', (i) => ({ ...i, alarms: { p99LatencyMs: -1 } }), /alarms.p99LatencyMs: -1 must be a positive number/],
    ['a single router group', (i) => ({ ...i, router: { ...i.router, groups: [{ name: 'all' }] } }), /router.groups: list at least two groups/],
    [
      'HTTPS cells with the default endpoint names (*.cells.internal)',
      (i) => ({
        ...i,
        cells: i.cells.map((c, n) => (n === 1 ? { ...c, certificateArn: `arn:aws:acm:${c.region}:${c.account}:certificate/abc` } : c)),
      }),
      /cell `eu-1`: certificateArn, but routers reach cells as `\{cell\}.orders.cells.internal`, and no public CA issues a certificate for a `.internal` name .* set router.cellEndpointTemplate to a name under a domain you own/,
    ],
    [
      'two regions and no router home region',
      (i) => ({ ...i, router: { ...i.router, homeRegion: undefined } }),
      /router.homeRegion: not set, and the fleet has 2 regions; .* first region, `eu-west-1`\); it never follows the order of `regions`/,
    ],
    [
      'a router home region the fleet does not have',
      (i) => ({ ...i, router: { ...i.router, homeRegion: 'ap-south-1' } }),
      /router.homeRegion: `ap-south-1` is not one of the fleet's regions \(eu-west-1, us-east-1\)/,
    ],
    ['duplicate router group', (i) => ({ ...i, router: { groups: [{ name: 'a' }, { name: 'a' }] } }), /`a` is listed twice/],
    [
      'router group weight over 999',
      (i) => ({ ...i, router: { groups: [{ name: 'a', weight: 1000 }, { name: 'b' }] } }),
      /router.groups: `a` weight 1000 must be an integer from 0 \(drained\) to 999/,
    ],
    [
      'router group weight negative',
      (i) => ({ ...i, router: { groups: [{ name: 'a', weight: -1 }, { name: 'b' }] } }),
      /`a` weight -1 must be an integer/,
    ],
    [
      'every router group drained',
      (i) => ({
        ...i,
        router: {
          groups: [
            { name: 'a', weight: 0 },
            { name: 'b', weight: 0 },
          ],
        },
      }),
      /every group has weight 0, so the NLB would send new connections nowhere/,
    ],
    [
      'more router groups than the NLB forwards to',
      (i) => ({ ...i, router: { groups: ['a', 'b', 'c', 'd', 'e', 'f'].map((name) => ({ name })) } }),
      /router.groups: 6 groups, but the NLB forwards to at most 5 target groups/,
    ],
    [
      'bad mapping bucket',
      (i) => ({ ...i, router: { mappingBucket: 'Bad_Bucket' } }),
      /router.mappingBucket: `Bad_Bucket` is not a valid S3 bucket name/,
    ],
    [
      'endpoint template without {cell}',
      (i) => ({ ...i, router: { cellEndpointTemplate: 'https://x.example' } }),
      /must be an http\(s\) URL containing \{cell\}/,
    ],
    [
      'fewer router slots than cells + 1',
      (i) => ({ ...i, router: { slots: i.cells.length } }),
      /router.slots: 8 backend slots cannot serve 8 cells; .* set at least 9 or leave it unset/,
    ],
    ['router cellMaxConn zero', (i) => ({ ...i, router: { cellMaxConn: 0 } }), /router.cellMaxConn: 0 must be an integer from 1 to 10000/],
    ['router queue timeout fractional', (i) => ({ ...i, router: { queueTimeoutMs: 1.5 } }), /router.queueTimeoutMs must be a whole number, got 1.5/],
    ['router slots out of range', (i) => ({ ...i, router: { slots: 5000 } }), /router.slots: 5000 must be an integer from 2 to 1000/],
    [
      'account email without {cell}',
      (i) => ({ ...i, organization: { accountEmail: 'ops@example.com', organizationalUnitId: 'ou-ab12-cells001' } }),
      /organization.accountEmail: `ops@example.com` must be an email address containing \{cell\}/,
    ],
    [
      'bad OU id',
      (i) => ({ ...i, organization: { accountEmail: 'aws+{cell}@example.com', organizationalUnitId: 'cells' } }),
      /organization.organizationalUnitId: `cells` is not an OU id/,
    ],
    [
      'bad organization id',
      (i) => ({ ...i, pipeline: { ...i.pipeline!, organizationId: 'ou-ab12-cells001' } }),
      /pipeline.organizationId: `ou-ab12-cells001` is not an AWS Organizations id \(o- and 10 to 32/,
    ],
    [
      'certificate from another account',
      editCell(1, { certificateArn: 'arn:aws:acm:eu-west-1:999999999999:certificate/abc' }),
      /certificateArn must be an ACM certificate in the cell's own account and region/,
    ],
  ];

  it.each(cases)('reports %s', (_name, edit, message) => {
    const problems = problemsAfter(edit);
    expect(problems).toEqual(expect.arrayContaining([expect.stringMatching(message)]));
  });

  it('reports every problem at once, one line each', () => {
    const problems = problemsAfter((i) => editCell(1, { id: 'eu-2' })(editCell(3, { account: undefined })(i)));
    expect(problems).toHaveLength(2);
  });

  it('takes accounts from the accounts file when the config has none', () => {
    const input = withCells((cells) => cells.map((c) => ({ ...c, account: undefined })))(validInput());
    const accounts = Object.fromEntries(input.cells.map((c, i) => [c.id, String(555555555550 + i)]));
    expect(fleetProblems(input, accounts)).toEqual([]);
    expect(resolveFleet(input, accounts).cells[1].account).toBe('555555555551');
  });
});

describe('defaultRouterSlots', () => {
  it('gives twice the cells in multiples of 64, from 64 up to the 1000 HAProxy backends a router has', () => {
    expect([1, 8, 32, 33, 40, 200, 499, 500, 2000].map(defaultRouterSlots)).toEqual([64, 64, 64, 128, 128, 448, 1000, 1000, 1000]);
  });

  it('leaves a fleet too large for one router generation with a clear problem', () => {
    const input = validInput();
    const many = Array.from({ length: 1000 }, (_, n) => ({
      ...input.cells[1],
      id: `c-${n}`,
      cidr: `10.${100 + Math.floor(n / 16)}.${(n % 16) * 16}.0/20`,
      account: undefined,
    }));
    const problems = fleetProblems(
      { ...input, cells: [input.cells[0], ...many] },
      Object.fromEntries(many.map((c, n) => [c.id, String(500000000000 + n)])),
    );
    expect(problems.filter((p) => p.startsWith('router.slots'))).toEqual([
      expect.stringMatching(/^router.slots: 1000 backend slots cannot serve 1001 cells; .* set at least 1002 \(the default stops at 1000\)$/),
    ]);
  });
});

describe('resolveFleet', () => {
  it('throws one FleetConfigError listing every problem', () => {
    const input = withCells((cells) => cells.map((c) => ({ ...c, canary: false, account: undefined })))(validInput());
    let error: unknown;
    try {
      resolveFleet(input);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FleetConfigError);
    const { problems, message } = error as FleetConfigError;
    expect(problems.length).toBe(input.cells.length + 1);
    expect(message).toContain(`cells.config.ts has ${problems.length} problem(s)`);
  });

  it('applies defaults', () => {
    const { partitionKey, bucketCount, ...rest } = validInput();
    void partitionKey;
    void bucketCount;
    const fleet = resolveFleet({ ...rest, alarms: undefined });
    expect(fleet.partitionKey).toEqual({ source: 'header', name: 'x-tenant-id' });
    expect(fleet.bucketCount).toBe(16384);
    expect(fleet.alarms.evaluationPeriods).toBe(3);
    expect(fleet.cells.every((c) => c.state === 'active')).toBe(true);
    expect(fleet.cells.filter((c) => c.canary).map((c) => c.id)).toEqual(['canary-eu']);
    expect(fleet.cells[0].availabilityZones).toEqual(['euw1-az1', 'euw1-az2', 'euw1-az3']);
    expect(fleet.router.mappingBucket).toBe('orders-mappings-222222222222');
    expect(fleet.router).toMatchObject({ slots: 64, cellMaxConn: 200, queueTimeoutMs: 1000 });
    expect(fleet.capacity).toEqual({ targetUtilisation: 0.5, spareCells: 1, largeTenantShare: 0.5, defaultTier: 'general' });
    expect(resolveFleet({ ...rest, capacity: { targetUtilisation: 0.7 } }).capacity).toEqual({
      targetUtilisation: 0.7,
      spareCells: 1,
      largeTenantShare: 0.5,
      defaultTier: 'general',
    });
    expect(fleet.cells.map((c) => c.tier)).toEqual(fleet.cells.map(() => 'general'));
  });
});

describe('fleetProblems: what AWS would refuse, found before synth', () => {
  const fleetOf = (cells: number, quotas?: FleetInput['quotas']): FleetInput => ({
    ...generateFleet(validInput(), cells),
    ...(quotas ? { quotas } : {}),
  });

  it("refuses an app and cell id whose longest derived role name passes IAM's 64 characters, naming the role", () => {
    // `<app>-<cell>-mover-launcher`: 21 + 1 + 31 + 15 = 68.
    const input = editCell(1, { id: `e${'u'.repeat(30)}` })({ ...validInput(), app: `o${'r'.repeat(20)}` });
    expect(fleetProblems(input)).toEqual(
      expect.arrayContaining([
        `cell \`e${'u'.repeat(30)}\`: its role \`o${'r'.repeat(20)}-e${'u'.repeat(30)}-mover-launcher\` is 68 characters, over IAM's 64 for a role name; \`app\` and a cell id may have 48 characters together: shorten the cell id or \`app\``,
      ]),
    );
    expect(fleetProblems({ ...validInput(), app: `o${'r'.repeat(20)}` })).toEqual([]);
  });

  it('refuses regions cross-region PrivateLink does not connect, one line per region', () => {
    const input: FleetInput = {
      ...validInput(),
      regions: { ...validInput().regions, 'eu-central-1': { availabilityZones: ['euc1-az1', 'euc1-az2'] } },
    };
    expect(fleetProblems(input)).toEqual([
      expect.stringMatching(
        /^region `eu-central-1`: cross-region PrivateLink .* is not offered in eu-central-1, so the routers of eu-west-1, us-east-1 cannot reach its cells/,
      ),
    ]);
    expect(crossRegionProblems(['eu-central-1'])).toEqual([]);
  });

  it('refuses more cells than the interface endpoints a router VPC may hold, with the Service Quotas request', () => {
    expect(fleetProblems(fleetOf(50))).toEqual([]);
    expect(fleetProblems(fleetOf(51))).toEqual([
      'cells: 51 cells need 51 interface endpoints in every router VPC (one per cell of the fleet), over the 50 AWS grants by default (https://docs.aws.amazon.com/vpc/latest/privatelink/vpc-limits-endpoints.html); ' +
        'request at least 51 for the router account in every region (`aws service-quotas request-service-quota-increase --service-code vpc --quota-code L-29B6F2EB --desired-value 51 --region R`, docs/limits.md) and, once granted, set quotas.interfaceEndpointsPerVpc',
    ]);
    expect(fleetProblems(fleetOf(51, { interfaceEndpointsPerVpc: 100 }))).toEqual([]);
    expect(fleetProblems(fleetOf(120, { interfaceEndpointsPerVpc: 100 }))).toEqual([
      expect.stringMatching(/^cells: 120 cells need 120 interface endpoints .* over the 100 declared in quotas.interfaceEndpointsPerVpc/),
    ]);
    expect(fleetProblems(fleetOf(10, { interfaceEndpointsPerVpc: 20 }))).toEqual([
      expect.stringMatching(/^quotas.interfaceEndpointsPerVpc: 20 must be a whole number of at least AWS's default 50/),
    ]);
  });

  it("holds the resolved fleet to the declared quota, AWS's default otherwise", () => {
    expect(resolveFleet(validInput()).quotas).toEqual({ interfaceEndpointsPerVpc: 50 });
    expect(resolveFleet(fleetOf(60, { interfaceEndpointsPerVpc: 200 })).quotas).toEqual({ interfaceEndpointsPerVpc: 200 });
  });
});

describe("fleetProblems: the router VPC's addresses", () => {
  it("refuses a router range too small for its AZs' subnets, and more cells than a cell-endpoint subnet holds", () => {
    const fourZones: FleetInput = {
      ...validInput(),
      regions: { ...validInput().regions, 'us-east-1': { availabilityZones: ['use1-az1', 'use1-az2', 'use1-az4', 'use1-az5', 'use1-az6'] } },
    };
    expect(fleetProblems(fourZones)).toEqual([
      expect.stringMatching(
        /^router.cidrs.us-east-1: 10.255.16.0\/20 holds 4096 addresses; the router VPC's 5 AZs need 5120 .* give a \/19 or list fewer AZs$/,
      ),
    ]);
    expect(fleetProblems({ ...fourZones, router: { ...fourZones.router, cidrs: { 'us-east-1': '10.254.0.0/19' } } })).toEqual([]);
    expect(fleetProblems({ ...generateFleet(validInput(), 508), quotas: { interfaceEndpointsPerVpc: 600 } })).toEqual([
      expect.stringMatching(/^cells: 508 cells need 508 addresses in every router VPC's cell-endpoint subnet of each AZ, which holds 507/),
    ]);
  });
});
