import { Stack } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { cellPropsOf, cellStackPropsOf, REFERENCE_WORKLOAD_IMAGE, workloadContainerImage } from '../../lib/app';
import { DEFAULT_ALARMS, Fleet } from '../../lib/domain/fleet';
import { EC2_CELL, FARGATE_CELL } from '../support/cell';
import { exampleFleet } from '../support/fleet';

describe('cellPropsOf: the fleet file as cell props', () => {
  let fleet: Fleet;
  beforeAll(() => {
    fleet = exampleFleet();
  });
  const cell = (id: string) => fleet.cells.find((c) => c.id === id)!;

  it("takes the cell's network, shape and certificate, and the fleet's app, routing, alarms and own resources", () => {
    const model = cell(EC2_CELL);
    const props = cellPropsOf(fleet, model);
    expect(props).toMatchObject({
      app: fleet.app,
      cellId: EC2_CELL,
      network: { cidr: model.cidr, availabilityZones: model.availabilityZones },
      compute: { kind: 'ec2', cpu: model.shape.cpu, memoryMiB: model.shape.memoryMiB, capacity: model.shape.capacity },
      database: { engine: 'rds-postgresql', instanceClass: model.shape.database.instanceClass, port: fleet.workload.databasePort },
      limits: { requestsPerSecond: model.shape.limits.requestsPerSecond, tenantRequestsPer5Min: model.shape.limits.tenantRequestsPer5Min },
      alarms: { thresholds: fleet.alarms, targetUtilisation: fleet.capacity.targetUtilisation },
      workload: { containerPort: fleet.workload.containerPort, healthCheckPath: fleet.workload.healthCheckPath },
    });
    expect(props.routing).toEqual({
      routerAccount: fleet.accounts.router,
      consumerRegions: Object.keys(fleet.regions).filter((r) => r !== model.region),
      partitionKey: fleet.partitionKey,
      bucketCount: fleet.bucketCount,
    });
    expect(props.routing.consumerRegions).not.toContain(model.region);
    expect(props.extension).toBe(fleet.cellResources);
    expect(fleet.alarms).not.toBe(DEFAULT_ALARMS);
  });

  it("gives the cell's VPC a NAT gateway per zone unless its shape asks for one (natGateways: 'one')", () => {
    const model = cell(FARGATE_CELL);
    expect(cellPropsOf(fleet, model).network.natGateways).toBe('per-zone');
    const one = { ...model, shape: { ...model.shape, natGateways: 'one' as const } };
    expect(cellPropsOf(fleet, one).network).toMatchObject({ cidr: model.cidr, natGateways: 'one' });
  });

  it("puts the cell stack into the cell's own account and region, with the fleet's tooling account", () => {
    const model = cell(FARGATE_CELL);
    const props = cellStackPropsOf(fleet, model);
    expect(props.env).toEqual({ account: model.account, region: model.region });
    expect(props.toolingAccount).toBe(fleet.accounts.tooling);
    expect(props.description).toBe(`${fleet.app} cell ${FARGATE_CELL} (${model.region}, shape ${model.shapeName})`);
    expect(props.cell.cellId).toBe(FARGATE_CELL);
  });

  it('refuses a cell that is not part of the fleet', () => {
    const stranger = { ...fleet.cells[1], id: 'stranger' };
    expect(() => cellPropsOf(fleet, stranger)).toThrow(/cell `stranger` is not part of fleet `orders`; pass one of fleet.cells/);
  });
});

describe('workloadContainerImage: `workload.image` as a container image', () => {
  it('builds the reference workload from its own image context, and any other Dockerfile of the repository from the root', () => {
    expect(workloadContainerImage(REFERENCE_WORKLOAD_IMAGE)).toBeInstanceOf(ecs.AssetImage);
    expect(workloadContainerImage('asset:images/mover/Dockerfile')).toBeInstanceOf(ecs.AssetImage);
  });

  it('takes anything else as a registry image', () => {
    const image = workloadContainerImage('public.ecr.aws/nginx/nginx:stable');
    expect(image).toBeInstanceOf(ecs.RepositoryImage);
    const task = new ecs.FargateTaskDefinition(new Stack(), 'Task');
    expect(task.addContainer('Workload', { image, memoryLimitMiB: 512 }).imageName).toBe('public.ecr.aws/nginx/nginx:stable');
  });

  it('says which Dockerfile is missing', () => {
    expect(() => workloadContainerImage('asset:images/nothing/Dockerfile')).toThrow(
      /workload.image asset:images\/nothing\/Dockerfile: no images\/nothing\/Dockerfile in the repository/,
    );
  });
});
