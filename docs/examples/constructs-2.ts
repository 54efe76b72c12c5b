import { App } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { CellStack } from './lib/constructs/cell';

const app = new App();
new CellStack(app, 'cell-blue-1', {
  env: { account: '123456789012', region: 'eu-west-1' },
  toolingAccount: '111111111111',
  cell: {
    app: 'shop',
    cellId: 'blue-1',
    network: { cidr: '10.20.0.0/20', availabilityZones: ['euw1-az1', 'euw1-az2'] },
    compute: { cpu: 512, memoryMiB: 1024, capacity: { min: 2, desired: 2, max: 6 } },
    // Your service's directory, holding its Dockerfile: CDK builds and publishes it.
    workload: { image: ecs.ContainerImage.fromAsset('service'), containerPort: 8080, healthCheckPath: '/healthz' },
    database: { engine: 'aurora-postgresql', instanceClass: 'r6g.large' },
    routing: { routerAccount: '210987654321', consumerRegions: ['us-east-1'] },
    limits: { requestsPerSecond: 500, tenantRequestsPer5Min: 3000 },
  },
});
