import * as fs from 'fs';
import * as path from 'path';
import { bootstrapEnvironments } from '../../lib/adapters/accounts';
import { addPipeline } from '../../lib/app';
import { Fleet } from '../../lib/domain/fleet';
import {
  bakeWatcherRoleName,
  cellEndpointReaderRoleName,
  cellEndpointServiceParameter,
  cellMetricsReaderRoleName,
  cellWriterFailoverRoleName,
  cellSignalsParameter,
  mappingBucketParameter,
  routerGroupHealthAlarmName,
  routerParameters,
  routerTaskRoleName,
} from '../../lib/domain/names';
import { groupKey, GROUPS_PREFIX, PUBLISHER_ACTIONS, versionKey, VERSIONS_PREFIX, ZONES_PREFIX, zonesKey } from '../../lib/adapters/mapping-store';
import { bakeCommands } from '../../lib/constructs/pipeline/bake';
import { planWaves } from '../../lib/domain/waves';
import { cdkApp, smallExampleFleet } from '../support/fleet';
import { bootstrapStack, Decision, deployedTemplates, outsider, PolicyWorld, RoleView } from '../support/iam';
import { SERVED_PREFIX, servedKey, servedPrefix } from '../../lib/runtime/router/served';
import { bakeAlarmNames } from '../../lib/cli/zone-aws';

/**
 * Every runtime call the project makes, evaluated against the synthesized identity and resource
 * policies (and the CDK bootstrap stacks `cellctl accounts bootstrap` creates) by an IAM policy
 * evaluator: each call is allowed, and its neighbours are denied. The calls come from the code
 * (key names from lib/adapters/mapping-store, the agent's bucket and group from the task definitions, the
 * bake step's AWS CLI calls from its commands), so a change there is checked here.
 */

type Principal = Parameters<PolicyWorld['decide']>[0];
interface Call {
  who: string;
  principal: Principal;
  action: string;
  resource: string;
  context?: Record<string, string | undefined>;
  expect: Decision | 'Denied';
}

/** Evaluates every call and lists the ones whose answer differs, so a failure names each call. */
async function mismatches(world: PolicyWorld, calls: readonly Call[]): Promise<string[]> {
  const wrong: string[] = [];
  for (const call of calls) {
    const context = Object.fromEntries(Object.entries(call.context ?? {}).filter((e): e is [string, string] => e[1] !== undefined));
    const got = await world.decide(call.principal, call.action, call.resource, context);
    const ok = call.expect === 'Denied' ? got !== 'Allowed' : got === call.expect;
    if (!ok)
      wrong.push(
        `${call.who}: ${call.action} ${call.resource}${call.context ? ` ${JSON.stringify(call.context)}` : ''} -> ${got}, expected ${call.expect}`,
      );
  }
  return wrong;
}

/** `aws sts assume-role` -> `sts:AssumeRole`: the IAM actions of the AWS CLI calls in a script. */
function cliActions(script: string): string[] {
  const actions = new Set<string>();
  for (const [, service, operation] of script.matchAll(/\baws (\w[\w-]*) ([a-z][a-z-]+)/g)) {
    actions.add(
      `${service}:${operation
        .split('-')
        .map((w) => w[0].toUpperCase() + w.slice(1))
        .join('')}`,
    );
  }
  return [...actions].sort();
}

/** An account outside the fleet's organization, bootstrapped trusting the tooling account all the same. */
const OUTSIDER = '999999999999';

const trustArgs = (args: readonly string[]) => (args.includes('--trust') ? args[args.indexOf('--trust') + 1] : '');

