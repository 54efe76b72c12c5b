import { ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Pool, PoolClient } from 'pg';

/** What a write asks the background worker to do. */
export interface WorkMessage {
  readonly kind: 'item.created';
  readonly tenantId: string;
  readonly itemId: string;
}

/**
 * Handles one message. `'moved'`: the tenant's data went to another cell (its move is under way or
 * done); the PostgreSQL queue keeps the message, since the move carries it to the target cell.
 */
export type WorkHandler = (message: WorkMessage) => Promise<void | 'moved'>;

/**
 * The cell's work queue. `send` runs inside the write's transaction, before its commit: if the
 * send fails the write rolls back (nothing half-done). With SQS a commit can still fail after the
 * send, so handlers must accept messages for rows that do not exist (they do: an update of nothing).
 */
export interface WorkQueue {
  readonly kind: 'sqs' | 'postgres';
  send(tx: PoolClient, message: WorkMessage): Promise<void>;
  /** Starts the consumer: each message is handled, then deleted; a failure makes it visible again later. */
  start(handler: WorkHandler): void;
  stop(): Promise<void>;
}

export function parseMessage(body: string | object): WorkMessage | undefined {
  const value = (typeof body === 'string' ? JSON.parse(body) : body) as Partial<WorkMessage>;
  if (value.kind !== 'item.created' || typeof value.tenantId !== 'string' || typeof value.itemId !== 'string') return undefined;
  return { kind: value.kind, tenantId: value.tenantId, itemId: value.itemId };
}

export interface PostgresQueueOptions {
  /** Idle poll interval. @default 200 */
  readonly pollMs?: number;
  /** How long a received message stays hidden before another receive may take it. @default 30000 */
  readonly visibilityMs?: number;
  /** After this many failed receives a message is parked (visible_at = infinity) for an operator. @default 5 */
  readonly maxReceives?: number;
  readonly log?: (line: string) => void;
}

/**
 * The local fleet's queue: a table in the cell's own database (`cf_work_queue`). The message is
 * written in the same transaction as the item, so it exists exactly when the item does; consumers
 * take messages with `FOR UPDATE SKIP LOCKED` and a visibility timeout, like SQS.
 */
export function postgresWorkQueue(pool: Pool, o: PostgresQueueOptions = {}): WorkQueue {
  const pollMs = o.pollMs ?? 200;
  const visibility = o.visibilityMs ?? 30_000;
  const maxReceives = o.maxReceives ?? 5;
  let running = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  const receive = async (handler: WorkHandler): Promise<number> => {
    const taken = await pool.query<{ id: string; body: object; receive_count: number }>(
      `with next as (
         select id from cf_work_queue where visible_at <= now() order by id limit 10 for update skip locked
       )
       update cf_work_queue q set visible_at = now() + make_interval(secs => $1::double precision / 1000), receive_count = q.receive_count + 1
       from next where q.id = next.id
       returning q.id, q.body, q.receive_count`,
      [visibility],
    );
    for (const row of taken.rows) {
      const message = parseMessage(row.body);
      try {
        const outcome = message ? await handler(message) : undefined;
        if (!message) o.log?.(`work queue: message ${row.id} is not a work message; dropped`);
        if (outcome === 'moved') {
          // The move of this tenant copies its messages to the target at the flip and deletes them
          // here when it forgets the source copy: keep it, hidden, without counting a failure.
          await pool.query(
            `update cf_work_queue set visible_at = now() + make_interval(secs => $2::double precision / 1000), receive_count = greatest(receive_count - 1, 0) where id = $1`,
            [row.id, visibility],
          );
          continue;
        }
        await pool.query('delete from cf_work_queue where id = $1', [row.id]);
      } catch (error) {
        if (row.receive_count >= maxReceives) {
          await pool.query("update cf_work_queue set visible_at = 'infinity' where id = $1", [row.id]).catch(() => undefined);
          o.log?.(`work queue: message ${row.id} failed ${row.receive_count} times; parked (visible_at = infinity): ${(error as Error).message}`);
        } else {
          o.log?.(`work queue: message ${row.id} failed (attempt ${row.receive_count}), retried after ${visibility} ms: ${(error as Error).message}`);
        }
      }
    }
    return taken.rows.length;
  };
  return {
    kind: 'postgres',
    send: async (tx, message) => {
      await tx.query('insert into cf_work_queue (tenant_id, body) values ($1, $2)', [message.tenantId, JSON.stringify(message)]);
      wake?.();
    },
    start: (handler) => {
      if (running) return;
      running = true;
      loop = (async () => {
        while (running) {
          let got = 0;
          try {
            got = await receive(handler);
          } catch (error) {
            o.log?.(`work queue: receive failed: ${(error as Error).message}`);
          }
          if (got === 0 && running) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, pollMs);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            wake = undefined;
          }
        }
      })();
    },
    stop: async () => {
      running = false;
      wake?.();
      await loop;
    },
  };
}

export interface SqsQueueOptions {
  readonly client?: SQSClient;
  readonly region?: string;
  /** Long-poll wait. @default 20 */
  readonly waitSeconds?: number;
  readonly log?: (line: string) => void;
}

/**
 * The cell's SQS queue (QUEUE_URL). The queue's redrive policy (lib/constructs/cell/queues.ts) moves a message
 * that keeps failing to the dead-letter queue; a failed handler makes the message visible again at once.
 */
export function sqsWorkQueue(url: string, o: SqsQueueOptions = {}): WorkQueue {
  const client = o.client ?? new SQSClient(o.region ? { region: o.region } : {});
  let running = false;
  let loop: Promise<void> | undefined;
  let abort: AbortController | undefined;
  return {
    kind: 'sqs',
    send: async (_tx, message) => {
      await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: JSON.stringify(message) }));
    },
    start: (handler) => {
      if (running) return;
      running = true;
      loop = (async () => {
        while (running) {
          abort = new AbortController();
          try {
            const result = await client.send(
              new ReceiveMessageCommand({
                QueueUrl: url,
                MaxNumberOfMessages: 10,
                WaitTimeSeconds: o.waitSeconds ?? 20,
              }),
              { abortSignal: abort.signal },
            );
            // An empty answer after a long poll: pause briefly, so a short poll never spins.
            if (!result.Messages?.length) await new Promise((r) => setTimeout(r, 100));
            for (const m of result.Messages ?? []) {
              let message: WorkMessage | undefined;
              try {
                message = parseMessage(m.Body ?? '');
              } catch {
                message = undefined;
              }
              try {
                // 'moved' is deleted like a handled message: nothing carries SQS messages to the
                // target cell (docs/workload.md, "Work queue messages and moves").
                if (message) await handler(message);
                else o.log?.(`work queue: message ${m.MessageId} is not a work message; left for the dead-letter queue`);
                if (message) await client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
              } catch (error) {
                o.log?.(`work queue: message ${m.MessageId} failed: ${(error as Error).message}`);
                await client
                  .send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 }))
                  .catch(() => undefined);
              }
            }
          } catch (error) {
            if (!running) break;
            o.log?.(`work queue: receive failed: ${(error as Error).message}`);
            await new Promise((r) => setTimeout(r, 1000));
          }
        }
      })();
    },
    stop: async () => {
      running = false;
      abort?.abort();
      await loop;
    },
  };
}
