import * as fs from 'fs';
import * as path from 'path';
import { addPipeline } from '../../lib/app';
import { Fleet, fleetProblems, FleetInput } from '../../lib/domain/fleet';
import { cdkApp, exampleFleet, REPO_ROOT, twoCellFleet, validInput } from '../support/fleet';

/**
 * ARNs are built in the fleet's partition: by the constructs from their stack (`Stack.formatArn`,
 * the stack's partition), by the CLI and the stage scripts from the fleet or the region. Nothing
 * in lib/ or bin/ writes the standard partition's `arn:aws:` itself.
 */
const GOVCLOUD: Record<string, { region: string; zones: string[] }> = {
  'eu-west-1': { region: 'us-gov-west-1', zones: ['usgw1-az1', 'usgw1-az2', 'usgw1-az3'] },
  'us-east-1': { region: 'us-gov-east-1', zones: ['usge1-az1', 'usge1-az2', 'usge1-az3'] },
};

/**
 * The example fleet's two-cell cut (a cell of each shape, one per region) moved to the GovCloud (US)
 * regions. The fleet file cannot name them (the AZ-ID table in lib/domain/fleet/regions.ts has no GovCloud
 * rows: its source page lists none), so the validated fleet is moved after loading; what this
 * checks is the constructs.
 */
function govCloudFleet(): Fleet {
  const fleet = twoCellFleet();
  const to = (region: string) => GOVCLOUD[region].region;
  return {
    ...fleet,
    partition: 'aws-us-gov',
    regions: Object.fromEntries(Object.keys(fleet.regions).map((r) => [to(r), { availabilityZones: GOVCLOUD[r].zones }])),
    cells: fleet.cells.map((c) => ({ ...c, region: to(c.region), availabilityZones: GOVCLOUD[c.region].zones })),
    router: {
      ...fleet.router,
      homeRegion: to(fleet.router.homeRegion),
      cidrs: Object.fromEntries(Object.entries(fleet.router.cidrs).map(([r, cidr]) => [to(r), cidr])),
      certificateArns: {},
    },
    pipeline: fleet.pipeline && {
      ...fleet.pipeline,
      region: to(fleet.pipeline.region),
      source: {
        kind: 'connection',
        connectionArn: `arn:aws-us-gov:codeconnections:us-gov-west-1:${fleet.accounts.tooling}:connection/00000000-0000-0000-0000-000000000000`,
        repository: 'example-org/orders-cells',
        branch: 'main',
      },
    },
    organization: fleet.organization && { ...fleet.organization, executionPolicyArn: 'arn:aws-us-gov:iam::aws:policy/AdministratorAccess' },
  };
}

/** Every CloudFormation template under an assembly directory (nested stage assemblies included): file → text. */
function templates(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const file = path.join(d, entry.name);
      if (entry.isDirectory() && !entry.name.startsWith('asset.')) walk(file);
      else if (entry.name.endsWith('.template.json')) out.set(path.relative(dir, file), fs.readFileSync(file, 'utf8'));
    }
  };
  walk(dir);
  return out;
}

