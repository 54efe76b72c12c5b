import { DEFAULT_PARTITION_KEY } from '../../domain/fleet/defaults';
import { PartitionKeySource } from '../../domain/fleet/types';

/** Where the workload reads its database password: Secrets Manager (AWS) or the environment (local). */
export type DatabaseCredentialsConfig =
  { readonly kind: 'secret'; readonly secretArn: string } | { readonly kind: 'static'; readonly user: string; readonly password: string };

export type QueueConfig = { readonly kind: 'sqs'; readonly url: string } | { readonly kind: 'postgres' };

/** Everything the reference workload needs, read from its environment (contract 1 of the briefing). */
export interface WorkloadConfig {
  readonly cellId: string;
  readonly port: number;
  /** Listen address. @default '0.0.0.0' */
  readonly host: string;
  readonly healthCheckPath: string;
  readonly partitionKey: PartitionKeySource;
  readonly bucketCount: number;
  readonly database: {
    readonly host: string;
    readonly port: number;
    readonly name: string;
    readonly credentials: DatabaseCredentialsConfig;
    /** TLS to the database (RDS/Aurora); off for the loopback local fleet. */
    readonly ssl: boolean;
    readonly poolSize: number;
    /** Per-statement limit, ms. */
    readonly statementTimeoutMs: number;
  };
  readonly queue: QueueConfig;
  /**
   * Fault hooks for tests and the blast-radius script (a poison request that crashes the process,
   * a slow query). Only with WORKLOAD_TEST_FAULTS=1; never in the image's defaults.
   */
  readonly testFaults: boolean;
  readonly region?: string;
  /** The AZ ID this process serves from (ZONE_ID): every response names it in `x-zone`. @default - no header */
  readonly zone?: string;
}

