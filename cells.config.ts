import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import { defineFleet } from './lib/domain/fleet';

/**
 * The example fleet: two regions, one canary cell and seven regular cells.
 * Cell accounts live in cells.accounts.json (written by `cellctl accounts ensure`);
 * the ids shipped there are examples so `npx cdk synth` works offline.
 */
export default defineFleet({
  app: 'orders',
  partitionKey: { source: 'header', name: 'x-tenant-id' },
  bucketCount: 16384,
  accounts: {
    tooling: '111111111111',
    router: '222222222222',
  },
  regions: {
    // AZ IDs, the same physical zones in every account (names like us-east-1a are not).
    'eu-west-1': { availabilityZones: ['euw1-az1', 'euw1-az2', 'euw1-az3'] },
    'us-east-1': { availabilityZones: ['use1-az1', 'use1-az2', 'use1-az4'] },
  },
  workload: {
    // The reference workload (images/workload), built from this repository; or a registry image.
    image: 'asset:images/workload/Dockerfile',
    containerPort: 8080,
    healthCheckPath: '/healthz',
    databasePort: 5433,
  },
  shapes: {
    standard: {
      compute: 'fargate',
      cpu: 1024,
      memoryMiB: 2048,
      capacity: { min: 2, desired: 3, max: 12 },
      database: { engine: 'aurora-postgresql', instanceClass: 'r6g.large', backupRetentionDays: 14 },
      limits: { requestsPerSecond: 2000, maxTenants: 500, tenantRequestsPer5Min: 60000 },
    },
    small: {
      compute: 'ec2',
      cpu: 1024,
      memoryMiB: 1536,
      instanceType: 't3.medium',
      capacity: { min: 2, desired: 2, max: 6 },
      database: { engine: 'rds-postgresql', instanceClass: 't4g.medium', allocatedStorageGiB: 100, backupRetentionDays: 7 },
      limits: { requestsPerSecond: 500, maxTenants: 100, tenantRequestsPer5Min: 15000 },
    },
  },
  cells: [
    { id: 'canary-eu', region: 'eu-west-1', cidr: '10.0.0.0/20', shape: 'standard', canary: true },
    { id: 'eu-1', region: 'eu-west-1', cidr: '10.0.16.0/20', shape: 'standard' },
    { id: 'eu-2', region: 'eu-west-1', cidr: '10.0.32.0/20', shape: 'standard' },
    { id: 'eu-3', region: 'eu-west-1', cidr: '10.0.48.0/20', shape: 'small' },
    { id: 'us-1', region: 'us-east-1', cidr: '10.1.0.0/20', shape: 'standard' },
    { id: 'us-2', region: 'us-east-1', cidr: '10.1.16.0/20', shape: 'standard' },
    { id: 'us-3', region: 'us-east-1', cidr: '10.1.32.0/20', shape: 'standard' },
    { id: 'us-4', region: 'us-east-1', cidr: '10.1.48.0/20', shape: 'small' },
  ],
  waves: {
    singleCellWaves: 2,
    growthFactor: 2,
    maxCellsPerWave: 10,
    bakeSeconds: { canary: 3600, single: 1800, group: 900 },
  },
  alarms: {
    errorRatePercent: 2,
    p99LatencyMs: 1500,
  },
  organization: {
    accountEmail: 'aws+{app}-{cell}@example.com',
    organizationalUnitId: 'ou-ab12-cells001',
    roleName: 'OrganizationAccountAccessRole',
  },
  pipeline: {
    source: {
      kind: 'connection',
      connectionArn: 'arn:aws:codeconnections:eu-west-1:111111111111:connection/00000000-0000-0000-0000-000000000000',
      repository: 'example-org/orders-cells',
      branch: 'main',
    },
    manualApproval: true,
    // The pipeline assumes the CDK bootstrap roles of this organization's accounts by name pattern.
    organizationId: 'o-a1b2c3d4e5',
    deploymentWindow: { cron: '* * 8-16 ? * MON-THU *', timeZone: 'UTC' },
  },
  // The fleet's own resources in every cell: an idempotency-key table the workload reads and writes,
  // encrypted with the cell's key, its throttling part of the cell's health.
  cellResources: (cell) => {
    const table = new dynamodb.Table(cell.scope, 'IdempotencyKeys', {
      partitionKey: { name: 'tenant_id', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'key', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: cell.encryptionKey,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // Keys expire a day after they were written (an epoch-seconds attribute): a move leaves a
      // tenant's recent keys behind in the source cell, nothing more.
      timeToLiveAttribute: 'expires_at',
    });
    // Exactly what the workload does (the table's grantReadWriteData adds kms:ReEncrypt* and
    // kms:GenerateDataKey*, wildcards AwsSolutions-IAM5 flags); the key only through DynamoDB.
    cell.workloadRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:Query'],
        resources: [table.tableArn],
      }),
    );
    cell.workloadRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey', 'kms:DescribeKey'],
        resources: [cell.encryptionKey.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${Stack.of(cell.scope).region}.amazonaws.com` } },
      }),
    );
    cell.addWorkloadEnvironment('IDEMPOTENCY_TABLE', table.tableName);
    const minute = Duration.minutes(1);
    const throttles = new cloudwatch.Alarm(cell.scope, 'IdempotencyThrottles', {
      alarmName: `${cell.namePrefix}-idempotency-throttles`,
      alarmDescription: `${cell.namePrefix}: idempotency-key table throttled >= 10 requests a minute for 3 minutes`,
      metric: new cloudwatch.MathExpression({
        expression: 'reads + writes',
        usingMetrics: {
          reads: table.metric('ReadThrottleEvents', { statistic: 'Sum', period: minute }),
          writes: table.metric('WriteThrottleEvents', { statistic: 'Sum', period: minute }),
        },
        label: 'throttled requests',
        period: minute,
      }),
      threshold: 10,
      evaluationPeriods: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    // Pages on-call on ALARM and OK, as every alarm of the cell does.
    throttles.addAlarmAction(new cloudwatchActions.SnsAction(cell.alarmTopic));
    throttles.addOkAction(new cloudwatchActions.SnsAction(cell.alarmTopic));
    cell.addAlarm(throttles);
  },
  router: {
    // Holds the publisher and move operator roles and the move bucket; set once, never by region order.
    homeRegion: 'eu-west-1',
    groups: [
      { name: 'canary', tasks: 2 },
      { name: 'main', tasks: 6 },
    ],
    publishBakeSeconds: 300,
    // Per router task: 200 requests in flight to one cell, more wait up to 1 s, then 503 + Retry-After.
    cellMaxConn: 200,
    queueTimeoutMs: 1000,
  },
});
