import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { S3HandoffStore } from './aws-handoff';
import { MOVER_OPS, MoverRequest, MoverResult } from '../../domain/names/move-bucket';
import { CellData, CellDatabase, DeltaManifest, PostgresCellData } from './cell-data';
import { RateLimiter } from './limits';
import { Clock, MoveError, MoveSubject } from '../../domain/moves/types';
import type { Homes } from '../../domain/mapping/types';

/**
 * One step of a move inside a cell: the mover task's whole life (bin/mover.ts). It reads the request
 * the operator wrote (`MOVE_REQUEST_KEY` in `MOVE_BUCKET`), runs that one CellData call on the cell's
 * own database with lib/operations/moves' PostgresCellData (the same code the local fleet's moves run), writes
 * the answer to `MOVE_RESULT_KEY` and exits: 0 done, 1 refused or failed (the result says why),
 * 2 misconfigured (no result could be written).
 *
 * Environment: CELL_ID, DB_HOST, DB_PORT, DB_NAME, DB_SECRET_ARN (or DB_USER + DB_PASSWORD), DB_SSL
 * (on with a secret), MOVE_BUCKET, MOVE_BUCKET_REGION, MOVE_REQUEST_KEY, MOVE_RESULT_KEY, and
 * QUEUE_URL (the cell's work queue, for `requeue`).
 */
export interface MoverTaskDeps {
  /** An S3 client in the move bucket's region. */
  readonly s3: (region: string) => S3Client;
  /** The database secret's JSON `username` / `password`, read when the task connects. */
  readonly secret: (arn: string) => Promise<string>;
  readonly clock: Clock;
  /** The cell's data; by default PostgresCellData on the database the environment names. */
  readonly openCell?: (cell: string, db: CellDatabase, options: { bucketCount: number; batchRows: number }) => CellData;
  readonly log?: (line: string) => void;
  /** Sends message bodies to the cell's work queue (`requeue`); by default SQS at QUEUE_URL. */
  readonly sendWork?: (queueUrl: string, bodies: readonly string[]) => Promise<void>;
}

export class MoverConfigError extends Error {}

/** SendMessageBatch takes at most 10 messages. */
const SQS_BATCH = 10;

/** Sends `bodies` to the SQS queue at `queueUrl`, 10 at a time; any message SQS did not take fails the call (a retry sends all again). */
export async function sendToSqs(queueUrl: string, bodies: readonly string[]): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { SendMessageBatchCommand, SQSClient } = require('@aws-sdk/client-sqs') as typeof import('@aws-sdk/client-sqs');
  const sqs = new SQSClient({});
  try {
    for (let i = 0; i < bodies.length; i += SQS_BATCH) {
      const batch = bodies.slice(i, i + SQS_BATCH);
      const answer = await sqs.send(
        new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: batch.map((body, n) => ({ Id: String(n), MessageBody: body })) }),
      );
      if ((answer.Failed ?? []).length > 0)
        throw new MoveError(
          `SQS did not take ${answer.Failed!.length} of ${batch.length} messages (${answer.Failed![0].Code}: ${answer.Failed![0].Message}); the step is repeated on resume`,
        );
    }
  } finally {
    sqs.destroy();
  }
}

function env(vars: NodeJS.ProcessEnv, name: string): string {
  const value = vars[name];
  if (!value) throw new MoverConfigError(`${name} is not set`);
  return value;
}

async function credentials(vars: NodeJS.ProcessEnv, deps: MoverTaskDeps): Promise<{ user: string; password: string }> {
  if (vars.DB_SECRET_ARN) {
    const text = await deps.secret(vars.DB_SECRET_ARN);
    let parsed: { username?: unknown; password?: unknown };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      throw new MoveError(`${vars.DB_SECRET_ARN}: the secret is not JSON with username and password`);
    }
    if (typeof parsed.username !== 'string' || typeof parsed.password !== 'string')
      throw new MoveError(`${vars.DB_SECRET_ARN}: the secret has no string username and password`);
    return { user: parsed.username, password: parsed.password };
  }
  if (vars.DB_USER && vars.DB_PASSWORD !== undefined) return { user: vars.DB_USER, password: vars.DB_PASSWORD };
  throw new MoverConfigError('no database credentials: set DB_SECRET_ARN (or DB_USER and DB_PASSWORD)');
}

function parseRequest(text: string, cell: string): MoverRequest {
  let request: MoverRequest;
  try {
    request = JSON.parse(text) as MoverRequest;
  } catch (error) {
    throw new MoveError(`the request is not JSON: ${(error as Error).message}`);
  }
  if (!MOVER_OPS.includes(request.op)) throw new MoveError(`unknown operation ${JSON.stringify(request.op)} (known: ${MOVER_OPS.join(', ')})`);
  // A request for another cell is refused: this task only ever touches its own cell's database.
  if (request.cell !== cell) throw new MoveError(`the request is for cell ${request.cell}, and this is cell ${cell}'s mover`);
  if (!Number.isInteger(request.bucketCount) || request.bucketCount < 1)
    throw new MoveError(`bucketCount ${request.bucketCount} is not a positive integer`);
  return request;
}

function optional<T>(method: T | undefined, name: string): T {
  if (!method) throw new MoveError(`this cell's data has no ${name}`);
  return method;
}