export class WorkloadConfigError extends Error {
  constructor(public readonly problems: readonly string[]) {
    super(`the workload's environment is not usable:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'WorkloadConfigError';
  }
}

function intIn(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number, problems: string[]): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    problems.push(`${name}=${raw}: give an integer from ${min} to ${max}`);
    return fallback;
  }
  return n;
}

function partitionKeyFrom(raw: string | undefined, problems: string[]): PartitionKeySource {
  if (!raw) return DEFAULT_PARTITION_KEY;
  // Forms: "header:x-tenant-id", "path:1", "host:1", or the fleet's JSON ({"source":"header","name":"..."}).
  try {
    if (raw.trim().startsWith('{')) {
      const parsed = JSON.parse(raw) as PartitionKeySource;
      if (parsed.source === 'header' && typeof parsed.name === 'string' && parsed.name) return { source: 'header', name: parsed.name.toLowerCase() };
      if (parsed.source === 'path' && Number.isInteger(parsed.segment) && parsed.segment >= 1) return parsed;
      if (parsed.source === 'host' && Number.isInteger(parsed.label) && parsed.label >= 1) return parsed;
    } else {
      const [source, value] = raw.split(':', 2);
      if (source === 'header' && value) return { source, name: value.toLowerCase() };
      if ((source === 'path' || source === 'host') && /^[1-9]\d*$/.test(value ?? '')) {
        return source === 'path' ? { source, segment: Number(value) } : { source, label: Number(value) };
      }
    }
  } catch {
    // reported below
  }
  problems.push(`PARTITION_KEY=${raw}: give header:<name>, path:<segment>, host:<label> or the fleet's partitionKey as JSON`);
  return DEFAULT_PARTITION_KEY;
}

/**
 * Reads and checks the environment, listing every problem at once:
 * CELL_ID, ZONE_ID (x-zone on every response), PORT (8080), HEALTH_CHECK_PATH (/healthz), PARTITION_KEY (header:x-tenant-id), BUCKET_COUNT (16384),
 * DB_HOST, DB_PORT (5432), DB_NAME, DB_SECRET_ARN or DB_USER + DB_PASSWORD, DB_SSL (on with a secret),
 * DB_POOL_SIZE (10), DB_STATEMENT_TIMEOUT_MS (5000), QUEUE_URL (SQS) or QUEUE_KIND=postgres, WORKLOAD_TEST_FAULTS.
 */
export function workloadConfigFromEnv(env: NodeJS.ProcessEnv): WorkloadConfig {
  const problems: string[] = [];
  const required = (name: string, hint: string): string => {
    const value = env[name];
    if (!value) problems.push(`${name} is not set: ${hint}`);
    return value ?? '';
  };
  const healthCheckPath = env.HEALTH_CHECK_PATH || '/healthz';
  if (!healthCheckPath.startsWith('/')) problems.push(`HEALTH_CHECK_PATH=${healthCheckPath}: must start with /`);
  if (healthCheckPath.startsWith('/v1/')) problems.push(`HEALTH_CHECK_PATH=${healthCheckPath}: /v1/ is the API; pick another path such as /healthz`);

  let credentials: DatabaseCredentialsConfig;
  if (env.DB_SECRET_ARN) {
    if (env.DB_PASSWORD) problems.push('DB_SECRET_ARN and DB_PASSWORD are both set: give one (the secret in AWS, DB_USER + DB_PASSWORD locally)');
    credentials = { kind: 'secret', secretArn: env.DB_SECRET_ARN };
  } else if (env.DB_USER && env.DB_PASSWORD !== undefined) {
    credentials = { kind: 'static', user: env.DB_USER, password: env.DB_PASSWORD };
  } else {
    problems.push('no database credentials: set DB_SECRET_ARN (a Secrets Manager secret with username and password) or DB_USER and DB_PASSWORD');
    credentials = { kind: 'static', user: '', password: '' };
  }

  let queue: QueueConfig;
  const queueKind = env.QUEUE_KIND || (env.QUEUE_URL ? 'sqs' : '');
  if (queueKind === 'sqs') {
    queue = { kind: 'sqs', url: required('QUEUE_URL', 'the SQS work queue URL (QUEUE_KIND=sqs)') };
  } else if (queueKind === 'postgres') {
    if (env.QUEUE_URL) problems.push('QUEUE_URL is set with QUEUE_KIND=postgres: give one queue');
    queue = { kind: 'postgres' };
  } else {
    problems.push(
      env.QUEUE_KIND
        ? `QUEUE_KIND=${env.QUEUE_KIND}: give sqs or postgres`
        : 'no work queue: set QUEUE_URL (SQS) or QUEUE_KIND=postgres (a table in the cell database, for the local fleet)',
    );
    queue = { kind: 'postgres' };
  }

  const config: WorkloadConfig = {
    cellId: required('CELL_ID', 'the id of the cell this task serves'),
    port: intIn(env, 'PORT', 8080, 0, 65535, problems),
    host: env.HOST || '0.0.0.0',
    healthCheckPath,
    partitionKey: partitionKeyFrom(env.PARTITION_KEY, problems),
    bucketCount: intIn(env, 'BUCKET_COUNT', 16384, 1, 1 << 20, problems),
    database: {
      host: required('DB_HOST', 'the database endpoint'),
      port: intIn(env, 'DB_PORT', 5432, 1, 65535, problems),
      name: required('DB_NAME', 'the database name'),
      credentials,
      ssl: env.DB_SSL ? env.DB_SSL === 'true' || env.DB_SSL === '1' : credentials.kind === 'secret',
      poolSize: intIn(env, 'DB_POOL_SIZE', 10, 1, 200, problems),
      statementTimeoutMs: intIn(env, 'DB_STATEMENT_TIMEOUT_MS', 5000, 100, 600_000, problems),
    },
    queue,
    testFaults: env.WORKLOAD_TEST_FAULTS === '1',
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined,
    zone: env.ZONE_ID || undefined,
  };
  if (problems.length > 0) throw new WorkloadConfigError(problems);
  return config;
}
