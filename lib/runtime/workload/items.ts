import { randomBytes } from 'crypto';
import { Pool, PoolClient } from 'pg';
import { connectWithRetry } from './database';
import { WorkMessage, WorkQueue } from './queue';

export interface Item {
  readonly id: string;
  readonly tenantId: string;
  readonly data: Record<string, unknown>;
  readonly status: 'pending' | 'processed';
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly processedAt: string | null;
  readonly rowVersion: number;
}

/** The tenant (or its bucket) was moved to another cell: the request belongs there. */
export class MovedAwayError extends Error {
  constructor(
    public readonly movedTo: string,
    public readonly moveId: string,
    public readonly kind: 'tenant' | 'bucket',
  ) {
    super(`moved to ${movedTo} (move ${moveId})`);
    this.name = 'MovedAwayError';
  }
}

/**
 * The tenant (or its bucket) is being moved and is fenced here under its freeze: a request that
 * reached this cell past the routers' freeze (in flight when they applied it) gets what the routers
 * answer the freeze with, 503 and Retry-After, never 421, which is for a move already flipped.
 */
export class FrozenHereError extends Error {
  constructor(
    public readonly moveId: string,
    public readonly kind: 'tenant' | 'bucket',
  ) {
    super(`frozen for move ${moveId}`);
    this.name = 'FrozenHereError';
  }
}

interface ItemRow {
  id: string;
  tenant_id: string;
  data: Record<string, unknown>;
  status: 'pending' | 'processed';
  created_at: Date;
  updated_at: Date;
  processed_at: Date | null;
  row_version: string;
}

const COLUMNS = 'id, tenant_id, data, status, created_at, updated_at, processed_at, row_version';

function toItem(row: ItemRow): Item {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    data: row.data,
    status: row.status,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    processedAt: row.processed_at ? row.processed_at.toISOString() : null,
    rowVersion: Number(row.row_version),
  };
}

/** A UUIDv7 (RFC 9562): time-ordered, so a tenant's items list in creation order by id. */
export function uuidv7(now = Date.now()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const ITEM_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface ListPage {
  readonly items: readonly Item[];
  /** Pass as `after` for the next page; null on the last page. */
  readonly next: string | null;
}

export interface ItemStoreOptions {
  readonly pool: Pool;
  readonly queue: WorkQueue;
  readonly bucketCount: number;
}

/**
 * The items of one cell's database, always scoped to one tenant. Every operation first checks
 * `cf_moved_away`; writes take a SHARE lock on that table in their own transaction, so a move that
 * records a tenant as moved (an INSERT, which needs ROW EXCLUSIVE) waits for writes in flight and
 * every later write sees the record: no write can land in this copy after the move was recorded.
 */
export class ItemStore {
  constructor(private readonly o: ItemStoreOptions) {}

  async create(tenantId: string, data: Record<string, unknown>, delayMs = 0): Promise<Item> {
    return this.write(tenantId, delayMs, async (tx) => {
      const id = uuidv7();
      const result = await tx.query<ItemRow>(`insert into items (id, tenant_id, data) values ($1, $2, $3) returning ${COLUMNS}`, [
        id,
        tenantId,
        JSON.stringify(data),
      ]);
      const message: WorkMessage = { kind: 'item.created', tenantId, itemId: id };
      await this.o.queue.send(tx, message);
      return toItem(result.rows[0]);
    });
  }

  async get(tenantId: string, id: string, delayMs = 0): Promise<Item | undefined> {
    return this.read(tenantId, delayMs, async (tx) => {
      const result = await tx.query<ItemRow>(`select ${COLUMNS} from items where tenant_id = $1 and id = $2`, [tenantId, id]);
      return result.rows[0] ? toItem(result.rows[0]) : undefined;
    });
  }

  async list(tenantId: string, limit: number, after: string | undefined, delayMs = 0): Promise<ListPage> {
    return this.read(tenantId, delayMs, async (tx) => {
      const result = await tx.query<ItemRow>(
        `select ${COLUMNS} from items where tenant_id = $1 and ($2::text is null or id > $2) order by id limit $3`,
        [tenantId, after ?? null, limit + 1],
      );
      const rows = result.rows.slice(0, limit).map(toItem);
      return { items: rows, next: result.rows.length > limit ? rows[rows.length - 1].id : null };
    });
  }

  /** True when the item existed (and is now deleted; the trigger records its tombstone). */
  async delete(tenantId: string, id: string, delayMs = 0): Promise<boolean> {
    return this.write(tenantId, delayMs, async (tx) => {
      const result = await tx.query('delete from items where tenant_id = $1 and id = $2', [tenantId, id]);
      return (result.rowCount ?? 0) > 0;
    });
  }

  /**
   * The queue consumer's job: mark the item processed (a no-op when it is gone). `'moved'` when the
   * tenant was moved away: its data, and with the PostgreSQL queue this message, belong to the
   * target cell now, which processes it there. Also `'moved'` while it is frozen here: the message
   * stays hidden and comes back later, handled here if the move was aborted, kept for the target if not.
   */
  async process(message: WorkMessage): Promise<void | 'moved'> {
    try {
      await this.write(message.tenantId, 0, async (tx) => {
        await tx.query("update items set status = 'processed', processed_at = now() where tenant_id = $1 and id = $2 and status = 'pending'", [
          message.tenantId,
          message.itemId,
        ]);
      });
    } catch (error) {
      if (!(error instanceof MovedAwayError) && !(error instanceof FrozenHereError)) throw error;
      return 'moved';
    }
  }

  private async write<T>(tenantId: string, delayMs: number, work: (tx: PoolClient) => Promise<T>): Promise<T> {
    return this.transaction(async (tx) => {
      await tx.query('lock table cf_moved_away in share mode');
      await this.refuseMoved(tx, tenantId);
      if (delayMs > 0) await tx.query('select pg_sleep($1::double precision / 1000)', [delayMs]);
      return work(tx);
    });
  }

  private async read<T>(tenantId: string, delayMs: number, work: (tx: PoolClient) => Promise<T>): Promise<T> {
    return this.transaction(async (tx) => {
      await this.refuseMoved(tx, tenantId);
      if (delayMs > 0) await tx.query('select pg_sleep($1::double precision / 1000)', [delayMs]);
      return work(tx);
    });
  }

  private async refuseMoved(tx: PoolClient, tenantId: string): Promise<void> {
    const moved = await tx.query<{ kind: 'tenant' | 'bucket'; move_id: string; moved_to: string; state: 'frozen' | 'moved' }>(
      `select kind, move_id, moved_to, state from cf_moved_away
       where (kind = 'tenant' and value = $1) or (kind = 'bucket' and value = cf_home_bucket($1, $2)::text)
       order by kind desc limit 1`,
      [tenantId, this.o.bucketCount],
    );
    const row = moved.rows[0];
    if (row?.state === 'frozen') throw new FrozenHereError(row.move_id, row.kind);
    if (row) throw new MovedAwayError(row.moved_to, row.move_id, row.kind);
  }

  private async transaction<T>(work: (tx: PoolClient) => Promise<T>): Promise<T> {
    const tx = await connectWithRetry(this.o.pool);
    let broken = false;
    try {
      await tx.query('begin');
      const result = await work(tx);
      await tx.query('commit');
      return result;
    } catch (error) {
      await tx.query('rollback').catch(() => {
        broken = true;
      });
      throw error;
    } finally {
      tx.release(broken);
    }
  }
}