describe('a fleet in the aws-us-gov partition', () => {
  let written: Map<string, string>;
  let fleet: Fleet;
  beforeAll(() => {
    const app = cdkApp();
    fleet = govCloudFleet();
    // The audit gate included: an acknowledgment that named the standard partition would no longer
    // match its finding and fail synth.
    addPipeline(app, fleet);
    written = templates(app.synth().directory);
  });

  it('synthesizes every stack with no ARN of the standard partition', () => {
    // Each cell's stage, each region's router stages, the pipeline.
    const files = [...written.keys()];
    const stages = [
      ...fleet.cells.map((c) => `cell-${c.id}`),
      ...Object.keys(fleet.regions).flatMap((r) => [`routers-${r}`, `routers-${r}-canary-group`]),
    ];
    expect(stages.filter((stage) => !files.some((f) => f.startsWith(`assembly-${fleet.app}-pipeline-${stage}/`)))).toEqual([]);
    expect(files).toContain(`${fleet.app}-pipeline.template.json`);
    // Mappings are tables keyed by partition (CDK's secret rotation lists its application's ARN in
    // each partition and picks the stack's); what a resource uses is outside them.
    const used = (text: string) => JSON.stringify({ ...(JSON.parse(text) as Record<string, unknown>), Mappings: undefined });
    const standard = [...written]
      .filter(([, text]) => used(text).includes('arn:aws:'))
      .map(([file, text]) => `${file}: ${/.{0,80}arn:aws:.{0,80}/.exec(used(text))![0]}`);
    expect(standard).toEqual([]);
    expect(
      [...written.values()].some((text) =>
        /"Fn::FindInMap":\["[A-Za-z0-9]*SARMapping[A-Za-z0-9]*",\{"Ref":"AWS::Partition"\}/.test(JSON.stringify(JSON.parse(text))),
      ),
    ).toBe(true);
  });

  it('writes its ARNs in its own partition (literals where the region is known)', () => {
    const all = [...written.values()].join('\n');
    expect(all).toContain('arn:aws-us-gov:iam::');
    expect(all).toContain('arn:aws-us-gov:s3:::');
  });
});

describe("the fleet file's partition", () => {
  const problems = (input: FleetInput) => fleetProblems(input);

  it('defaults to aws, and a fleet of standard regions validates', () => {
    expect(problems(validInput())).toEqual([]);
    expect(exampleFleet().partition).toBe('aws');
  });

  it('is one of aws, aws-cn, aws-us-gov', () => {
    expect(problems({ ...validInput(), partition: 'aws-iso' as FleetInput['partition'] })).toEqual([
      "partition must be 'aws' or 'aws-cn' or 'aws-us-gov', got the string 'aws-iso'",
    ]);
  });

  it('holds every region of the fleet', () => {
    expect(problems({ ...validInput(), partition: 'aws-us-gov' })).toEqual(
      expect.arrayContaining([
        "region `eu-west-1`: in partition aws, not the fleet's aws-us-gov; use regions of one partition",
        "region `us-east-1`: in partition aws, not the fleet's aws-us-gov; use regions of one partition",
      ]),
    );
    const input = validInput();
    expect(problems({ ...input, regions: { ...input.regions, 'us-gov-west-1': { availabilityZones: ['usgw1-az1', 'usgw1-az2'] } } })).toContain(
      "region `us-gov-west-1`: in partition aws-us-gov, not the fleet's aws; set `partition: 'aws-us-gov'` if every region is there, or use regions of one partition",
    );
  });

  it("is the partition the fleet's ARNs must be in", () => {
    const input = validInput();
    const gov = { ...input, partition: 'aws-us-gov' as const };
    expect(
      problems({ ...input, organization: { ...input.organization!, executionPolicyArn: 'arn:aws-us-gov:iam::aws:policy/AdministratorAccess' } }),
    ).toContain(
      'organization.executionPolicyArn: `arn:aws-us-gov:iam::aws:policy/AdministratorAccess` is not an IAM policy ARN (arn:aws:iam::aws:policy/NAME, or arn:aws:iam::{account}:policy/NAME for a policy created in every account)',
    );
    expect(problems(gov).filter((p) => p.startsWith('pipeline.source.connectionArn'))).toEqual([
      `pipeline.source.connectionArn: \`${(input.pipeline!.source as { connectionArn: string }).connectionArn}\` is not a CodeConnections ARN in the fleet's partition (arn:aws-us-gov:codeconnections:<region>:<account>:connection/<id>)`,
    ]);
  });
});

describe('the source', () => {
  /** Lines of lib/ and bin/ TypeScript that write `arn:aws:`, comments included. */
  function standardArns(dir: string): string[] {
    const found: string[] = [];
    const walk = (d: string) => {
      for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
        const file = path.join(d, entry.name);
        if (entry.isDirectory()) walk(file);
        else if (entry.name.endsWith('.ts')) {
          fs.readFileSync(file, 'utf8')
            .split('\n')
            .forEach((line, i) => {
              if (line.includes('arn:aws:')) found.push(`${path.relative(REPO_ROOT, file)}:${i + 1}: ${line.trim()}`);
            });
        }
      }
    };
    walk(dir);
    return found;
  }

  it("has no literal standard-partition ARN in lib/ or bin/ (build ARNs with Stack.formatArn, or the fleet's or region's partition)", () => {
    expect([...standardArns(path.join(REPO_ROOT, 'lib')), ...standardArns(path.join(REPO_ROOT, 'bin'))]).toEqual([]);
  });
});
