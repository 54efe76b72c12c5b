import { Fleet, FleetConfigError, KNOWN_REGIONS, resolveFleet } from '../../../lib/domain/fleet';
import { LIMITS } from '../../../lib/domain/limits';
import * as names from '../../../lib/domain/names';
import { exampleFleet, validInput } from '../../support/fleet';

type Kind = 'role' | 'stack' | 'parameter' | 'bucket prefix' | 'codebuild' | 'alarm' | 'topic' | 'service';

/** Every cross-component name a fleet stamps, with what kind of AWS name it is. */
function fleetNames(fleet: Fleet): { readonly kind: Kind; readonly name: string }[] {
  const { app } = fleet;
  const regions = Object.keys(fleet.regions);
  const groups = fleet.router.groups.map((g) => g.name);
  const out: { kind: Kind; name: string }[] = [];
  const add = (kind: Kind, ...list: string[]) => list.forEach((name) => out.push({ kind, name }));
  add('stack', names.pipelineStackName(app));
  add('codebuild', names.stageProjectName(app, 'bake-wave-10-2'));
  add('role', names.publisherRoleName(app), names.moveOperatorRoleName(app));
  add(
    'parameter',
    names.mappingBucketParameter(app),
    names.routerClusterParameter(app),
    names.moveBucketParameter(app),
    names.routerParameters.taskSubnetIds(app),
    names.routerParameters.taskSecurityGroupId(app),
  );
  add('bucket prefix', names.moveBucketNamePrefix(app, fleet.accounts.router));
  for (const cell of fleet.cells) {
    add('stack', names.cellStackName(app, cell.id));
    add(
      'role',
      names.cellEndpointReaderRoleName(app, cell.id),
      names.bakeWatcherRoleName(app, cell.id),
      names.cellDeletionProtectorRoleName(app, cell.id),
      names.moverTaskRoleName(app, cell.id),
      names.moverLauncherRoleName(app, cell.id),
      names.cellMetricsReaderRoleName(app, cell.id),
      names.cellWriterFailoverRoleName(app, cell.id),
    );
    add('parameter', names.cellEndpointServiceParameter(app, cell.id), names.moverParameter(app, cell.id), names.cellSignalsParameter(app, cell.id));
    add('alarm', names.cellHealthAlarmName(app, cell.id));
  }
  for (const region of regions) {
    add(
      'stack',
      names.routerStackName(app, region),
      names.routerGroupsStackName(app, region, 'canary'),
      names.routerGroupsStackName(app, region, 'rest'),
    );
    add(
      'role',
      names.routerBakeWatcherRoleName(app, region),
      names.routerDeletionProtectorRoleName(app, region),
      names.routerCustomResourceRoleName(app, region),
    );
    add('topic', names.routerAlarmTopicName(app, region));
    for (const group of groups) {
      add('role', names.routerTaskRoleName(app, region, group));
      add('parameter', names.routerParameters.targetGroupArn(app, group));
      add('service', names.routerServiceName(app, region, group));
      add('alarm', names.routerGroupHealthAlarmName(app, region, group));
    }
  }
  return out;
}

/** AWS's limit on each kind of name (IAM, CloudFormation, SSM, S3 with the 13 characters the stack-id suffix adds, CodeBuild, CloudWatch, SNS, ECS). */
const MAX_LENGTH: Record<Kind, number> = {
  role: LIMITS.roleName.value,
  stack: 128,
  parameter: 1011,
  'bucket prefix': 63 - 13,
  codebuild: 255,
  alarm: 255,
  topic: 256,
  service: 255,
};
const PATTERN: Record<Kind, RegExp> = {
  role: /^[\w+=,.@-]+$/,
  stack: /^[A-Za-z][A-Za-z0-9-]*$/,
  parameter: /^(\/[a-zA-Z0-9_.-]+)+$/,
  'bucket prefix': /^[a-z0-9][a-z0-9-]*$/,
  codebuild: /^[A-Za-z0-9][A-Za-z0-9_-]*$/,
  alarm: /^[^\s]+$/,
  topic: /^[A-Za-z0-9_-]+$/,
  service: /^[A-Za-z0-9_-]+$/,
};

