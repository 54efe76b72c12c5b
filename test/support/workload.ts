import { WorkloadConfig } from '../../lib/runtime/workload';
import { TestPostgres } from './postgres';

/** A workload config for one test database on the test server: loopback, port 0, the table queue. */
export function testWorkloadConfig(pg: TestPostgres, database: string, overrides: Partial<WorkloadConfig> = {}): WorkloadConfig {
  return {
    cellId: 'cell-test',
    port: 0,
    host: '127.0.0.1',
    healthCheckPath: '/healthz',
    partitionKey: { source: 'header', name: 'x-tenant-id' },
    bucketCount: 16384,
    database: {
      host: pg.server.host,
      port: pg.server.port,
      name: database,
      credentials: { kind: 'static', user: pg.server.user, password: pg.server.password },
      ssl: false,
      poolSize: 5,
      statementTimeoutMs: 5000,
    },
    queue: { kind: 'postgres' },
    testFaults: false,
    ...overrides,
  };
}

export interface ApiResponse {
  readonly status: number;
  readonly body: any;
  readonly headers: Headers;
}

/**
 * One request to a workload (or the router) with `tenant` in x-tenant-id (omitted when undefined);
 * status 0 when the connection failed or was cut (a crashed process).
 */
export async function api(
  base: string,
  method: string,
  path: string,
  tenant?: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiResponse> {
  let response: Response;
  try {
    response = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(tenant === undefined ? {} : { 'x-tenant-id': tenant }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
  } catch (error) {
    return { status: 0, body: (error as Error).message, headers: new Headers() };
  }
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body: parsed, headers: response.headers };
}
