import { App } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import {
  addAuditGate, CellStack, cellStackPropsOf, defineFleet, resolveFleet, RouterGroupsStack, routerGroupsStackPropsOf, RouterStack, routerStackPropsOf,
} from 'cell-factory';

// The fleet, in code (or in a cells.config.ts of your own, read with loadFleet): validated, every
// problem listed before any construct is built.
const fleet = resolveFleet(defineFleet({
  app: 'shop',
  accounts: { tooling: '111111111111', router: '222222222222' },
  regions: { 'eu-west-1': { availabilityZones: ['euw1-az1', 'euw1-az2', 'euw1-az3'] } },
  // nginx's official image listens on 80 and answers / with 200.
  workload: { image: 'public.ecr.aws/nginx/nginx:stable', containerPort: 80, healthCheckPath: '/' },
  shapes: {
    standard: {
      compute: 'fargate',
      cpu: 512,
      memoryMiB: 1024,
      capacity: { min: 2, desired: 2, max: 4 },
      database: { engine: 'rds-postgresql', instanceClass: 't4g.medium', allocatedStorageGiB: 20, backupRetentionDays: 7 },
      limits: { requestsPerSecond: 200, maxTenants: 50, tenantRequestsPer5Min: 6000 },
    },
  },
  cells: [
    { id: 'canary', region: 'eu-west-1', cidr: '10.0.0.0/20', shape: 'standard', canary: true, account: '333333333333' },
    { id: 'eu-1', region: 'eu-west-1', cidr: '10.0.16.0/20', shape: 'standard', account: '444444444444' },
  ],
  waves: { singleCellWaves: 1, growthFactor: 2, maxCellsPerWave: 4, bakeSeconds: { canary: 600, single: 600, group: 600 } },
}));

// Your workload: any image that listens on containerPort and answers healthCheckPath.
const image = ecs.ContainerImage.fromRegistry('public.ecr.aws/nginx/nginx:stable');

const app = new App();
// Each cell from its own props (the fleet file's, with your image); the cells deploy before the router.
const cells = fleet.cells.map((cell) => {
  const props = cellStackPropsOf(fleet, cell);
  return new CellStack(app, `cell-${cell.id}`, { ...props, cell: { ...props.cell, workload: { ...props.cell.workload, image } } });
});
// The region's router: its stack (load balancer, links to every cell, mapping bucket), then its
// canary group, then the other groups.
const router = new RouterStack(app, 'router-eu-west-1', routerStackPropsOf(fleet, 'eu-west-1'));
for (const cell of cells) router.addStackDependency(cell);
const canary = new RouterGroupsStack(app, 'router-eu-west-1-canary-group', routerGroupsStackPropsOf(fleet, 'eu-west-1', 'canary'));
canary.addStackDependency(router);
new RouterGroupsStack(app, 'router-eu-west-1-groups', routerGroupsStackPropsOf(fleet, 'eu-west-1', 'rest')).addStackDependency(canary);
// The AwsSolutions and cell-isolation gates: synth fails on any finding not acknowledged.
addAuditGate(app, fleet);
app.synth();