function overLimit(fleet: Fleet): string[] {
  return fleetNames(fleet).flatMap(({ kind, name }) =>
    name.length > MAX_LENGTH[kind] || !PATTERN[kind].test(name) ? [`${kind} ${name} (${name.length})`] : [],
  );
}

const LONG_APP = 'a2345678901234567890z';
const LONGEST_REGION = Object.keys(KNOWN_REGIONS).sort((a, b) => b.length - a.length)[0];
const LONGEST_GROUP = 'g'.repeat(31);

/** The example fleet under a 21-character app with the longest cell id validation accepts for it, a long group and the longest region's name. */
function longestFleet(): Fleet {
  const base = validInput();
  const canary = base.cells.find((c) => c.canary)!;
  for (let length = 31; length >= 2; length--) {
    const id = `c${'x'.repeat(length - 1)}`;
    try {
      const fleet = resolveFleet({
        ...base,
        app: LONG_APP,
        cells: base.cells.map((c) => (c === canary ? { ...c, id } : c)),
        router: { ...base.router, groups: [{ ...base.router!.groups![0], name: LONGEST_GROUP }, ...base.router!.groups!.slice(1)] },
      });
      return fleet;
    } catch (error) {
      if (!(error instanceof FleetConfigError) || !/its role/.test(error.message)) throw error;
    }
  }
  throw new Error('no cell id length was accepted');
}

describe('cross-component names', () => {
  it('stamps names within AWS limits for the example fleet', () => {
    const fleet = exampleFleet();
    expect(fleetNames(fleet).length).toBeGreaterThan(50);
    expect(overLimit(fleet)).toEqual([]);
  });

  it('stamps names within AWS limits for the longest app, cell id, group and region validation accepts', () => {
    const fleet = longestFleet();
    expect(fleet.app).toHaveLength(21);
    // Validation bounds `app` and a cell id together by the longest cell role: the accepted id is as long as that allows.
    const longestCell = fleet.cells.find((c) => c.canary)!.id;
    const cellRoles = [names.moverLauncherRoleName(LONG_APP, longestCell), names.bakeWatcherRoleName(LONG_APP, longestCell)];
    expect(Math.max(...cellRoles.map((r) => r.length))).toBe(LIMITS.roleName.value);
    const regional = { ...fleet, regions: { [LONGEST_REGION]: Object.values(fleet.regions)[0] } };
    expect(overLimit(regional)).toEqual([]);
    expect(overLimit(fleet)).toEqual([]);
  });

  it("shortens a router task role that would pass IAM's limit, keeping regions and groups apart", () => {
    const a = names.routerTaskRoleName(LONG_APP, LONGEST_REGION, LONGEST_GROUP);
    const b = names.routerTaskRoleName(LONG_APP, LONGEST_REGION, `${LONGEST_GROUP.slice(1)}h`);
    expect(a).toMatch(new RegExp(`^${LONG_APP}-router-task-[0-9a-f]{16}$`));
    expect(a).not.toBe(b);
    expect(names.routerTaskRoleName('orders', 'eu-west-1', 'main')).toBe('orders-router-eu-west-1-main-task');
  });

  it("keeps the router roles under the prefix the cells' endpoint reader roles trust", () => {
    const roles = [
      names.routerCustomResourceRoleName(LONG_APP, LONGEST_REGION),
      names.routerTaskRoleName(LONG_APP, 'eu-west-1', 'main'),
      names.routerTaskRoleName(LONG_APP, LONGEST_REGION, LONGEST_GROUP),
    ];
    for (const role of roles) expect(role.startsWith(names.routerRolePrefix(LONG_APP))).toBe(true);
  });

  it('refuses a stage step id CodeBuild would refuse', () => {
    expect(() => names.stageProjectName('orders', 'bake wave')).toThrow(/not a CodeBuild project name/);
  });
});
