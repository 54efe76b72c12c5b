import { WorkloadConfigError, workloadConfigFromEnv } from '../../../lib/runtime/workload';

const base = { CELL_ID: 'eu-1', DB_HOST: 'db', DB_NAME: 'cell' };

test('AWS: the secret ARN and the SQS queue, TLS on by default', () => {
  const c = workloadConfigFromEnv({
    ...base,
    DB_PORT: '5433',
    DB_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:1:secret:x',
    QUEUE_URL: 'https://sqs/q',
  });
  expect(c.database).toMatchObject({
    host: 'db',
    port: 5433,
    name: 'cell',
    credentials: { kind: 'secret', secretArn: 'arn:aws:secretsmanager:eu-west-1:1:secret:x' },
    ssl: true,
  });
  expect(c.queue).toEqual({ kind: 'sqs', url: 'https://sqs/q' });
  expect(c.testFaults).toBe(false);
  expect(c.partitionKey).toEqual({ source: 'header', name: 'x-tenant-id' });
});

test('local: user and password, the table queue, the fleet partition key as JSON', () => {
  const c = workloadConfigFromEnv({
    ...base,
    DB_USER: 'u',
    DB_PASSWORD: 'p',
    QUEUE_KIND: 'postgres',
    PARTITION_KEY: '{"source":"header","name":"X-Org"}',
    WORKLOAD_TEST_FAULTS: '1',
  });
  expect(c.database.credentials).toEqual({ kind: 'static', user: 'u', password: 'p' });
  expect(c.database.ssl).toBe(false);
  expect(c.queue).toEqual({ kind: 'postgres' });
  expect(c.partitionKey).toEqual({ source: 'header', name: 'x-org' });
  expect(c.testFaults).toBe(true);
});

test('every problem is listed with its fix', () => {
  let error: WorkloadConfigError | undefined;
  try {
    workloadConfigFromEnv({ PORT: 'x', PARTITION_KEY: 'cookie:a', HEALTH_CHECK_PATH: '/v1/items' });
  } catch (e) {
    error = e as WorkloadConfigError;
  }
  expect(error).toBeInstanceOf(WorkloadConfigError);
  const text = error!.problems.join('\n');
  for (const expected of [
    'CELL_ID is not set',
    'DB_HOST is not set',
    'DB_NAME is not set',
    'PORT=x',
    'PARTITION_KEY=cookie:a',
    'HEALTH_CHECK_PATH=/v1/items',
    'no database credentials',
    'no work queue',
  ]) {
    expect(text).toContain(expected);
  }
});
