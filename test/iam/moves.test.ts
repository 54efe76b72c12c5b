import { addFleet } from '../../lib/app';
import { Fleet } from '../../lib/domain/fleet';
import { groupKey, versionKey } from '../../lib/adapters/mapping-store';
import { handoffLanePrefix, taskRequestKey, taskResultKey } from '../../lib/domain/names/move-bucket';
import {
  mappingBucketParameter,
  moveBucketParameter,
  moveOperatorRoleName,
  moverLauncherRoleName,
  moverParameter,
  moverTaskRoleName,
  routerClusterParameter,
} from '../../lib/domain/names';
import { servedKey, servedPrefix } from '../../lib/runtime/router/served';
import { cdkApp, smallExampleFleet } from '../support/fleet';
import { Decision, deployedTemplates, outsider, PolicyWorld, RoleView } from '../support/iam';

/**
 * The AWS side of moves against the synthesized policies (the example fleet's cell and router
 * stacks), evaluated by an IAM policy evaluator: every call the mover task, the launcher and the
 * operator make (keys built by lib/domain/names/move-bucket, as the code builds them) is allowed, and the
 * neighbours a cell must not reach are denied.
 */

type Principal = Parameters<PolicyWorld['decide']>[0];
interface Call {
  who: string;
  principal: Principal;
  action: string;
  resource: string;
  context?: Record<string, string>;
  expect: Decision | 'Denied';
}

async function mismatches(world: PolicyWorld, calls: readonly Call[]): Promise<string[]> {
  const wrong: string[] = [];
  for (const call of calls) {
    const got = await world.decide(call.principal, call.action, call.resource, call.context ?? {});
    const ok = call.expect === 'Denied' ? got !== 'Allowed' : got === call.expect;
    if (!ok)
      wrong.push(
        `${call.who}: ${call.action} ${call.resource}${call.context ? ` ${JSON.stringify(call.context)}` : ''} -> ${got}, expected ${call.expect}`,
      );
  }
  return wrong;
}

