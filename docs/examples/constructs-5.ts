import { App, Validations } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CellStack } from './lib/constructs/cell';

// The sandbox: the account and region of your credentials (`cdk deploy` sets them), its AZ IDs.
const account = process.env.CDK_DEFAULT_ACCOUNT ?? '123456789012';
const region = process.env.CDK_DEFAULT_REGION ?? 'eu-west-1';
const zones = (process.env.SANDBOX_AZ_IDS ?? 'euw1-az1,euw1-az2').split(',');

const app = new App();
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
new CellStack(app, 'sandbox-cell', {
  env: { account, region },
  toolingAccount: account,
  terminationProtection: false,
  cell: {
    app: 'sandbox',
    cellId: 'dev-1',
    network: { cidr: '10.99.0.0/20', availabilityZones: zones },
    compute: { cpu: 256, memoryMiB: 512, capacity: { min: 1, desired: 1, max: 2 } },
    // Your own image: CDK builds this directory's Dockerfile and publishes it to the account's asset repository.
    workload: { image: ecs.ContainerImage.fromAsset('docs/examples/sandbox-service'), containerPort: 8080, healthCheckPath: '/healthz' },
    database: { engine: 'rds-postgresql', instanceClass: 't4g.micro' },
    routing: { routerAccount: account },
    limits: { requestsPerSecond: 50, tenantRequestsPer5Min: 3000 },
  },
});
