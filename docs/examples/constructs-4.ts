import { App } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { CellStackProps } from './lib/constructs/cell';
import { initialMapping } from './lib/domain/mapping';
import { PipelineStack, RouterStageStacks } from './lib/constructs/pipeline';

const app = new App();
const [tooling, routerAccount, region] = ['111111111111', '210987654321', 'eu-west-1'];
const zones = ['euw1-az1', 'euw1-az2', 'euw1-az3'];
const cells = [{ id: 'blue-1', account: '123456789012', cidr: '10.20.0.0/20' }, { id: 'blue-2', account: '123456789013', cidr: '10.20.16.0/20' }];
const cellStack = (c: (typeof cells)[number]): CellStackProps => ({
  env: { account: c.account, region },
  toolingAccount: tooling,
  cell: {
    app: 'shop', cellId: c.id,
    network: { cidr: c.cidr, availabilityZones: zones },
    compute: { cpu: 512, memoryMiB: 1024, capacity: { min: 2, desired: 2, max: 6 } },
    workload: { image: ecs.ContainerImage.fromRegistry('public.ecr.aws/nginx/nginx:latest'), containerPort: 80, healthCheckPath: '/' },
    database: { engine: 'rds-postgresql', instanceClass: 't4g.medium' },
    routing: { routerAccount },
    limits: { requestsPerSecond: 200, tenantRequestsPer5Min: 3000 },
  },
});
const linked = cells.map((c) => ({ id: c.id, region, account: c.account, port: 80 }));
const groups = {
  app: 'shop', region, account: routerAccount, availabilityZones: zones, stalenessMinutes: 10,
  routing: { partitionKey: { source: 'header' as const, name: 'x-tenant-id' }, bucketCount: 16384, slots: 8, zones: 3, cellMaxConn: 200, cellHealthCheckPath: '/ready' },
};
const routers: RouterStageStacks = {
  router: {
    app: 'shop', region, account: routerAccount, toolingAccount: tooling, availabilityZones: zones, cidr: '10.100.0.0/16',
    groups: [{ name: 'canary', weight: 1 }, { name: 'main', weight: 9 }],
    cells: linked, cellZoneName: 'shop.cells.internal', mappingBucketPrefix: 'shop-mappings', keptMappingVersions: 10, homeOf: [region],
    seedMapping: initialMapping(linked.map((c, i) => ({ id: c.id, state: 'active' as const, canary: i === 0, endpoint: `http://${c.id}.shop.cells.internal` })), 16384, { now: new Date(0).toISOString() }),
  },
  canary: { ...groups, part: 'canary', groups: [{ name: 'canary', tasks: 2 }] },
  rest: { ...groups, part: 'rest', groups: [{ name: 'main', tasks: 3 }] },
};
new PipelineStack(app, 'shop-pipeline', {
  app: 'shop', toolingAccount: tooling, region,
  source: { kind: 'connection', connectionArn: 'arn:aws:codeconnections:eu-west-1:111111111111:connection/example', repository: 'acme/shop-cells', branch: 'main' },
  plan: {
    waves: [
      { name: 'wave-1-canary', kind: 'canary', cells: ['blue-1'], bakeSeconds: 3600 },
      { name: 'wave-2-single', kind: 'single', cells: ['blue-2'], bakeSeconds: 1800 },
    ],
    routerWaves: [
      { name: 'routers-eu-west-1-canary-group', region, part: 'canary', bakeSeconds: 3600 },
      { name: 'routers-eu-west-1', region, part: 'rest', bakeSeconds: 1800 },
    ],
  },
  cellStacks: Object.fromEntries(cells.map((c) => [c.id, cellStack(c)])),
  routers: { [region]: routers },
  manualApproval: true,
  deploymentWindow: { cron: '* * 8-16 ? * MON-THU *' },
});