describe('IAM: the runtime calls against the synthesized policies (example fleet, pipeline)', () => {
  let fleet: Fleet;
  let world: PolicyWorld;
  let stackNames: { name: string; account: string; region: string }[];
  let agents: { region: string; group: string; bucket: string; role: RoleView }[];
  let alarmNamesByRegion: Map<string, Set<string>>;
  beforeAll(() => {
    // Canary, two single-cell waves and a group wave across both regions: every kind of bake.
    fleet = smallExampleFleet(['canary-eu', 'eu-1', 'us-1', 'eu-2', 'us-2']);
    const app = cdkApp();
    addPipeline(app, fleet, { audit: false });
    const assembly = app.synth();
    const deployed = deployedTemplates(assembly);
    // Nested stacks (the router's cell links hold the per-cell alarms) are assets of their parents.
    alarmNamesByRegion = new Map();
    const visit = (a: typeof assembly) => {
      for (const stack of a.stacks) {
        // A nested stack's template is a file named after its parent's artifact id (less its hash) and its own path.
        const parent = stack.id.replace(/[0-9A-F]{8}$/, '');
        const files = [
          stack.templateFullPath,
          ...fs
            .readdirSync(a.directory)
            .filter((f) => f.startsWith(parent) && f.endsWith('.nested.template.json'))
            .map((f) => path.join(a.directory, f)),
        ];
        for (const file of files) {
          const template = JSON.parse(fs.readFileSync(file, 'utf8')) as {
            Resources?: Record<string, { Type: string; Properties?: { AlarmName?: unknown } }>;
          };
          for (const r of Object.values(template.Resources ?? {}))
            if (
              (r.Type === 'AWS::CloudWatch::Alarm' || r.Type === 'AWS::CloudWatch::CompositeAlarm') &&
              typeof r.Properties?.AlarmName === 'string'
            ) {
              const set = alarmNamesByRegion.get(stack.environment.region) ?? new Set<string>();
              set.add(r.Properties.AlarmName);
              alarmNamesByRegion.set(stack.environment.region, set);
            }
        }
      }
      for (const nested of a.nestedAssemblies) visit(nested.nestedAssembly);
    };
    visit(assembly);
    stackNames = deployed.map((s) => ({ name: s.stackName, account: s.account, region: s.region }));
    // The bootstrap stacks, exactly as `cellctl accounts bootstrap` would create them.
    const bootstrapped = bootstrapEnvironments(fleet, { executionPolicyArn: 'arn:aws:iam::aws:policy/AdministratorAccess' }).map((e) =>
      bootstrapStack(e.account, e.region, { TrustedAccounts: trustArgs(e.args), CloudFormationExecutionPolicies: e.args.at(-1)! }),
    );
    // Every account of the fleet is in the example organization (pipeline.organizationId); 999999999999 is not.
    const members = [fleet.accounts.tooling, fleet.accounts.router, ...fleet.cells.map((c) => c.account)];
    world = new PolicyWorld(
      [
        ...deployed,
        ...bootstrapped,
        bootstrapStack(OUTSIDER, 'eu-west-1', {
          TrustedAccounts: fleet.accounts.tooling,
          CloudFormationExecutionPolicies: 'arn:aws:iam::aws:policy/AdministratorAccess',
        }),
      ],
      { id: fleet.pipeline!.organizationId!, accounts: members },
    );
    agents = world.resourcesOf('AWS::ECS::TaskDefinition').flatMap((task) => {
      const env = Object.fromEntries(
        (task.properties.ContainerDefinitions as { Environment?: { Name: string; Value: string }[] }[])
          .flatMap((c) => c.Environment ?? [])
          .map((e) => [e.Name, e.Value]),
      );
      if (!env.MAPPING_BUCKET) return [];
      return [
        {
          region: task.stack.region,
          group: env.ROUTER_GROUP,
          bucket: env.MAPPING_BUCKET,
          role: world.role(world.arnOf(task.stack.stackName, task.stack.template.Resources[task.logicalId].Properties.TaskRoleArn)),
        },
      ];
    });
  });

  const bucketArn = (bucket: string, key?: string) => `arn:aws:s3:::${bucket}${key === undefined ? '' : `/${key}`}`;

  it('finds one agent per router group and region, each reading a bucket in the router account', () => {
    expect(agents.map((a) => `${a.region}/${a.group}`).sort()).toEqual(
      Object.keys(fleet.regions)
        .flatMap((r) => fleet.router.groups.map((g) => `${r}/${g.name}`))
        .sort(),
    );
    for (const agent of agents) expect(world.ownerOf(bucketArn(agent.bucket))).toBe(fleet.accounts.router);
  });

  // DESIGN.md: every router reads its mapping from its own region, so no region depends on another
  // one's S3 ("every router reaches every cell").
  it('has every agent read a mapping bucket in its own region', () => {
    const regionOf = (bucket: string) => world.resourcesOf('AWS::S3::Bucket').find((b) => b.name === bucket)?.stack.region;
    expect(
      agents.filter((a) => regionOf(a.bucket) !== a.region).map((a) => `${a.region}/${a.group} reads ${a.bucket} in ${regionOf(a.bucket)}`),
    ).toEqual([]);
  });

  it("lets each router group's agent read its own pointer and list exactly its key, and not another group's, nor write, delete or list anything else", async () => {
    const calls: Call[] = agents.flatMap(({ region, group, bucket, role }) => {
      const who = `agent ${region}/${group}`;
      return [
        { who, principal: role, action: 's3:GetObject', resource: bucketArn(bucket, groupKey(group)), expect: 'Allowed' as const },
        ...fleet.router.groups
          .filter((g) => g.name !== group)
          .map((other) => ({
            who,
            principal: role,
            action: 's3:GetObject',
            resource: bucketArn(bucket, groupKey(other.name)),
            expect: 'Denied' as const,
          })),
        {
          who,
          principal: role,
          action: 's3:GetObject',
          resource: bucketArn(bucket, groupKey(group)),
          context: { 'aws:SecureTransport': 'false' },
          expect: 'ExplicitlyDenied' as const,
        },
        { who, principal: role, action: 's3:PutObject', resource: bucketArn(bucket, groupKey(group)), expect: 'Denied' as const },
        { who, principal: role, action: 's3:DeleteObject', resource: bucketArn(bucket, versionKey(1)), expect: 'Denied' as const },
        // Listing exactly its own pointer key tells "not published yet" from "denied" on S3's 403 (lib/runtime/router/sources.ts).
        {
          who,
          principal: role,
          action: 's3:ListBucket',
          resource: bucketArn(bucket),
          context: { 's3:prefix': groupKey(group) },
          expect: 'Allowed' as const,
        },
        {
          who,
          principal: role,
          action: 's3:ListBucket',
          resource: bucketArn(bucket),
          context: { 's3:prefix': GROUPS_PREFIX },
          expect: 'Denied' as const,
        },
        { who, principal: role, action: 's3:ListBucket', resource: bucketArn(bucket), context: { 's3:prefix': '' }, expect: 'Denied' as const },
        { who, principal: role, action: 's3:ListBucket', resource: bucketArn(bucket), expect: 'Denied' as const },
        ...fleet.router.groups
          .filter((g) => g.name !== group)
          .map((other) => ({
            who,
            principal: role,
            action: 's3:ListBucket',
            resource: bucketArn(bucket),
            context: { 's3:prefix': groupKey(other.name) },
            expect: 'Denied' as const,
          })),
      ];
    });
    expect(await mismatches(world, calls)).toEqual([]);
  });

  // ZoneWeightsFollower (lib/runtime/router/zones.ts) reads zones/<region>.json with S3MappingSource:
  // a GET, and on S3's 403 a listing of exactly that key.
  it("lets each router group's agent read its region's zones document and list exactly its key, and not another region's, nor write it", async () => {
    const regions = Object.keys(fleet.regions);
    const calls: Call[] = agents.flatMap(({ region, group, bucket, role }) => {
      const who = `agent ${region}/${group}`;
      const other = regions.find((r) => r !== region)!;
      return [
        { who, principal: role, action: 's3:GetObject', resource: bucketArn(bucket, zonesKey(region)), expect: 'Allowed' as const },
        {
          who,
          principal: role,
          action: 's3:ListBucket',
          resource: bucketArn(bucket),
          context: { 's3:prefix': zonesKey(region) },
          expect: 'Allowed' as const,
        },
        { who, principal: role, action: 's3:GetObject', resource: bucketArn(bucket, zonesKey(other)), expect: 'Denied' as const },
        {
          who,
          principal: role,
          action: 's3:ListBucket',
          resource: bucketArn(bucket),
          context: { 's3:prefix': ZONES_PREFIX },
          expect: 'Denied' as const,
        },
        { who, principal: role, action: 's3:PutObject', resource: bucketArn(bucket, zonesKey(region)), expect: 'Denied' as const },
      ];
    });
    expect(await mismatches(world, calls)).toEqual([]);
  });

  // `cellctl zone drain` (lib/adapters/mapping-store/zones.ts) reads and replaces each region's zones document with the publisher role.
  it("lets the publisher read, replace and list each region's zones document", async () => {
    const publisher = world.role(`arn:aws:iam::${fleet.accounts.router}:role/${fleet.app}-mapping-publisher`);
    const who = 'publisher';
    const calls: Call[] = [...new Map(agents.map((a) => [a.bucket, a.region]))].flatMap(([bucket, region]) => [
      ...(['s3:GetObject', 's3:PutObject'] as const).map((action) => ({
        who,
        principal: publisher,
        action,
        resource: bucketArn(bucket, zonesKey(region)),
        expect: 'Allowed' as const,
      })),
      {
        who,
        principal: publisher,
        action: 's3:ListBucket',
        resource: bucketArn(bucket),
        context: { 's3:prefix': zonesKey(region) },
        expect: 'Allowed' as const,
      },
      { who, principal: publisher, action: 's3:DeleteObject', resource: bucketArn(bucket, zonesKey(region)), expect: 'Denied' as const },
    ]);
    expect(await mismatches(world, calls)).toEqual([]);
  });

  // `cellctl zone drain|undrain` (lib/adapters/aws/zonal-shift.ts): ListZonalShifts (no resource), then
  // Start, Update or Cancel on each router NLB of the region, found by its SSM parameter.
  it("lets the publisher shift the router's NLBs away from a zone and back, and nothing else of theirs", async () => {
    const publisher = world.role(`arn:aws:iam::${fleet.accounts.router}:role/${fleet.app}-mapping-publisher`);
    const who = 'publisher';
    const regions = Object.keys(fleet.regions);
    const nlb = (region: string) => `arn:aws:elasticloadbalancing:${region}:${fleet.accounts.router}:loadbalancer/net/orders-router/0123456789abcdef`;
    const calls: Call[] = [
      { who, principal: publisher, action: 'arc-zonal-shift:ListZonalShifts', resource: '*', expect: 'Allowed' as const },
      ...regions.flatMap((region) => [
        ...['StartZonalShift', 'UpdateZonalShift', 'CancelZonalShift'].map((op) => ({
          who,
          principal: publisher,
          action: `arc-zonal-shift:${op}`,
          resource: nlb(region),
          expect: 'Allowed' as const,
        })),
        {
          who,
          principal: publisher,
          action: 'ssm:GetParameter',
          resource: `arn:aws:ssm:${region}:${fleet.accounts.router}:parameter${routerParameters.loadBalancerArn(fleet.app)}`,
          expect: 'Allowed' as const,
        },
        // An undrain's bake reads the region's router alarms (lib/cli/zone-aws.ts, bakeAlarmNames), and no other alarm.
        {
          who,
          principal: publisher,
          action: 'cloudwatch:DescribeAlarms',
          resource: `arn:aws:cloudwatch:${region}:${fleet.accounts.router}:alarm:${routerGroupHealthAlarmName(fleet.app, region, fleet.router.groups[0].name)}`,
          expect: 'Allowed' as const,
        },
        {
          who,
          principal: publisher,
          action: 'cloudwatch:DescribeAlarms',
          resource: `arn:aws:cloudwatch:${region}:${fleet.accounts.router}:alarm:someone-elses-alarm`,
          expect: 'Denied' as const,
        },
        // Not the load balancers themselves, nor an application load balancer, nor another account's NLB.
        { who, principal: publisher, action: 'elasticloadbalancing:ModifyLoadBalancerAttributes', resource: nlb(region), expect: 'Denied' as const },
        {
          who,
          principal: publisher,
          action: 'arc-zonal-shift:StartZonalShift',
          resource: `arn:aws:elasticloadbalancing:${region}:${fleet.accounts.router}:loadbalancer/app/orders/0123456789abcdef`,
          expect: 'Denied' as const,
        },
        {
          who,
          principal: publisher,
          action: 'arc-zonal-shift:StartZonalShift',
          resource: `arn:aws:elasticloadbalancing:${region}:999999999999:loadbalancer/net/orders-router/0123456789abcdef`,
          expect: 'Denied' as const,
        },
      ]),
    ];
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it("bakes an undrain on alarms that exist: each router group's health and each cell's errors in the region", () => {
    for (const region of Object.keys(fleet.regions)) {
      const existing = alarmNamesByRegion.get(region) ?? new Set<string>();
      const watched = bakeAlarmNames({
        fleet,
        region,
        zones: fleet.regions[region].availabilityZones,
        groups: fleet.router.groups.map((g) => g.name),
      });
      expect(watched.length).toBe(fleet.router.groups.length + fleet.cells.length);
      expect(watched.filter((n) => !existing.has(n))).toEqual([]);
    }
  });

  // A full task's readiness asks its target group's health (lib/runtime/router/target-health.ts,
  // bin/router-agent.ts); DescribeTargetHealth takes no resource, so it is granted on "*".
  it("lets each router group's tasks read their target group's health, and change nothing of any load balancer", async () => {
    const calls: Call[] = agents.flatMap(({ region, group, role }) => {
      const who = `agent ${region}/${group}`;
      const targetGroup = `arn:aws:elasticloadbalancing:${region}:${fleet.accounts.router}:targetgroup/${group}/0123456789abcdef`;
      return [
        { who, principal: role, action: 'elasticloadbalancing:DescribeTargetHealth', resource: '*', expect: 'Allowed' as const },
        ...['DeregisterTargets', 'RegisterTargets', 'ModifyTargetGroup', 'ModifyTargetGroupAttributes', 'DeleteTargetGroup'].map((op) => ({
          who,
          principal: role,
          action: `elasticloadbalancing:${op}`,
          resource: targetGroup,
          expect: 'Denied' as const,
        })),
      ];
    });
    expect(agents.length).toBeGreaterThan(0);
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it("lets each router group's tasks write their served-version reports under its own served/ prefix only, and nobody else write there", async () => {
    const admin = outsider(`arn:aws:iam::${fleet.accounts.router}:role/Admin`, [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }]);
    const publisher = world.role(`arn:aws:iam::${fleet.accounts.router}:role/${fleet.app}-mapping-publisher`);
    // Each group's task role has the name its region's bucket policy gives as that group's only writer.
    expect(agents.map((a) => a.role.name)).toEqual(agents.map((a) => routerTaskRoleName(fleet.app, a.region, a.group)));
    const calls: Call[] = agents.flatMap(({ region, group, bucket, role }) => {
      const who = `agent ${region}/${group}`;
      const otherRegion = agents.find((a) => a.region !== region && a.group === group)!;
      return [
        {
          who,
          principal: role,
          action: 's3:PutObject',
          resource: bucketArn(bucket, servedKey(group, '0123456789abcdef0123456789abcdef')),
          expect: 'Allowed' as const,
        },
        // Neighbours: another group's reports, anything else of the bucket, deleting, the other region's bucket under another group.
        ...fleet.router.groups
          .filter((g) => g.name !== group)
          .map((other) => ({
            who,
            principal: role,
            action: 's3:PutObject',
            resource: bucketArn(bucket, servedKey(other.name, 'task-1')),
            expect: 'ExplicitlyDenied' as const,
          })),
        {
          who,
          principal: role,
          action: 's3:PutObject',
          resource: bucketArn(bucket, `${SERVED_PREFIX}unknown/task-1.json`),
          expect: 'Denied' as const,
        },
        {
          who,
          principal: role,
          action: 's3:PutObject',
          resource: bucketArn(bucket, `${servedPrefix(group)}task-1.json`),
          context: { 'aws:SecureTransport': 'false' },
          expect: 'ExplicitlyDenied' as const,
        },
        { who, principal: role, action: 's3:DeleteObject', resource: bucketArn(bucket, servedKey(group, 'task-1')), expect: 'Denied' as const },
        { who, principal: role, action: 's3:PutObject', resource: bucketArn(bucket, 'served-elsewhere.json'), expect: 'Denied' as const },
        { who, principal: role, action: 's3:GetObject', resource: bucketArn(bucket, servedKey(group, 'task-1')), expect: 'Denied' as const },
        {
          who,
          principal: role,
          action: 's3:ListBucket',
          resource: bucketArn(bucket),
          context: { 's3:prefix': servedPrefix(group) },
          expect: 'Denied' as const,
        },
        ...fleet.router.groups
          .filter((g) => g.name !== group)
          .map((other) => ({
            who,
            principal: role,
            action: 's3:PutObject',
            resource: bucketArn(otherRegion.bucket, servedKey(other.name, 'task-1')),
            expect: 'Denied' as const,
          })),
        // Whatever their own policies say, nobody but the group's tasks writes its reports: not an
        // administrator of the router account, not the mapping writers.
        {
          who: 'an administrator of the router account',
          principal: admin,
          action: 's3:PutObject',
          resource: bucketArn(bucket, servedKey(group, 'task-1')),
          expect: 'ExplicitlyDenied' as const,
        },
        {
          who: 'the publisher',
          principal: publisher,
          action: 's3:PutObject',
          resource: bucketArn(bucket, servedKey(group, 'task-1')),
          expect: 'Denied' as const,
        },
      ];
    });
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it('lets the publisher make every MappingStore call on every mapping bucket, and nothing more', async () => {
    const publisher = world.role(`arn:aws:iam::${fleet.accounts.router}:role/${fleet.app}-mapping-publisher`);
    const buckets = [...new Set(agents.map((a) => a.bucket))];
    const keys = [versionKey(1), ...fleet.router.groups.map((g) => groupKey(g.name))];
    const who = 'publisher';
    const calls: Call[] = buckets.flatMap((bucket) => [
      // MappingStore: GetObject / HeadObject (s3:GetObject), conditional PutObject, ListObjectsV2
      // of the versions and of a key whose read was refused (S3's 403 for a missing key).
      ...keys.flatMap((key) =>
        (['s3:GetObject', 's3:PutObject'] as const).map((action) => ({
          who,
          principal: publisher,
          action,
          resource: bucketArn(bucket, key),
          expect: 'Allowed' as const,
        })),
      ),
      ...[VERSIONS_PREFIX, ...keys].map((prefix) => ({
        who,
        principal: publisher,
        action: 's3:ListBucket',
        resource: bucketArn(bucket),
        context: { 's3:prefix': prefix },
        expect: 'Allowed' as const,
      })),
      // Neighbours: no deletes, nothing outside the two prefixes, no listing of the whole bucket, no bucket changes.
      { who, principal: publisher, action: 's3:DeleteObject', resource: bucketArn(bucket, versionKey(1)), expect: 'Denied' as const },
      {
        who,
        principal: publisher,
        action: 's3:DeleteObjectVersion',
        resource: bucketArn(bucket, groupKey(fleet.router.groups[0].name)),
        expect: 'Denied' as const,
      },
      { who, principal: publisher, action: 's3:PutObject', resource: bucketArn(bucket, 'elsewhere/mapping.json'), expect: 'Denied' as const },
      { who, principal: publisher, action: 's3:ListBucket', resource: bucketArn(bucket), context: { 's3:prefix': '' }, expect: 'Denied' as const },
      { who, principal: publisher, action: 's3:PutBucketPolicy', resource: bucketArn(bucket), expect: 'Denied' as const },
      {
        who,
        principal: publisher,
        action: 's3:PutObject',
        resource: bucketArn(bucket, versionKey(1)),
        context: { 'aws:SecureTransport': 'false' },
        expect: 'ExplicitlyDenied' as const,
      },
      // Whatever its own policy says, nobody else in the router account writes a document.
      {
        who: 'an administrator of the router account',
        principal: outsider(`arn:aws:iam::${fleet.accounts.router}:role/Admin`, [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }]),
        action: 's3:PutObject',
        resource: bucketArn(bucket, groupKey(fleet.router.groups[0].name)),
        expect: 'ExplicitlyDenied' as const,
      },
    ]);
    expect(new Set(calls.filter((c) => c.expect === 'Allowed').map((c) => c.action))).toEqual(new Set(PUBLISHER_ACTIONS));
    // cellctl finds each region's bucket by its SSM parameter.
    for (const region of Object.keys(fleet.regions)) {
      const parameter = `arn:aws:ssm:${region}:${fleet.accounts.router}:parameter/${mappingBucketParameter(fleet.app).replace(/^\//, '')}`;
      calls.push({ who, principal: publisher, action: 'ssm:GetParameter', resource: parameter, expect: 'Allowed' });
      calls.push({ who, principal: publisher, action: 'ssm:PutParameter', resource: parameter, expect: 'Denied' });
    }
    const assume = (account: string): Principal =>
      outsider(`arn:aws:iam::${account}:role/operator`, [{ Effect: 'Allow', Action: 'sts:AssumeRole', Resource: '*' }]);
    calls.push(
      {
        who: 'an operator in the router account',
        principal: assume(fleet.accounts.router),
        action: 'sts:AssumeRole',
        resource: publisher.arn,
        expect: 'Allowed',
      },
      { who: 'the tooling account', principal: assume(fleet.accounts.tooling), action: 'sts:AssumeRole', resource: publisher.arn, expect: 'Denied' },
      { who: 'a cell account', principal: assume(fleet.cells[0].account), action: 'sts:AssumeRole', resource: publisher.arn, expect: 'Denied' },
    );
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it("lets each wave's bake step assume exactly its cells' bake-watcher roles and read their health alarms", async () => {
    const plan = planWaves(fleet);
    const byId = new Map(fleet.cells.map((c) => [c.id, c]));
    const tooling = world.roles().filter((r) => r.account === fleet.accounts.tooling);
    const calls: Call[] = [];
    for (const wave of plan.waves) {
      const targets = wave.cells.map((id) => {
        const c = byId.get(id)!;
        return {
          cell: id,
          account: c.account,
          region: c.region,
          alarmName: `${fleet.app}-${id}-health`,
          roleName: bakeWatcherRoleName(fleet.app, id),
        };
      });
      // The actions come from the bake step's own script.
      expect(cliActions(bakeCommands(targets, wave.bakeSeconds).join('\n'))).toEqual([
        'cloudwatch:DescribeAlarms',
        'codepipeline:GetPipelineExecution',
        'sts:AssumeRole',
      ]);
      const bakeRole = tooling.find((r) => r.logicalId.includes(`bake${wave.name.replace(/-/g, '')}`));
      if (!bakeRole) throw new Error(`no bake role for ${wave.name} among ${tooling.map((r) => r.logicalId).join(', ')}`);
      // The bake first reads its own execution, to tell a stage rollback from a rollout (lib/constructs/pipeline/bake.ts).
      const pipelineArn = `arn:aws:codepipeline:${fleet.pipeline!.region}:${fleet.accounts.tooling}:${fleet.app}-cells`;
      calls.push(
        { who: `bake ${wave.name}`, principal: bakeRole, action: 'codepipeline:GetPipelineExecution', resource: pipelineArn, expect: 'Allowed' },
        {
          who: `bake ${wave.name}`,
          principal: bakeRole,
          action: 'codepipeline:GetPipelineExecution',
          resource: `${pipelineArn}-other`,
          expect: 'Denied',
        },
        { who: `bake ${wave.name}`, principal: bakeRole, action: 'codepipeline:StartPipelineExecution', resource: pipelineArn, expect: 'Denied' },
      );
      for (const t of targets) {
        const watcherArn = `arn:aws:iam::${t.account}:role/${t.roleName}`;
        const watcher = world.role(watcherArn);
        const alarm = `arn:aws:cloudwatch:${t.region}:${t.account}:alarm:${t.alarmName}`;
        const who = `bake ${wave.name} / ${t.cell}`;
        calls.push(
          { who, principal: bakeRole, action: 'sts:AssumeRole', resource: watcherArn, expect: 'Allowed' },
          { who, principal: watcher, action: 'cloudwatch:DescribeAlarms', resource: alarm, expect: 'Allowed' },
          { who, principal: watcher, action: 'cloudwatch:SetAlarmState', resource: alarm, expect: 'Denied' },
          { who, principal: watcher, action: 'cloudwatch:DeleteAlarms', resource: alarm, expect: 'Denied' },
          {
            who: `an admin of another cell's account, for ${t.cell}`,
            principal: outsider(`arn:aws:iam::${fleet.cells.find((c) => c.account !== t.account)!.account}:role/Admin`, [
              { Effect: 'Allow', Action: 'sts:AssumeRole', Resource: '*' },
            ]),
            action: 'sts:AssumeRole',
            resource: watcherArn,
            expect: 'Denied',
          },
        );
        // No other role of the tooling account may assume it: only this wave's bake step.
        for (const other of tooling.filter((r) => !r.name.startsWith('cdk-') && !r.logicalId.includes(`bake${wave.name.replace(/-/g, '')}`))) {
          calls.push({ who: `${other.logicalId} for ${t.cell}`, principal: other, action: 'sts:AssumeRole', resource: watcherArn, expect: 'Denied' });
        }
      }
    }
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it("lets each router wave's bake step read only its region's router group health alarms", async () => {
    const tooling = world.roles().filter((r) => r.account === fleet.accounts.tooling && !r.name.startsWith('cdk-'));
    const calls: Call[] = [];
    for (const wave of planWaves(fleet).routerWaves) {
      // `bakerouterseuwest1` is also the start of `bakerouterseuwest1canarygroup`: match the wave's own.
      const own = new RegExp(`bake${wave.name.replace(/-/g, '')}(?!canarygroup)`);
      const bakeRole = tooling.find((r) => own.test(r.logicalId));
      if (!bakeRole) throw new Error(`no bake role for ${wave.name} among ${tooling.map((r) => r.logicalId).join(', ')}`);
      const stackName = `${fleet.app}-router-${wave.region}`;
      const watcher = world.roles().find((r) => r.stack === stackName && r.name.endsWith('-bake-watcher'));
      if (!watcher) throw new Error(`no bake-watcher role in ${stackName}`);
      // The alarms live with the groups, in the wave's group stack.
      const groupsStack = `${stackName}-${wave.part === 'canary' ? 'canary-group' : 'groups'}`;
      const alarms = world.resourcesOf('AWS::CloudWatch::CompositeAlarm').filter((a) => a.stack.stackName === groupsStack);
      const groups = wave.part === 'canary' ? fleet.router.groups.slice(0, 1) : fleet.router.groups.slice(1);
      expect(alarms.map((a) => a.name).sort()).toEqual(groups.map((g) => `${fleet.app}-router-${wave.region}-${g.name}-health`).sort());
      const who = `bake ${wave.name}`;
      calls.push({ who, principal: bakeRole, action: 'sts:AssumeRole', resource: watcher.arn, expect: 'Allowed' });
      for (const alarm of alarms) {
        calls.push({ who, principal: watcher, action: 'cloudwatch:DescribeAlarms', resource: alarm.arn, expect: 'Allowed' });
        calls.push({ who, principal: watcher, action: 'cloudwatch:SetAlarmState', resource: alarm.arn, expect: 'Denied' });
      }
      // Neither another region's router bakes nor any cell wave's bake may assume this region's watcher.
      const region = `bakerouters${wave.region.replace(/-/g, '')}`;
      for (const other of tooling.filter((r) => /bake/.test(r.logicalId) && !r.logicalId.includes(region))) {
        calls.push({
          who: `${other.logicalId} for ${wave.region}`,
          principal: other,
          action: 'sts:AssumeRole',
          resource: watcher.arn,
          expect: 'Denied',
        });
      }
    }
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it("lets each router stack read every cell's endpoint service name through that cell's reader role, and nothing else", async () => {
    const routerRoles = world.roles().filter((r) => r.account === fleet.accounts.router && r.stack.startsWith(`${fleet.app}-router-`));
    const calls: Call[] = [];
    const readers: string[] = [];
    for (const cell of fleet.cells) {
      const readerArn = `arn:aws:iam::${cell.account}:role/${cellEndpointReaderRoleName(fleet.app, cell.id)}`;
      const reader = world.role(readerArn);
      const parameter = (id: string, account = cell.account, region = cell.region) =>
        `arn:aws:ssm:${region}:${account}:parameter/${cellEndpointServiceParameter(fleet.app, id).replace(/^\//, '')}`;
      // Which roles of the router account may assume it: the stacks' custom resource must be one.
      const allowed = (await Promise.all(routerRoles.map(async (r) => [r, await world.decide(r, 'sts:AssumeRole', readerArn)] as const)))
        .filter(([, d]) => d === 'Allowed')
        .map(([r]) => r);
      if (allowed.length === 0) readers.push(`${cell.id}: no role of the router stacks may assume ${readerArn}`);
      readers.push(
        ...allowed
          .filter((r) => /TaskRole|ExecutionRole/.test(r.logicalId))
          .map((r) => `${cell.id}: the router task role ${r.name} may assume ${readerArn}`),
      );
      const other = fleet.cells.find((c) => c.account !== cell.account)!;
      calls.push(
        { who: `${cell.id} reader`, principal: reader, action: 'ssm:GetParameter', resource: parameter(cell.id), expect: 'Allowed' },
        { who: `${cell.id} reader`, principal: reader, action: 'ssm:PutParameter', resource: parameter(cell.id), expect: 'Denied' },
        {
          who: `${cell.id} reader`,
          principal: reader,
          action: 'ssm:GetParameter',
          resource: parameter(other.id, other.account, other.region),
          expect: 'Denied',
        },
        {
          who: `${cell.id} reader`,
          principal: reader,
          action: 'secretsmanager:GetSecretValue',
          resource: world.resourcesOf('AWS::SecretsManager::Secret').find((x) => x.stack.account === cell.account)!.arn,
          expect: 'Denied',
        },
        {
          who: `another cell's account, for ${cell.id}`,
          principal: outsider(`arn:aws:iam::${other.account}:role/${fleet.app}-router-x`, [
            { Effect: 'Allow', Action: 'sts:AssumeRole', Resource: '*' },
          ]),
          action: 'sts:AssumeRole',
          resource: readerArn,
          expect: 'Denied',
        },
      );
    }
    expect(readers).toEqual([]);
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it("lets an operator of the router account read each cell's signals through that cell's metrics reader role, and the reader nothing else", async () => {
    // The operator's own identity (docs/capacity.md): sts:AssumeRole on the readers, nothing in the cells.
    const operator = outsider(`arn:aws:iam::${fleet.accounts.router}:role/capacity-operator`, [
      { Effect: 'Allow', Action: 'sts:AssumeRole', Resource: `arn:aws:iam::*:role/${fleet.app}-*-metrics-reader` },
    ]);
    const calls: Call[] = [];
    for (const cell of fleet.cells) {
      const readerArn = `arn:aws:iam::${cell.account}:role/${cellMetricsReaderRoleName(fleet.app, cell.id)}`;
      const reader = world.role(readerArn);
      const parameter = (id: string, account = cell.account, region = cell.region) =>
        `arn:aws:ssm:${region}:${account}:parameter/${cellSignalsParameter(fleet.app, id).replace(/^\//, '')}`;
      const other = fleet.cells.find((c) => c.account !== cell.account)!;
      calls.push(
        { who: 'router-account operator', principal: operator, action: 'sts:AssumeRole', resource: readerArn, expect: 'Allowed' },
        { who: `${cell.id} metrics reader`, principal: reader, action: 'ssm:GetParameter', resource: parameter(cell.id), expect: 'Allowed' },
        { who: `${cell.id} metrics reader`, principal: reader, action: 'cloudwatch:GetMetricData', resource: '*', expect: 'Allowed' },
        { who: `${cell.id} metrics reader`, principal: reader, action: 'ssm:PutParameter', resource: parameter(cell.id), expect: 'Denied' },
        {
          who: `${cell.id} metrics reader`,
          principal: reader,
          action: 'ssm:GetParameter',
          resource: parameter(other.id, other.account, other.region),
          expect: 'Denied',
        },
        {
          who: `${cell.id} metrics reader`,
          principal: reader,
          action: 'ssm:GetParameter',
          resource: `arn:aws:ssm:${cell.region}:${cell.account}:parameter/${cellEndpointServiceParameter(fleet.app, cell.id).replace(/^\//, '')}`,
          expect: 'Denied',
        },
        { who: `${cell.id} metrics reader`, principal: reader, action: 'cloudwatch:PutMetricData', resource: '*', expect: 'Denied' },
        { who: `${cell.id} metrics reader`, principal: reader, action: 'cloudwatch:DescribeAlarms', resource: '*', expect: 'Denied' },
        {
          who: `${cell.id} metrics reader`,
          principal: reader,
          action: 'secretsmanager:GetSecretValue',
          resource: world.resourcesOf('AWS::SecretsManager::Secret').find((x) => x.stack.account === cell.account)!.arn,
          expect: 'Denied',
        },
        {
          who: `another cell's account, for ${cell.id}`,
          principal: outsider(`arn:aws:iam::${other.account}:role/capacity-operator`, [{ Effect: 'Allow', Action: 'sts:AssumeRole', Resource: '*' }]),
          action: 'sts:AssumeRole',
          resource: readerArn,
          expect: 'Denied',
        },
        {
          who: `the tooling account, for ${cell.id}`,
          principal: outsider(`arn:aws:iam::${fleet.accounts.tooling}:role/capacity-operator`, [
            { Effect: 'Allow', Action: 'sts:AssumeRole', Resource: '*' },
          ]),
          action: 'sts:AssumeRole',
          resource: readerArn,
          expect: 'Denied',
        },
      );
    }
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it("lets an operator of the router account fail each cell's database writer over through that cell's writer-failover role, and the role nothing else", async () => {
    // The calls of lib/adapters/aws/writer-failover.ts (zone drain --failover-writers), as the operator's assumed role.
    const operator = outsider(`arn:aws:iam::${fleet.accounts.router}:role/zone-operator`, [
      { Effect: 'Allow', Action: 'sts:AssumeRole', Resource: `arn:aws:iam::*:role/${fleet.app}-*-db-failover` },
    ]);
    const calls: Call[] = [];
    for (const cell of fleet.cells) {
      const roleArn = `arn:aws:iam::${cell.account}:role/${cellWriterFailoverRoleName(fleet.app, cell.id)}`;
      const role = world.role(roleArn);
      const who = `${cell.id} writer failover`;
      const rds = (kind: 'cluster' | 'db', logicalId: string, account = cell.account) => `arn:aws:rds:${cell.region}:${account}:${kind}:${logicalId}`;
      const mine = <T extends { stack: { account: string } }>(list: T[], account = cell.account) => list.filter((x) => x.stack.account === account);
      const clusters = mine(world.resourcesOf('AWS::RDS::DBCluster'));
      const instances = mine(world.resourcesOf('AWS::RDS::DBInstance'));
      const other = fleet.cells.find((c) => c.account !== cell.account && c.shapeName === cell.shapeName)!;
      const otherInstance = mine(world.resourcesOf('AWS::RDS::DBInstance'), other.account)[0];
      calls.push(
        { who: 'router-account operator', principal: operator, action: 'sts:AssumeRole', resource: roleArn, expect: 'Allowed' },
        {
          who,
          principal: role,
          action: 'ssm:GetParameter',
          resource: `arn:aws:ssm:${cell.region}:${cell.account}:parameter/${cellSignalsParameter(fleet.app, cell.id).replace(/^\//, '')}`,
          expect: 'Allowed',
        },
        { who, principal: role, action: 'ec2:DescribeAvailabilityZones', resource: '*', expect: 'Allowed' },
        ...instances.map((i) => ({
          who,
          principal: role,
          action: 'rds:DescribeDBInstances',
          resource: rds('db', i.logicalId),
          expect: 'Allowed' as Decision,
        })),
        { who, principal: role, action: 'rds:DescribeDBInstances', resource: rds('db', otherInstance.logicalId, other.account), expect: 'Denied' },
        { who, principal: role, action: 'rds:DeleteDBInstance', resource: rds('db', instances[0].logicalId), expect: 'Denied' },
        { who, principal: role, action: 'rds:ModifyDBInstance', resource: rds('db', instances[0].logicalId), expect: 'Denied' },
        { who, principal: role, action: 'ec2:TerminateInstances', resource: '*', expect: 'Denied' },
      );
      if (clusters.length > 0) {
        const cluster = rds('cluster', clusters[0].logicalId);
        calls.push(
          { who, principal: role, action: 'rds:DescribeDBClusters', resource: cluster, expect: 'Allowed' },
          { who, principal: role, action: 'rds:FailoverDBCluster', resource: cluster, expect: 'Allowed' },
          // Its target, the reader it promotes (the action's optional `db` resource).
          ...instances.map((i) => ({
            who,
            principal: role,
            action: 'rds:FailoverDBCluster',
            resource: rds('db', i.logicalId),
            expect: 'Allowed' as Decision,
          })),
          { who, principal: role, action: 'rds:DeleteDBCluster', resource: cluster, expect: 'Denied' },
          { who, principal: role, action: 'rds:RebootDBInstance', resource: rds('db', instances[0].logicalId), expect: 'Denied' },
        );
      } else {
        calls.push({ who, principal: role, action: 'rds:RebootDBInstance', resource: rds('db', instances[0].logicalId), expect: 'Allowed' });
      }
      calls.push({
        who: `another cell's account, for ${cell.id}`,
        principal: outsider(`arn:aws:iam::${other.account}:role/zone-operator`, [{ Effect: 'Allow', Action: 'sts:AssumeRole', Resource: '*' }]),
        action: 'sts:AssumeRole',
        resource: roleArn,
        expect: 'Denied',
      });
    }
    expect(await mismatches(world, calls)).toEqual([]);
  });

  // The bake step reads each cell's composite health alarm, and DescribeAlarms returns
  // composite alarms only when cloudwatch:DescribeAlarms is not scoped to alarm ARNs (API reference,
  // DescribeAlarms). The watcher role is scoped to its one alarm, so every bake reports "not found".
  // Fixed: the watcher role allows cloudwatch:DescribeAlarms on `*` (lib/constructs/shared/bake-access.ts).
  it('gives each bake-watcher role DescribeAlarms unscoped, as composite alarms need', async () => {
    const calls: Call[] = fleet.cells.map((c) => ({
      who: `${c.id} bake-watcher`,
      principal: world.role(`arn:aws:iam::${c.account}:role/${bakeWatcherRoleName(fleet.app, c.id)}`),
      action: 'cloudwatch:DescribeAlarms',
      // Allowed on an alarm it was not scoped to means the permission is not scoped to alarms.
      resource: `arn:aws:cloudwatch:${c.region}:${c.account}:alarm:any-other-alarm`,
      expect: 'Allowed',
    }));
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it('deploys every stack through a bootstrapped environment whose roles trust the tooling account, and no other account', async () => {
    const toolingRoles = world.roles().filter((r) => r.account === fleet.accounts.tooling && !r.name.startsWith('cdk-'));
    const calls: Call[] = [];
    const missing: string[] = [];
    for (const stack of stackNames) {
      for (const kind of stack.account === fleet.accounts.tooling ? ['deploy'] : ['deploy', 'file-publishing', 'image-publishing']) {
        // The support stacks of other regions use the pipeline region's roles (bootstrapless).
        const region = stack.account === fleet.accounts.tooling ? fleet.pipeline!.region : stack.region;
        const arn = `arn:aws:iam::${stack.account}:role/cdk-hnb659fds-${kind}-role-${stack.account}-${region}`;
        if (!world.hasRole(arn)) {
          missing.push(`${stack.name}: ${arn} (not bootstrapped)`);
          continue;
        }
        if (stack.account === fleet.accounts.tooling) continue;
        const who = `${stack.name} ${kind}`;
        // Some role of the pipeline may assume it (CodePipeline for deploys, the asset steps for publishing).
        const allowed = await Promise.all(toolingRoles.map((r) => world.decide(r, 'sts:AssumeRole', arn)));
        if (kind === 'deploy' && !allowed.includes('Allowed')) missing.push(`${who}: no pipeline role may assume ${arn}`);
        const otherCell = fleet.cells.find((c) => c.account !== stack.account)!.account;
        calls.push({
          who: `${who}, from another cell's account`,
          principal: outsider(`arn:aws:iam::${otherCell}:role/Admin`, [{ Effect: 'Allow', Action: 'sts:AssumeRole', Resource: '*' }]),
          action: 'sts:AssumeRole',
          resource: arn,
          expect: 'Denied',
        });
        calls.push({
          who: `${who}, from the tooling account`,
          principal: outsider(`arn:aws:iam::${fleet.accounts.tooling}:role/Any`, [{ Effect: 'Allow', Action: 'sts:AssumeRole', Resource: '*' }]),
          action: 'sts:AssumeRole',
          resource: arn,
          expect: 'Allowed',
        });
      }
    }
    expect(missing).toEqual([]);
    // Each environment's publishing roles: the asset steps' roles may assume them (granted by pattern
    // in the organization, lib/constructs/pipeline/bootstrap-grants.ts).
    const files = toolingRoles.find((r) => /AssetsFileRole/.test(r.logicalId))!;
    const pipelineRole = toolingRoles.find((r) => /^PipelineRole[0-9A-F]{8}$/.test(r.logicalId))!;
    for (const cell of fleet.cells) {
      calls.push({
        who: `${cell.id} deploy, by the pipeline role`,
        principal: pipelineRole,
        action: 'sts:AssumeRole',
        resource: `arn:aws:iam::${cell.account}:role/cdk-hnb659fds-deploy-role-${cell.account}-${cell.region}`,
        expect: 'Allowed',
      });
      calls.push({
        who: `${cell.id} files`,
        principal: files,
        action: 'sts:AssumeRole',
        resource: `arn:aws:iam::${cell.account}:role/cdk-hnb659fds-file-publishing-role-${cell.account}-${cell.region}`,
        expect: 'Allowed',
      });
    }
    // The router stacks' images: the pipeline's asset step publishes them with the router account's image-publishing role.
    const images = toolingRoles.find((r) => /AssetsDocker/.test(r.logicalId));
    for (const region of Object.keys(fleet.regions)) {
      calls.push({
        who: `images for ${region}`,
        principal: images!,
        action: 'sts:AssumeRole',
        resource: `arn:aws:iam::${fleet.accounts.router}:role/cdk-hnb659fds-image-publishing-role-${fleet.accounts.router}-${region}`,
        expect: 'Allowed',
      });
    }
    expect(await mismatches(world, calls)).toEqual([]);
  });

  // The pipeline's roles name the bootstrap roles by pattern, not every environment's role ARN; the
  // organization condition is what keeps them inside the fleet.
  it("keeps the pipeline's bootstrap-role patterns inside the organization and on the bootstrap roles the pipeline uses", async () => {
    const toolingRoles = world.roles().filter((r) => r.account === fleet.accounts.tooling && !r.name.startsWith('cdk-'));
    const pipelineRole = toolingRoles.find((r) => /^PipelineRole[0-9A-F]{8}$/.test(r.logicalId))!;
    const files = toolingRoles.find((r) => /AssetsFileRole/.test(r.logicalId))!;
    const images = toolingRoles.find((r) => /AssetsDockerRole/.test(r.logicalId))!;
    const cell = fleet.cells[0];
    const bootstrapRole = (account: string, kind: string, region = 'eu-west-1') =>
      `arn:aws:iam::${account}:role/cdk-hnb659fds-${kind}-role-${account}-${region}`;
    // A role that trusts the tooling account, so only the caller's identity policy decides.
    const trustsTooling = {
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${fleet.accounts.tooling}:root` }, Action: 'sts:AssumeRole' }],
    };
    const calls: Call[] = [
      // An account outside the organization, bootstrapped trusting the tooling account: its roles match the patterns, the condition refuses them.
      {
        who: 'outsider deploy role',
        principal: pipelineRole,
        action: 'sts:AssumeRole',
        resource: bootstrapRole(OUTSIDER, 'deploy'),
        expect: 'Denied',
      },
      {
        who: 'outsider file-publishing role',
        principal: files,
        action: 'sts:AssumeRole',
        resource: bootstrapRole(OUTSIDER, 'file-publishing'),
        expect: 'Denied',
      },
      {
        who: 'outsider image-publishing role',
        principal: images,
        action: 'sts:AssumeRole',
        resource: bootstrapRole(OUTSIDER, 'image-publishing'),
        expect: 'Denied',
      },
    ];
    const decided: string[] = await mismatches(world, calls);
    // Inside the organization: only the kind of bootstrap role each role uses, and no other role of a cell.
    for (const [who, principal, arn] of [
      ['pipeline role, cfn-exec role', pipelineRole, bootstrapRole(cell.account, 'cfn-exec', cell.region)],
      ['pipeline role, lookup role', pipelineRole, bootstrapRole(cell.account, 'lookup', cell.region)],
      ['pipeline role, file-publishing role', pipelineRole, bootstrapRole(cell.account, 'file-publishing', cell.region)],
      ['file role, deploy role', files, bootstrapRole(cell.account, 'deploy', cell.region)],
      ['image role, deploy role', images, bootstrapRole(cell.account, 'deploy', cell.region)],
      ['pipeline role, a region the fleet does not use', pipelineRole, bootstrapRole(cell.account, 'deploy', 'ap-southeast-2')],
      ["pipeline role, the cell's bake watcher", pipelineRole, `arn:aws:iam::${cell.account}:role/${bakeWatcherRoleName(fleet.app, cell.id)}`],
    ] as const) {
      const got = await world.decide(principal, 'sts:AssumeRole', arn, {}, trustsTooling);
      if (got === 'Allowed') decided.push(`${who}: ${arn} -> Allowed, expected Denied`);
    }
    // The same pattern in an organization member account is allowed: the condition, not the name, refused the outsider.
    const member = await world.decide(pipelineRole, 'sts:AssumeRole', bootstrapRole(cell.account, 'deploy', cell.region), {}, trustsTooling);
    expect(decided).toEqual([]);
    expect(member).toBe('Allowed');
  });

  it("lets nothing in one cell's account touch another cell's resources, nor the routers' task roles touch a cell", async () => {
    const touches: Record<string, string> = {
      'AWS::SecretsManager::Secret': 'secretsmanager:GetSecretValue',
      'AWS::SQS::Queue': 'sqs:SendMessage',
      'AWS::KMS::Key': 'kms:Decrypt',
      'AWS::S3::Bucket': 's3:ListBucket',
      'AWS::SNS::Topic': 'sns:Publish',
      'AWS::CloudWatch::CompositeAlarm': 'cloudwatch:DescribeAlarms',
      'AWS::Logs::LogGroup': 'logs:PutLogEvents',
    };
    const cellStack = (id: string) => `${fleet.app}-cell-${id}`;
    const rolesOf = (stack: string) => world.roles().filter((r) => r.stack === stack);
    const resourcesOf = (stack: string) =>
      Object.entries(touches).flatMap(([type, action]) =>
        world
          .resourcesOf(type)
          .filter((r) => r.stack.stackName === stack)
          .map((r) => ({ arn: r.arn, action })),
      );
    // Pairs across and within regions, both directions.
    const ids = fleet.cells.map((c) => c.id);
    const pairs = [
      [ids[0], ids[1]],
      [ids[1], ids[0]],
      [ids[1], ids[ids.length - 1]],
      [ids[ids.length - 1], ids[0]],
    ];
    const calls: Call[] = [];
    for (const [from, to] of pairs) {
      const targets = resourcesOf(cellStack(to));
      expect(targets.length).toBeGreaterThan(5);
      for (const role of rolesOf(cellStack(from))) {
        for (const target of targets)
          calls.push({ who: `${role.name}`, principal: role, action: target.action, resource: target.arn, expect: 'Denied' });
      }
    }
    for (const agent of agents) {
      for (const target of resourcesOf(cellStack(ids[0])))
        calls.push({ who: agent.role.name, principal: agent.role, action: target.action, resource: target.arn, expect: 'Denied' });
    }
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it('creates every IAM role name once per account and every bucket name once, so no deploy fails on "already exists"', () => {
    const seen = new Map<string, string>();
    const clashes: string[] = [];
    for (const role of world.roles()) {
      const key = `role ${role.account}/${role.name}`;
      if (seen.has(key)) clashes.push(`${key} in ${seen.get(key)} and ${role.stack}`);
      seen.set(key, role.stack);
    }
    for (const bucket of world.resourcesOf('AWS::S3::Bucket')) {
      const key = `bucket ${bucket.name}`;
      if (seen.has(key)) clashes.push(`${key} in ${seen.get(key)} and ${bucket.stack.stackName}`);
      seen.set(key, bucket.stack.stackName);
    }
    expect(clashes).toEqual([]);
  });
});
