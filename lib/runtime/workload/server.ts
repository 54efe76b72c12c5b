import * as http from 'http';
import { AddressInfo } from 'net';
import { Pool } from 'pg';
import { keyProblem } from '../../domain/mapping/key';
import { workloadPartitionKey } from '../../domain/fleet/jwt';
import { FROZEN_RETRY_AFTER_SECONDS } from '../router/freeze';
import { WorkloadConfig } from './config';
import { CredentialSource, secretsManagerCredentials, staticCredentials } from './credentials';
import { connectWithRetry, createDatabasePool, ensureDatabase } from './database';
import { FrozenHereError, ITEM_ID_PATTERN, ItemStore, MovedAwayError } from './items';
import { migrate, MOVABLE_TABLES, schemaVersion } from './migrations';
import { postgresWorkQueue, sqsWorkQueue, WorkQueue } from './queue';
import { PartitionKeySource } from '../../domain/fleet/types';

const MAX_BODY_BYTES = 64 * 1024;
const MAX_PAGE = 100;
const DEFAULT_PAGE = 20;

class HttpError extends Error {
  constructor(
    public readonly status: number,
    message: string,
    public readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** The tenant of a request and the API path left once a path-segment key is taken out. */
export function tenantOf(req: http.IncomingMessage, given: PartitionKeySource): { tenant: string; path: string } {
  // A verified token's claim reaches the cell in the header the router sets.
  const source = workloadPartitionKey(given);
  const url = new URL(req.url ?? '/', 'http://local');
  let raw: string | string[] | undefined;
  let rest = url.pathname;
  let where: string;
  if (source.source === 'header') {
    where = `header ${source.name}`;
    raw = req.headers[source.name];
    if (
      Array.isArray(raw) ||
      (typeof raw === 'string' && req.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === source.name).length > 1)
    ) {
      throw new HttpError(400, `send the ${source.name} header once`);
    }
  } else if (source.source === 'path') {
    where = `path segment ${source.segment}`;
    const segments = url.pathname.split('/');
    raw = segments[source.segment];
    rest = `/${segments.slice(source.segment + 1).join('/')}`;
  } else if (source.source === 'host') {
    where = `host label ${source.label}`;
    raw = (req.headers.host ?? '').split(':')[0].split('.')[source.label - 1];
  } else {
    throw new HttpError(500, 'unreachable: a verified token reads the routed header');
  }
  if (raw === undefined || raw === '') throw new HttpError(400, `no tenant: this API is tenant-scoped; send the tenant id in the ${where}`);
  const problem = keyProblem(raw);
  if (problem) throw new HttpError(400, `invalid tenant in the ${where}: ${problem}`);
  return { tenant: raw as string, path: rest };
}

async function readJsonObject(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `the body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'the body is not JSON; send a JSON object such as {"name":"x"}');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new HttpError(400, 'the body must be a JSON object such as {"name":"x"}');
  return value as Record<string, unknown>;
}

function send(res: http.ServerResponse, status: number, body?: unknown, headers: http.OutgoingHttpHeaders = {}): void {
  if (body === undefined) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Database errors that mean "not reachable right now" rather than a bug: 503, so clients retry. */
function isUnavailable(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  if (typeof e?.code === 'string' && (/^(08|57P|53)/.test(e.code) || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes(e.code)))
    return true;
  if (e?.code === '57014') return true; // statement timeout
  return /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED/.test(e?.message ?? '');
}

export interface RunningWorkload {
  readonly port: number;
  readonly url: string;
  readonly pool: Pool;
  readonly queue: WorkQueue;
  /** Resolves once migrations are done (rejects only on a schema newer than the code). */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

export interface StartWorkloadOptions {
  readonly log?: (line: string) => void;
  /** Overrides the credential source the config implies (tests inject rotation). */
  readonly credentials?: CredentialSource;
  /** Overrides the queue the config implies (tests inject a mocked SQS). */
  readonly queue?: (pool: Pool) => WorkQueue;
  /** Wait between migration attempts while the database is unreachable. @default 2000 */
  readonly retryMs?: number;
}

/**
 * The reference workload: a tenant-scoped items API on the cell's PostgreSQL database, a work queue
 * with its consumer, a health check that fails when the database is unreachable. Listens at once;
 * API requests get 503 until the migrations have run (they are retried while the database is down).
 */
export async function startWorkload(config: WorkloadConfig, o: StartWorkloadOptions = {}): Promise<RunningWorkload> {
  const log = o.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const credentials =
    o.credentials ??
    (config.database.credentials.kind === 'secret'
      ? secretsManagerCredentials(config.database.credentials.secretArn, config.region)
      : staticCredentials(config.database.credentials.user, config.database.credentials.password));
  const poolOptions = {
    host: config.database.host,
    port: config.database.port,
    database: config.database.name,
    credentials,
    ssl: config.database.ssl,
    max: config.database.poolSize,
    statementTimeoutMs: config.database.statementTimeoutMs,
  };
  const pool = createDatabasePool(poolOptions);
  // An idle client losing its server (database restarted) must not crash the process.
  pool.on('error', (error) => log(`database: idle connection lost: ${error.message}`));
  const queue = o.queue
    ? o.queue(pool)
    : config.queue.kind === 'sqs'
      ? sqsWorkQueue(config.queue.url, { region: config.region, log })
      : postgresWorkQueue(pool, { log });
  const store = new ItemStore({ pool, queue, bucketCount: config.bucketCount });

  let migrated = false;
  let closing = false;
  const ready = (async () => {
    for (;;) {
      try {
        if (await ensureDatabase(poolOptions)) log(`created database ${config.database.name}`);
        await migrate(pool, log);
        migrated = true;
        queue.start((message) => store.process(message));
        return;
      } catch (error) {
        if (!isUnavailable(error) || closing) throw error;
        log(`database not reachable yet (${(error as Error).message}); retrying`);
        await new Promise((r) => setTimeout(r, o.retryMs ?? 2000));
      }
    }
  })();
  ready.catch((error: Error) => log(`migrations failed: ${error.message}`));

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://local');
    if (url.pathname === config.healthCheckPath && (req.method === 'GET' || req.method === 'HEAD')) {
      if (!migrated) return send(res, 503, { status: 'starting', cell: config.cellId });
      try {
        const client = await connectWithRetry(pool);
        try {
          await client.query('select 1');
        } finally {
          client.release();
        }
        return send(res, 200, { status: 'ok', cell: config.cellId });
      } catch (error) {
        return send(res, 503, { status: 'database unreachable', cell: config.cellId, error: (error as Error).message });
      }
    }
    if (!migrated) throw new HttpError(503, 'starting: the database schema is not ready yet', { retryAfterSeconds: 2 });
    if (url.pathname === '/v1/_meta' && req.method === 'GET') {
      return send(res, 200, { schemaVersion: await schemaVersion(pool), cell: config.cellId, movableTables: MOVABLE_TABLES, queue: queue.kind });
    }
    const { tenant, path } = tenantOf(req, config.partitionKey);
    const fault = config.testFaults ? req.headers['x-fault'] : undefined;
    if (fault === 'crash') {
      log(`test fault: poison request for tenant ${tenant}; crashing`);
      // Thrown outside any promise chain: the process dies as with a real poison request.
      setImmediate(() => {
        throw new Error('poison request (WORKLOAD_TEST_FAULTS)');
      });
      return new Promise(() => undefined);
    }
    const delayMs = fault === 'slow' ? Math.min(Number(req.headers['x-fault-delay-ms'] ?? 1000) || 0, 60_000) : 0;

    const itemMatch = /^\/v1\/items\/([^/]+)$/.exec(path);
    if (path === '/v1/items') {
      if (req.method === 'POST') {
        const data = await readJsonObject(req);
        const item = await store.create(tenant, data, delayMs);
        return send(res, 201, item, { location: `/v1/items/${item.id}` });
      }
      if (req.method === 'GET') {
        const limitText = url.searchParams.get('limit');
        const limit = limitText === null ? DEFAULT_PAGE : Number(limitText);
        if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)
          throw new HttpError(400, `limit=${limitText}: give an integer from 1 to ${MAX_PAGE}`);
        const after = url.searchParams.get('after') ?? undefined;
        if (after !== undefined && !ITEM_ID_PATTERN.test(after)) throw new HttpError(400, 'after: pass the `next` value of the previous page');
        return send(res, 200, await store.list(tenant, limit, after, delayMs));
      }
      throw new HttpError(405, `${req.method} /v1/items: use GET or POST`, {});
    }
    if (itemMatch) {
      const id = decodeURIComponent(itemMatch[1]);
      if (!ITEM_ID_PATTERN.test(id)) throw new HttpError(404, `no item ${id}`);
      if (req.method === 'GET') {
        const item = await store.get(tenant, id, delayMs);
        return item ? send(res, 200, item) : send(res, 404, { error: 'not found', message: `no item ${id}` });
      }
      if (req.method === 'DELETE') {
        return (await store.delete(tenant, id, delayMs)) ? send(res, 204) : send(res, 404, { error: 'not found', message: `no item ${id}` });
      }
      throw new HttpError(405, `${req.method} /v1/items/{id}: use GET or DELETE`);
    }
    throw new HttpError(404, `no route ${req.method} ${path}; the API is /v1/items and /v1/items/{id}`);
  };

  const server = http.createServer((req, res) => {
    // Which zone served it (the local fleet's zones; ZONE_ID), beside the router's x-cell.
    if (config.zone) res.setHeader('x-zone', config.zone);
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (error instanceof FrozenHereError) {
        // The body and header the routers' freeze answers with (lib/runtime/router/freeze.ts).
        return send(
          res,
          503,
          {
            error: 'frozen',
            message: 'this tenant is moving to another cell; retry in a second',
            retryAfterSeconds: FROZEN_RETRY_AFTER_SECONDS,
            moveId: error.moveId,
          },
          { 'retry-after': String(FROZEN_RETRY_AFTER_SECONDS) },
        );
      }
      if (error instanceof MovedAwayError) {
        return send(res, 421, { error: 'moved', cell: error.movedTo, moveId: error.moveId });
      }
      if (error instanceof HttpError) {
        return send(res, error.status, { error: error.message, ...error.body }, error.status === 503 ? { 'retry-after': '2' } : {});
      }
      if (isUnavailable(error)) {
        return send(res, 503, { error: `database unavailable: ${(error as Error).message}` }, { 'retry-after': '2' });
      }
      log(`error: ${req.method} ${req.url}: ${(error as Error).stack ?? String(error)}`);
      return send(res, 500, { error: 'internal error' });
    });
  });
  // Longer than the ALB's (60 s) and HAProxy's idle timeouts, so the proxy closes idle connections first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(config.port, config.host, resolve));
  const port = (server.address() as AddressInfo).port;
  log(`workload for cell ${config.cellId} listening on ${config.host}:${port} (queue: ${queue.kind}, health: ${config.healthCheckPath})`);
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    pool,
    queue,
    ready,
    close: async () => {
      closing = true;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await queue.stop();
      await ready.catch(() => undefined);
      await pool.end();
    },
  };
}
