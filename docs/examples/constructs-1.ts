import { App, CfnOutput, Stack } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { Cell } from './lib/constructs/cell';

const app = new App();
const stack = new Stack(app, 'shop-blue-1', { env: { account: '123456789012', region: 'eu-west-1' } });
const cell = new Cell(stack, 'Cell', {
  app: 'shop',
  cellId: 'blue-1',
  network: { cidr: '10.20.0.0/20', availabilityZones: ['euw1-az1', 'euw1-az2'] },
  compute: { cpu: 512, memoryMiB: 1024, capacity: { min: 2, desired: 2, max: 6 } },
  workload: {
    image: ecs.ContainerImage.fromRegistry('public.ecr.aws/nginx/nginx:latest'),
    // nginx's official image listens on 80 and answers / with 200 (no /ready, no 8080).
    containerPort: 80,
    healthCheckPath: '/',
    environment: { GREETING: 'hello' },
  },
  database: { engine: 'rds-postgresql', instanceClass: 't4g.medium' },
  routing: { routerAccount: '210987654321' },
  limits: { requestsPerSecond: 200, tenantRequestsPer5Min: 3000 },
});
// The building blocks are public: the load balancer, the health alarm, the alarm topic, the task role, ...
new CfnOutput(stack, 'HealthAlarm', { value: cell.alarms.health.alarmName });
app.synth();
