import { App } from 'aws-cdk-lib';
import { initialMapping } from './lib/domain/mapping';
import { RouterGroupsStack, RouterStack } from './lib/constructs/router';

const app = new App();
const cells = [{ id: 'blue-1', region: 'eu-west-1', account: '123456789012', port: 80 }];
const router = new RouterStack(app, 'router-eu-west-1', {
  app: 'shop', region: 'eu-west-1', account: '210987654321', toolingAccount: '111111111111',
  availabilityZones: ['euw1-az1', 'euw1-az2', 'euw1-az3'], cidr: '10.100.0.0/16',
  groups: [{ name: 'canary', weight: 1 }, { name: 'main', weight: 9 }],
  cells, cellZoneName: 'shop.cells.internal',
  mappingBucketPrefix: 'shop-mappings', keptMappingVersions: 10,
  seedMapping: initialMapping(cells.map((c) => ({ id: c.id, state: 'active' as const, canary: true, endpoint: `http://${c.id}.shop.cells.internal` })), 16384, { now: '1970-01-01T00:00:00.000Z' }),
  homeOf: ['eu-west-1'],
});
const groups = new RouterGroupsStack(app, 'router-eu-west-1-groups', {
  app: 'shop', region: 'eu-west-1', account: '210987654321', availabilityZones: ['euw1-az1', 'euw1-az2', 'euw1-az3'],
  part: 'rest', groups: [{ name: 'main', tasks: 3 }], stalenessMinutes: 10,
  routing: { partitionKey: { source: 'header', name: 'x-tenant-id' }, bucketCount: 16384, slots: 8, zones: 3, cellMaxConn: 200, cellHealthCheckPath: '/healthz' },
});
groups.addStackDependency(router); // the group stack reads the router stack's SSM parameters at deploy time
