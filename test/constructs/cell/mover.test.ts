import { AwsSolutionsChecks } from 'cdk-nag';
import { Fleet } from '../../../lib/domain/fleet';
import { BareCell, EC2_CELL, FARGATE_CELL, synthBareCells } from '../../support/cell';
import { exampleFleet } from '../../support/fleet';

type Json = Record<string, any>;

describe('CellMover (in every cell stack)', () => {
  let fleet: Fleet;
  let cells: Record<string, BareCell>;
  const resources = (id: string, type: string): [string, Json][] => Object.entries(cells[id].template.findResources(type));
  const logicalId = (id: string, construct: { node: { defaultChild?: unknown } }) =>
    cells[id].stack.getLogicalId(construct.node.defaultChild as never);
  beforeAll(() => {
    fleet = exampleFleet();
    cells = synthBareCells([FARGATE_CELL, EC2_CELL], fleet);
  });

  it.each([FARGATE_CELL, EC2_CELL])('%s: a task definition run on demand (no service), in its own cluster, with the bundled mover image', (id) => {
    const mover = cells[id].cell.mover;
    const taskId = logicalId(id, mover.taskDefinition);
    const [, task] = resources(id, 'AWS::ECS::TaskDefinition').find(([k]) => k === taskId)!;
    expect(task.Properties.Family).toBe(`orders-${id}-mover`);
    expect(task.Properties.RequiresCompatibilities).toEqual(['FARGATE']);
    const [container] = task.Properties.ContainerDefinitions as Json[];
    expect(container.Name).toBe('Mover');
    expect(container.ReadonlyRootFilesystem).toBe(true);
    expect(container.User).toBe('1000');
    const env = Object.fromEntries((container.Environment as Json[]).map((e) => [e.Name, e.Value]));
    expect(Object.keys(env).sort()).toEqual(['AWS_REGION', 'CELL_ID', 'DB_HOST', 'DB_NAME', 'DB_PORT', 'DB_SECRET_ARN', 'QUEUE_URL']);
    expect(env.CELL_ID).toBe(id);
    // The cell's own work queue, which the mover may only send to (requeue after a flip).
    const queueId = logicalId(id, cells[id].cell.queues.work);
    expect(env.QUEUE_URL).toEqual({ Ref: queueId });
    const taskRoleId = logicalId(id, mover.taskDefinition.taskRole);
    const sends = resources(id, 'AWS::IAM::Policy')
      .filter(([, p]) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: taskRoleId }]))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Json[])
      .filter((st) => JSON.stringify(st.Action).includes('sqs:'));
    expect(sends).toEqual([expect.objectContaining({ Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': [queueId, 'Arn'] } })]);
    expect(JSON.stringify(container)).not.toMatch(/PASSWORD/);
    // No ECS service runs the mover: nothing references its task definition but the launcher's policy.
    const services = resources(id, 'AWS::ECS::Service');
    expect(services.filter(([, s]) => JSON.stringify(s.Properties.TaskDefinition).includes(taskId))).toEqual([]);
    // The image is the mover bundle (an asset of images/mover/Dockerfile), not the workload image.
    const workloadTask = resources(id, 'AWS::ECS::TaskDefinition').find(([k]) => k !== taskId);
    if (workloadTask) expect(JSON.stringify(container.Image)).not.toEqual(JSON.stringify(workloadTask[1].Properties.ContainerDefinitions[0].Image));
    const assets = cells[id].stack.node.findAll().filter((c) => c.node.path.endsWith('/Mover/Image'));
    expect(assets).toHaveLength(1);
  });

  it('lets the mover reach the database port of its cell and nothing open inbound', () => {
    const mover = cells[FARGATE_CELL].cell.mover;
    const sgId = logicalId(FARGATE_CELL, mover.securityGroup);
    const ingress = resources(FARGATE_CELL, 'AWS::EC2::SecurityGroupIngress')
      .map(([, r]) => r.Properties)
      .filter((p) => JSON.stringify(p.SourceSecurityGroupId).includes(sgId));
    expect(ingress).toHaveLength(1);
    // The database's port (the same rule the workload's security group gets).
    const workloadSg = logicalId(FARGATE_CELL, cells[FARGATE_CELL].cell.compute.connections.securityGroups[0] as never);
    const workload = resources(FARGATE_CELL, 'AWS::EC2::SecurityGroupIngress')
      .map(([, r]) => r.Properties)
      .find((p) => JSON.stringify(p.SourceSecurityGroupId).includes(workloadSg))!;
    expect(ingress[0].FromPort).toEqual(workload.FromPort);
    expect(ingress[0].GroupId).toEqual(workload.GroupId);
    const [, sg] = resources(FARGATE_CELL, 'AWS::EC2::SecurityGroup').find(([k]) => k === sgId)!;
    expect(sg.Properties.SecurityGroupIngress).toBeUndefined();
  });

  it('publishes how to run the task for cellctl, readable by the launcher', () => {
    const [, parameter] = resources(FARGATE_CELL, 'AWS::SSM::Parameter').find(([, p]) => p.Properties.Name === `/orders/cell/${FARGATE_CELL}/mover`)!;
    const text = JSON.stringify(parameter.Properties.Value);
    for (const field of ['cluster', 'taskDefinition', 'container', 'subnets', 'securityGroups']) expect(text).toContain(field);
  });

  it("lets only the router account's move operator assume the launcher", () => {
    const mover = cells[FARGATE_CELL].cell.mover;
    const [, role] = resources(FARGATE_CELL, 'AWS::IAM::Role').find(([k]) => k === logicalId(FARGATE_CELL, mover.launcher))!;
    expect(role.Properties.RoleName).toBe(`orders-${FARGATE_CELL}-mover-launcher`);
    const [statement] = role.Properties.AssumeRolePolicyDocument.Statement as Json[];
    expect(JSON.stringify(statement.Principal)).toContain(`:iam::${fleet.accounts.router}:root`);
    expect(JSON.stringify(statement.Condition)).toContain(`:iam::${fleet.accounts.router}:role/orders-move-operator`);
  });

  it.each([FARGATE_CELL, EC2_CELL])('%s: has no unacknowledged AwsSolutions finding', (id) => {
    const report = new AwsSolutionsChecks().validateScope(cells[id].stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`).filter((v) => v.includes('/Mover/')),
    ).toEqual([]);
  });
});