describe('IAM: moves between AWS cells (mover task, launcher, operator)', () => {
  let fleet: Fleet;
  let world: PolicyWorld;
  let bucket: string;
  let operator: RoleView;
  const obj = (key: string) => `arn:aws:s3:::${bucket}/${key}`;
  const mover = (cell: Fleet['cells'][number]) => world.role(`arn:aws:iam::${cell.account}:role/${moverTaskRoleName(fleet.app, cell.id)}`);
  const launcher = (cell: Fleet['cells'][number]) => world.role(`arn:aws:iam::${cell.account}:role/${moverLauncherRoleName(fleet.app, cell.id)}`);
  const secretOf = (cell: Fleet['cells'][number]) =>
    world.resourcesOf('AWS::SecretsManager::Secret').find((s) => s.stack.account === cell.account)!.arn;
  beforeAll(() => {
    fleet = smallExampleFleet();
    const app = cdkApp();
    addFleet(app, fleet, { audit: false });
    // Every account of the fleet is in the example organization (pipeline.organizationId): the move
    // policies name the cells' roles by pattern bounded by it.
    const members = [fleet.accounts.router, fleet.accounts.tooling, ...fleet.cells.map((c) => c.account)];
    world = new PolicyWorld(deployedTemplates(app.synth()), { id: fleet.pipeline!.organizationId!, accounts: members });
    const buckets = world.resourcesOf('AWS::S3::Bucket').filter((b) => b.name.startsWith(`${fleet.app}-moves-`));
    expect(buckets).toHaveLength(1);
    bucket = buckets[0].name;
    operator = world.role(`arn:aws:iam::${fleet.accounts.router}:role/${moveOperatorRoleName(fleet.app)}`);
  });

  it('keeps the move bucket in the router account', () => {
    expect(world.ownerOf(`arn:aws:s3:::${bucket}`)).toBe(fleet.accounts.router);
  });

  it("lets each cell's mover do exactly its side of a move, in both directions, and nothing of another cell's", async () => {
    const [a, b, c] = [fleet.cells[0], fleet.cells[1], fleet.cells[fleet.cells.length - 1]];
    expect(new Set([a.account, b.account, c.account]).size).toBe(3);
    const calls: Call[] = [];
    for (const [source, target, other] of [
      [a, b, c],
      [b, a, c],
      [c, a, b],
    ]) {
      const lane = handoffLanePrefix('m-20261130-acme-1a2b', { sourceAccount: source.account, targetAccount: target.account });
      const otherLane = handoffLanePrefix('m-20261130-acme-1a2b', { sourceAccount: other.account, targetAccount: target.account });
      const backLane = handoffLanePrefix('m-20261130-acme-1a2b', { sourceAccount: target.account, targetAccount: other.account });
      const s = mover(source);
      const t = mover(target);
      const who = (cell: Fleet['cells'][number]) => `${cell.id} mover (${source.id} -> ${target.id})`;
      calls.push(
        // The source exports (PutObject), the target imports (GetObject); each reads its request and writes its result.
        { who: who(source), principal: s, action: 's3:PutObject', resource: obj(`${lane}clone/items/rows-0.json`), expect: 'Allowed' },
        { who: who(source), principal: s, action: 's3:PutObject', resource: obj(`${lane}clone/manifest.json`), expect: 'Allowed' },
        { who: who(target), principal: t, action: 's3:GetObject', resource: obj(`${lane}clone/items/rows-0.json`), expect: 'Allowed' },
        { who: who(source), principal: s, action: 's3:GetObject', resource: obj(taskRequestKey(source.account, 'r1')), expect: 'Allowed' },
        { who: who(source), principal: s, action: 's3:PutObject', resource: obj(taskResultKey(source.account, 'r1')), expect: 'Allowed' },
        { who: who(source), principal: s, action: 'secretsmanager:GetSecretValue', resource: secretOf(source), expect: 'Allowed' },
        // Neighbours: the target cannot write the source's lane, the source cannot read it back,
        // nobody reads or writes another pair's lane, forges its own requests, or reads another's.
        { who: who(target), principal: t, action: 's3:PutObject', resource: obj(`${lane}clone/items/rows-0.json`), expect: 'Denied' },
        { who: who(source), principal: s, action: 's3:GetObject', resource: obj(`${lane}clone/items/rows-0.json`), expect: 'Denied' },
        { who: who(source), principal: s, action: 's3:PutObject', resource: obj(`${otherLane}clone/items/rows-0.json`), expect: 'Denied' },
        { who: who(source), principal: s, action: 's3:GetObject', resource: obj(`${backLane}clone/items/rows-0.json`), expect: 'Denied' },
        { who: who(source), principal: s, action: 's3:PutObject', resource: obj(taskRequestKey(source.account, 'r1')), expect: 'Denied' },
        { who: who(source), principal: s, action: 's3:GetObject', resource: obj(taskRequestKey(target.account, 'r1')), expect: 'Denied' },
        { who: who(source), principal: s, action: 's3:PutObject', resource: obj(taskResultKey(target.account, 'r1')), expect: 'Denied' },
        { who: who(source), principal: s, action: 's3:GetObject', resource: obj('moves/m-20261130-acme-1a2b/move.json'), expect: 'Denied' },
        { who: who(source), principal: s, action: 's3:DeleteObject', resource: obj(`${lane}clone/items/rows-0.json`), expect: 'Denied' },
        {
          who: who(source),
          principal: s,
          action: 's3:ListBucket',
          resource: `arn:aws:s3:::${bucket}`,
          context: { 's3:prefix': 'handoff/' },
          expect: 'Denied',
        },
        { who: who(source), principal: s, action: 'secretsmanager:GetSecretValue', resource: secretOf(target), expect: 'Denied' },
        {
          who: who(source),
          principal: s,
          action: 's3:PutObject',
          resource: obj(`${lane}clone/items/rows-0.json`),
          context: { 'aws:SecureTransport': 'false' },
          expect: 'ExplicitlyDenied',
        },
      );
      // Another role of the source's own account (the workload's) gets nothing of the bucket.
      const workload = world
        .roles()
        .find((r) => r.account === source.account && r.name !== s.name && /TaskRole/.test(r.logicalId) && !/Mover/.test(r.logicalId));
      if (workload)
        calls.push({
          who: `${source.id} ${workload.logicalId}`,
          principal: workload,
          action: 's3:PutObject',
          resource: obj(`${lane}clone/items/rows-0.json`),
          expect: 'Denied',
        });
    }
    // An account that is not a cell of the fleet, even with a role of the mover's name and s3:* of its own.
    const stranger = outsider(`arn:aws:iam::999999999999:role/${moverTaskRoleName(fleet.app, 'x')}`, [
      { Effect: 'Allow', Action: 's3:*', Resource: '*' },
    ]);
    calls.push({
      who: 'a stranger',
      principal: stranger,
      action: 's3:PutObject',
      resource: obj(`${handoffLanePrefix('m-1', { sourceAccount: '999999999999', targetAccount: a.account })}clone/x/rows-0.json`),
      expect: 'Denied',
    });
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it("lets the launcher run and watch only its cell's mover task, passing only the mover's roles", async () => {
    const calls: Call[] = [];
    for (const cell of fleet.cells.slice(0, 3)) {
      const l = launcher(cell);
      const tasks = world.resourcesOf('AWS::ECS::TaskDefinition').filter((t) => t.stack.account === cell.account);
      const moverTask = tasks.find((t) => t.properties.Family === `${fleet.app}-${cell.id}-mover`)!;
      const cluster = world.resourcesOf('AWS::ECS::Cluster').find((x) => x.stack.account === cell.account && x.logicalId.includes('Mover'))!;
      const taskDefArn = `arn:aws:ecs:${cell.region}:${cell.account}:task-definition/${fleet.app}-${cell.id}-mover:3`;
      const who = `${cell.id} launcher`;
      const executionRole = world.arnOf(
        moverTask.stack.stackName,
        moverTask.stack.template.Resources[moverTask.logicalId].Properties.ExecutionRoleArn,
      );
      const others = world
        .roles()
        .filter((r) => r.account === cell.account && r.arn !== executionRole && r.name !== moverTaskRoleName(fleet.app, cell.id));
      expect(others.length).toBeGreaterThan(3);
      calls.push(
        { who, principal: l, action: 'ecs:RunTask', resource: taskDefArn, context: { 'ecs:cluster': cluster.arn }, expect: 'Allowed' },
        {
          who,
          principal: l,
          action: 'ecs:DescribeTasks',
          resource: `arn:aws:ecs:${cell.region}:${cell.account}:task/${cluster.name}/abc123`,
          expect: 'Allowed',
        },
        {
          who,
          principal: l,
          action: 'ecs:StopTask',
          resource: `arn:aws:ecs:${cell.region}:${cell.account}:task/${cluster.name}/abc123`,
          expect: 'Allowed',
        },
        {
          who,
          principal: l,
          action: 'iam:PassRole',
          resource: mover(cell).arn,
          context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' },
          expect: 'Allowed',
        },
        {
          who,
          principal: l,
          action: 'iam:PassRole',
          resource: executionRole,
          context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' },
          expect: 'Allowed',
        },
        {
          who,
          principal: l,
          action: 'ssm:GetParameter',
          resource: `arn:aws:ssm:${cell.region}:${cell.account}:parameter${moverParameter(fleet.app, cell.id)}`,
          expect: 'Allowed',
        },
        // Neighbours: another task definition, another cluster, other roles, the database secret.
        ...tasks
          .filter((t) => t !== moverTask)
          .map((t) => ({
            who,
            principal: l,
            action: 'ecs:RunTask',
            resource: `arn:aws:ecs:${cell.region}:${cell.account}:task-definition/${t.properties.Family ?? t.logicalId}:1`,
            context: { 'ecs:cluster': cluster.arn },
            expect: 'Denied' as const,
          })),
        {
          who,
          principal: l,
          action: 'ecs:RunTask',
          resource: taskDefArn,
          context: { 'ecs:cluster': `arn:aws:ecs:${cell.region}:${cell.account}:cluster/other` },
          expect: 'Denied',
        },
        {
          who,
          principal: l,
          action: 'ecs:DescribeTasks',
          resource: `arn:aws:ecs:${cell.region}:${cell.account}:task/other/abc123`,
          expect: 'Denied',
        },
        ...others.map((r) => ({
          who,
          principal: l,
          action: 'iam:PassRole',
          resource: r.arn,
          context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' },
          expect: 'Denied' as const,
        })),
        { who, principal: l, action: 'secretsmanager:GetSecretValue', resource: secretOf(cell), expect: 'Denied' },
        { who, principal: l, action: 'ecs:RegisterTaskDefinition', resource: '*', expect: 'Denied' },
      );
    }
    expect(await mismatches(world, calls)).toEqual([]);
  });

  it('lets only the move operator assume the launchers, and the operator do every call of the AWS move path', async () => {
    const calls: Call[] = [];
    const assume = (arn: string): Principal => outsider(arn, [{ Effect: 'Allow', Action: 'sts:AssumeRole', Resource: '*' }]);
    for (const cell of fleet.cells) {
      const l = launcher(cell).arn;
      calls.push(
        { who: 'operator', principal: operator, action: 'sts:AssumeRole', resource: l, expect: 'Allowed' },
        {
          who: 'another role of the router account',
          principal: assume(`arn:aws:iam::${fleet.accounts.router}:role/${fleet.app}-mapping-publisher`),
          action: 'sts:AssumeRole',
          resource: l,
          expect: 'Denied',
        },
        {
          who: 'the tooling account, directly',
          principal: assume(`arn:aws:iam::${fleet.accounts.tooling}:role/Admin`),
          action: 'sts:AssumeRole',
          resource: l,
          expect: 'Denied',
        },
      );
    }
    calls.push(
      {
        who: 'an operator of the tooling account',
        principal: assume(`arn:aws:iam::${fleet.accounts.tooling}:role/Operator`),
        action: 'sts:AssumeRole',
        resource: operator.arn,
        expect: 'Allowed',
      },
      {
        who: 'an operator of the router account',
        principal: assume(`arn:aws:iam::${fleet.accounts.router}:role/Operator`),
        action: 'sts:AssumeRole',
        resource: operator.arn,
        expect: 'Allowed',
      },
      {
        who: 'a cell account',
        principal: assume(`arn:aws:iam::${fleet.cells[0].account}:role/Admin`),
        action: 'sts:AssumeRole',
        resource: operator.arn,
        expect: 'Denied',
      },
    );
    // S3MoveStore, the task requests and results, removing a move's hand-off data.
    const who = 'operator';
    for (const key of [
      'moves/m-1/move.json',
      'moves/m-1/audit/20261130T1-ab.json',
      'moves/.plan-lock',
      taskRequestKey(fleet.cells[0].account, 'r1'),
    ]) {
      calls.push({ who, principal: operator, action: 's3:PutObject', resource: obj(key), expect: 'Allowed' });
      calls.push({ who, principal: operator, action: 's3:GetObject', resource: obj(key), expect: 'Allowed' });
    }
    calls.push(
      { who, principal: operator, action: 's3:GetObject', resource: obj(taskResultKey(fleet.cells[0].account, 'r1')), expect: 'Allowed' },
      { who, principal: operator, action: 's3:DeleteObject', resource: obj('moves/.plan-lock'), expect: 'Allowed' },
      {
        who,
        principal: operator,
        action: 's3:DeleteObject',
        resource: obj(
          `${handoffLanePrefix('m-1', { sourceAccount: fleet.cells[0].account, targetAccount: fleet.cells[1].account })}clone/manifest.json`,
        ),
        expect: 'Allowed',
      },
      ...['moves/', 'moves/m-1/audit/', 'handoff/m-1/'].map((prefix) => ({
        who,
        principal: operator,
        action: 's3:ListBucket',
        resource: `arn:aws:s3:::${bucket}`,
        context: { 's3:prefix': prefix },
        expect: 'Allowed' as const,
      })),
      {
        who,
        principal: operator,
        action: 'ssm:GetParameter',
        resource: `arn:aws:ssm:${Object.keys(fleet.regions)[0]}:${fleet.accounts.router}:parameter${moveBucketParameter(fleet.app)}`,
        expect: 'Allowed',
      },
      // Neighbours: deleting a record, listing the whole bucket, changing the bucket, reading CloudWatch.
      { who, principal: operator, action: 'cloudwatch:GetMetricData', resource: '*', expect: 'Denied' },
      { who, principal: operator, action: 's3:DeleteObject', resource: obj('moves/m-1/move.json'), expect: 'Denied' },
      { who, principal: operator, action: 's3:ListBucket', resource: `arn:aws:s3:::${bucket}`, context: { 's3:prefix': '' }, expect: 'Denied' },
      { who, principal: operator, action: 's3:PutBucketPolicy', resource: `arn:aws:s3:::${bucket}`, expect: 'Denied' },
      { who, principal: operator, action: 'secretsmanager:GetSecretValue', resource: secretOf(fleet.cells[0]), expect: 'Denied' },
      // Whatever its own policy says, nobody else writes a move record or a task request.
      {
        who: 'an administrator of the router account',
        principal: outsider(`arn:aws:iam::${fleet.accounts.router}:role/Admin`, [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }]),
        action: 's3:PutObject',
        resource: obj('moves/m-1/move.json'),
        expect: 'ExplicitlyDenied',
      },
      {
        who: 'an administrator of the router account',
        principal: outsider(`arn:aws:iam::${fleet.accounts.router}:role/Admin`, [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }]),
        action: 's3:PutObject',
        resource: obj(taskRequestKey(fleet.cells[0].account, 'r9')),
        expect: 'ExplicitlyDenied',
      },
    );
    // Freeze, flip, unfreeze: mapping publishes to every region's bucket.
    for (const region of Object.keys(fleet.regions)) {
      const mapping = world
        .resourcesOf('AWS::S3::Bucket')
        .find((x) => x.stack.region === region && x.name.startsWith(fleet.router.mappingBucket))!.name;
      for (const key of [versionKey(7), groupKey(fleet.router.groups[0].name)]) {
        calls.push({ who, principal: operator, action: 's3:PutObject', resource: `arn:aws:s3:::${mapping}/${key}`, expect: 'Allowed' });
        calls.push({ who, principal: operator, action: 's3:GetObject', resource: `arn:aws:s3:::${mapping}/${key}`, expect: 'Allowed' });
      }
      calls.push({
        who,
        principal: operator,
        action: 's3:ListBucket',
        resource: `arn:aws:s3:::${mapping}`,
        context: { 's3:prefix': 'mappings/' },
        expect: 'Allowed',
      });
      // What each router group serves: its tasks' reports (servedReportProbe), read only.
      for (const group of fleet.router.groups.map((g) => g.name)) {
        calls.push({
          who,
          principal: operator,
          action: 's3:ListBucket',
          resource: `arn:aws:s3:::${mapping}`,
          context: { 's3:prefix': servedPrefix(group) },
          expect: 'Allowed',
        });
        calls.push({
          who,
          principal: operator,
          action: 's3:GetObject',
          resource: `arn:aws:s3:::${mapping}/${servedKey(group, 'task-1')}`,
          expect: 'Allowed',
        });
        calls.push({
          who,
          principal: operator,
          action: 's3:PutObject',
          resource: `arn:aws:s3:::${mapping}/${servedKey(group, 'task-1')}`,
          expect: 'Denied',
        });
        calls.push({
          who,
          principal: operator,
          action: 's3:DeleteObject',
          resource: `arn:aws:s3:::${mapping}/${servedKey(group, 'task-1')}`,
          expect: 'Denied',
        });
      }
      calls.push({
        who,
        principal: operator,
        action: 'ssm:GetParameter',
        resource: `arn:aws:ssm:${region}:${fleet.accounts.router}:parameter${mappingBucketParameter(fleet.app)}`,
        expect: 'Allowed',
      });
      // Which router tasks ECS runs (a quiet agent's task is waited for): this account's router clusters only.
      calls.push({
        who,
        principal: operator,
        action: 'ssm:GetParameter',
        resource: `arn:aws:ssm:${region}:${fleet.accounts.router}:parameter${routerClusterParameter(fleet.app)}`,
        expect: 'Allowed',
      });
      calls.push({
        who,
        principal: operator,
        action: 'ecs:ListTasks',
        resource: `arn:aws:ecs:${region}:${fleet.accounts.router}:container-instance/orders-router-${region}/*`,
        context: { 'ecs:cluster': `arn:aws:ecs:${region}:${fleet.accounts.router}:cluster/orders-router-${region}` },
        expect: 'Allowed',
      });
      calls.push({
        who,
        principal: operator,
        action: 'ecs:ListTasks',
        resource: `arn:aws:ecs:${region}:${fleet.cells[0].account}:container-instance/mover/*`,
        context: { 'ecs:cluster': `arn:aws:ecs:${region}:${fleet.cells[0].account}:cluster/mover` },
        expect: 'Denied',
      });
      calls.push({
        who,
        principal: operator,
        action: 'ecs:StopTask',
        resource: `arn:aws:ecs:${region}:${fleet.accounts.router}:task/orders-router-${region}/abc`,
        expect: 'Denied',
      });
    }
    expect(await mismatches(world, calls)).toEqual([]);
  });
});