/** Runs the call a request names against one cell. */
export async function performRequest(
  request: MoverRequest,
  cell: CellData,
  handoff: (request: MoverRequest) => S3HandoffStore,
  clock: Clock,
  sendWork?: (bodies: readonly string[]) => Promise<void>,
): Promise<unknown> {
  const a = request.args as Record<string, unknown> & { subject: MoveSubject };
  switch (request.op) {
    case 'schemaVersion':
      return cell.schemaVersion();
    case 'contractGaps':
      return cell.contractGaps ? cell.contractGaps() : [];
    case 'adoptHomes':
      return optional(cell.adoptHomes, 'adoptHomes')
        .call(cell, a.homes as Homes)
        .then(() => null);
    case 'exportDelta': {
      const limiter = request.copyRowsPerSecond ? new RateLimiter(request.copyRowsPerSecond, clock) : undefined;
      return cell.exportDelta(a.subject, String(a.since), handoff(request), String(a.prefix), limiter);
    }
    case 'importDelta':
      return cell.importDelta(a.subject, handoff(request), String(a.prefix), a.manifest as DeltaManifest);
    case 'clear':
      return cell.clear(a.subject);
    case 'checksums':
      return cell.checksums(a.subject);
    case 'fence':
      return cell.fence(a.subject, String(a.moveId), String(a.movedTo), a.state === 'frozen' ? 'frozen' : 'moved').then(() => null);
    case 'unfence':
      return cell.unfence(String(a.moveId)).then(() => null);
    case 'clearMovedAway':
      return cell.clearMovedAway(a.subject);
    case 'blockingRecords':
      return cell.blockingRecords(a.subject);
    case 'forget':
      return cell.forget(a.subject, String(a.moveId));
    case 'rowHashes':
      return optional(cell.rowHashes, 'rowHashes').call(cell, a.subject, String(a.since));
    case 'exportQueue':
      return optional(cell.exportQueue, 'exportQueue').call(cell, a.subject, handoff(request), String(a.prefix));
    case 'importQueue':
      return optional(cell.importQueue, 'importQueue').call(cell, a.subject, handoff(request), String(a.prefix));
    case 'requeue': {
      const bodies = await optional(cell.pendingWork, 'pendingWork').call(cell, a.subject);
      if (bodies.length > 0) await optional(sendWork, 'work queue (QUEUE_URL)')(bodies);
      return bodies.length;
    }
    default:
      throw new MoveError(`unknown operation ${String(request.op)}`);
  }
}

export async function runMoverTask(vars: NodeJS.ProcessEnv, deps: MoverTaskDeps): Promise<number> {
  const log = deps.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  let bucket: string;
  let resultKey: string;
  let s3: S3Client;
  let requestKey: string;
  let cellId: string;
  try {
    cellId = env(vars, 'CELL_ID');
    bucket = env(vars, 'MOVE_BUCKET');
    requestKey = env(vars, 'MOVE_REQUEST_KEY');
    resultKey = env(vars, 'MOVE_RESULT_KEY');
    s3 = deps.s3(vars.MOVE_BUCKET_REGION || env(vars, 'AWS_REGION'));
  } catch (error) {
    log(`mover: ${(error as Error).message}`);
    return 2;
  }
  const write = async (result: MoverResult) => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: resultKey, Body: JSON.stringify(result), ContentType: 'application/json' }));
  };
  let cell: CellData | undefined;
  let result: MoverResult;
  try {
    const response = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: requestKey }));
    const request = parseRequest(await response.Body!.transformToString(), cellId);
    log(`mover ${cellId}: ${request.op}`);
    const { user, password } = await credentials(vars, deps);
    const ssl = vars.DB_SSL ? vars.DB_SSL === 'true' || vars.DB_SSL === '1' : Boolean(vars.DB_SECRET_ARN);
    const db: CellDatabase = {
      host: env(vars, 'DB_HOST'),
      port: Number(vars.DB_PORT || 5432),
      database: env(vars, 'DB_NAME'),
      user,
      password,
      ...(ssl ? { ssl: true } : {}),
    };
    const options = { bucketCount: request.bucketCount, batchRows: request.batchRows || 5000 };
    cell = deps.openCell ? deps.openCell(cellId, db, options) : new PostgresCellData(cellId, db, { ...options, clock: deps.clock });
    const queueUrl = vars.QUEUE_URL;
    const value = await performRequest(
      request,
      cell,
      (r) => {
        if (!r.lane) throw new MoveError(`${r.op} needs the move's lane (source and target account)`);
        return new S3HandoffStore(s3, bucket, r.lane);
      },
      deps.clock,
      queueUrl ? (bodies) => (deps.sendWork ?? sendToSqs)(queueUrl, bodies) : undefined,
    );
    result = { ok: true, value: value ?? null };
  } catch (error) {
    const moveError = error instanceof MoveError;
    result = { ok: false, error: (error as Error).message, moveError };
    log(`mover ${cellId}: ${moveError ? '' : 'failed: '}${(error as Error).stack ?? (error as Error).message}`);
  } finally {
    await cell?.close().catch(() => undefined);
  }
  try {
    await write(result);
  } catch (error) {
    log(`mover ${cellId}: cannot write the result to s3://${bucket}/${resultKey}: ${(error as Error).name}: ${(error as Error).message}`);
    return 2;
  }
  return result.ok ? 0 : 1;
}
