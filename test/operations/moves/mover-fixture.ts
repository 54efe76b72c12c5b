import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Pool, PoolClient } from 'pg';
import { bucketOf, compileMapping, initialMapping, MappingDocument, parseMapping } from '../../../lib/domain/mapping';
import { FileRoutingControl, LocalHandoffStore, LocalMoveStore, MoveLimits, MoverDeps, systemClock } from '../../../lib/operations/moves';
import { CellDatabase, PostgresCellData } from '../../../lib/operations/moves/cell-data';
import { PostgresServer, sql } from './postgres-fixture';
import { testPool } from '../../support/postgres';

export const BUCKETS = 1024;

/** Three cells (one database each), a mapping file, a move state dir and a hand-off dir. */
export interface MoveWorld {
  readonly dbs: Record<string, CellDatabase>;
  readonly mappingFile: string;
  readonly stateDir: string;
  deps(overrides?: Partial<MoverDeps>): MoverDeps;
  mapping(): MappingDocument;
  sql<T extends Record<string, unknown>>(cell: string, text: string, params?: unknown[]): Promise<T[]>;
  /** A write as the workload makes it: refused (503 frozen, 421 moved) when fenced, in the same transaction as the insert. */
  write(tenant: string, name: string): Promise<'ok' | 'frozen' | 'moved'>;
  /** A delete through the same path as `write`. */
  remove(tenant: string, name: string): Promise<'ok' | 'frozen' | 'moved'>;
  close(): Promise<void>;
}

let worlds = 0;

export async function createWorld(pg: PostgresServer, limits: Partial<MoveLimits> = {}): Promise<MoveWorld> {
  worlds += 1;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'moves-world-'));
  const dbs: Record<string, CellDatabase> = {};
  for (const cell of ['cell-a', 'cell-b', 'cell-c']) dbs[cell] = await pg.createDatabase(`w${worlds}_${cell.replace('-', '_')}`);
  const mappingFile = path.join(dir, 'mapping.json');
  const doc = initialMapping(
    ['cell-a', 'cell-b', 'cell-c'].map((id, i) => ({ id, endpoint: `http://127.0.0.1:${19000 + i}`, state: 'active' as const })),
    BUCKETS,
    { now: new Date().toISOString() },
  );
  fs.writeFileSync(mappingFile, JSON.stringify(doc));
  const mapping = () => {
    const parsed = parseMapping(fs.readFileSync(mappingFile, 'utf8'));
    if (!parsed.ok) throw new Error('invalid mapping in test');
    return parsed.document;
  };
  const opened: PostgresCellData[] = [];
  // A pool per cell: concurrent requests (a writer and a deleter) each get their own connection
  // and transaction, as the workload's requests do.
  const pools = new Map<string, Pool>();
  const pool = (cell: string) => {
    if (!pools.has(cell)) pools.set(cell, testPool({ ...dbs[cell], max: 4 }));
    return pools.get(cell)!;
  };
  const cellSql = <T extends Record<string, unknown>>(cell: string, text: string, params: unknown[] = []) => sql<T>(dbs[cell], text, params);
  return {
    dbs,
    mappingFile,
    stateDir: path.join(dir, 'moves'),
    mapping,
    sql: cellSql,
    deps: (overrides = {}) => {
      const cells = new Map<string, PostgresCellData>();
      return {
        store: new LocalMoveStore(path.join(dir, 'moves')),
        handoff: new LocalHandoffStore(path.join(dir, 'handoff')),
        // Routers that apply a new file at once: the real router is in the local-fleet tests.
        routing: new FileRoutingControl(mappingFile, async () => ({ local: mapping().version }), systemClock),
        cell: (id) => {
          if (!cells.has(id)) {
            const data = new PostgresCellData(id, dbs[id], { bucketCount: BUCKETS, batchRows: 500, clock: systemClock });
            cells.set(id, data);
            opened.push(data);
          }
          return cells.get(id)!;
        },
        clock: systemClock,
        limits: { copyRowsPerSecond: 1_000_000, ...limits },
        actor: 'test',
        ...overrides,
      };
    },
    write: (tenant, name) =>
      act(tenant, `insert into items (id, tenant_id, data) values (gen_random_uuid()::text, $1, jsonb_build_object('name', $2::text))`, [
        tenant,
        name,
      ]),
    remove: (tenant, name) => act(tenant, `delete from items where tenant_id = $1 and data->>'name' = $2`, [tenant, name]),
    close: async () => {
      for (const p of pools.values()) await p.end();
      for (const d of opened) await d.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };

  async function act(tenant: string, text: string, params: unknown[]): Promise<'ok' | 'frozen' | 'moved'> {
    const doc = mapping();
    if (
      doc.freeze?.exact.includes(tenant) ||
      doc.freeze?.buckets.some((r) => bucketOf(tenant, BUCKETS) >= r.from && bucketOf(tenant, BUCKETS) <= r.to)
    )
      return 'frozen';
    const c = await pool(compileMapping(doc).lookup(tenant).cell).connect();
    try {
      return await inTransaction(c, tenant, text, params);
    } finally {
      c.release();
    }
  }

  async function inTransaction(c: PoolClient, tenant: string, text: string, params: unknown[]): Promise<'ok' | 'frozen' | 'moved'> {
    await c.query('begin');
    try {
      await c.query('lock table cf_moved_away in share mode');
      const { rows } = await c.query<{ state: string }>(
        `select state from cf_moved_away where (kind = 'tenant' and value = $1) or (kind = 'bucket' and value = $2)`,
        [tenant, String(bucketOf(tenant, BUCKETS))],
      );
      if (rows.length > 0) {
        await c.query('rollback');
        // A request routed before the routers applied the freeze gets the freeze's answer from the cell.
        return rows[0].state === 'frozen' ? 'frozen' : 'moved';
      }
      await c.query(text, params);
      await c.query('commit');
      return 'ok';
    } catch (error) {
      await c.query('rollback');
      throw error;
    }
  }
}
