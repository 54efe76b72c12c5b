import { App } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { cellStackPropsOf, routerStackPropsOf } from './lib/app';
import { CellStack } from './lib/constructs/cell';
import { loadFleet } from './lib/domain/fleet';
import { RouterStack } from './lib/constructs/router';

const app = new App();
new CellStack(app, 'cell-blue-1', {
  env: { account: '123456789012', region: 'eu-west-1' },
  toolingAccount: '111111111111',
  cell: {
    app: 'shop',
    cellId: 'blue-1',
    network: { cidr: '10.20.0.0/20', availabilityZones: ['euw1-az1', 'euw1-az2'] },
    compute: { cpu: 512, memoryMiB: 1024, capacity: { min: 2, desired: 2, max: 6 } },
    workload: { image: ecs.ContainerImage.fromRegistry('public.ecr.aws/nginx/nginx:latest'), containerPort: 80, healthCheckPath: '/' },
    database: { engine: 'rds-postgresql', instanceClass: 't4g.medium' },
    routing: { routerAccount: '210987654321' },
    limits: { requestsPerSecond: 200, tenantRequestsPer5Min: 3000 },
  },
});

const fleet = loadFleet('cells.config.ts');
const eu1 = new CellStack(app, 'cell-eu-1', cellStackPropsOf(fleet, fleet.cells.find((c) => c.id === 'eu-1')!));
const router = new RouterStack(app, 'router-eu-west-1', routerStackPropsOf(fleet, 'eu-west-1'));
router.addStackDependency(eu1); // a router links every cell of the fleet: the cells deploy first
