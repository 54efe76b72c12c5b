/**
 * npm run bench:move: moves on real PostgreSQL through a real local router (HAProxy + agent).
 * - rows copied per second (the clone of a tenant with 100,000 rows);
 * - the freeze window (frozen in the mapping → unfrozen, as every router serves it) over 20 moves
 *   of that tenant back and forth while it writes 50 rows a second (target p99 < 1 s);
 * - the time to move a bucket range holding 1,000 tenants (10 rows each).
 * Both cells' databases are in one PostgreSQL server here (the mover reaches each as a separate
 * database, as it would two cells); the router's agent polls its mapping file every 100 ms.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client, Pool } from 'pg';
import { bucketOf, compileMapping, createKeyHasher, initialMapping, MappingDocument, parseMapping } from '../lib/domain/mapping';
import {
  FileRoutingControl,
  forgetMove,
  LocalHandoffStore,
  LocalMoveStore,
  MoverDeps,
  MoveSubject,
  planMove,
  runMove,
  systemClock,
} from '../lib/operations/moves';
import { CellDatabase, PostgresCellData } from '../lib/operations/moves/cell-data';
import { routerVersionProbe } from '../lib/operations/moves/local-fleet';
import { freeLoopbackPort, startPostgresServer } from '../lib/operations/local-fleet/postgres';
import { startLocalRouter } from '../lib/runtime/router';
import { migrate } from '../lib/runtime/workload/migrations';

const BUCKETS = 16384;
const TENANT_ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const MOVES = Number(process.env.BENCH_MOVES ?? 20);
const WRITES_PER_SECOND = 50;

const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))];

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-move-'));
  const pg = await startPostgresServer({ dataDir: path.join(dir, 'pg'), databases: ['cell_a', 'cell_b'] });
  const db = (name: string): CellDatabase => ({ host: pg.host, port: pg.port, user: pg.user, password: pg.password, database: name });
  const dbs: Record<string, CellDatabase> = { 'cell-a': db('cell_a'), 'cell-b': db('cell_b') };
  for (const d of Object.values(dbs)) {
    const pool = new Pool({ ...d, max: 1 });
    // pool.end() resolves before its client's socket closes: the server stopping at the end must not
    // crash the bench with 57P01 (likewise the writers' clients below; their queries still reject).
    pool.on('error', () => undefined);
    await migrate(pool);
    await pool.end();
  }
  const mappingFile = path.join(dir, 'mapping.json');
  fs.writeFileSync(
    mappingFile,
    JSON.stringify(
      initialMapping(
        ['cell-a', 'cell-b'].map((id, i) => ({ id, endpoint: `http://127.0.0.1:${1 + i}`, state: 'active' as const })),
        BUCKETS,
        { now: new Date().toISOString() },
      ),
    ),
  );
  const port = await freeLoopbackPort();
  const router = await startLocalRouter({
    mappingFile,
    port,
    debugHeaders: true,
    partitionKey: { source: 'header', name: 'x-tenant-id' },
    bucketCount: BUCKETS,
    healthCheckPath: '/health',
    log: () => undefined,
    pollMs: 100,
  });
  const mapping = (): MappingDocument => {
    const parsed = parseMapping(fs.readFileSync(mappingFile, 'utf8'));
    if (!parsed.ok) throw new Error('invalid mapping');
    return parsed.document;
  };
  const cells = new Map<string, PostgresCellData>();
  const deps: MoverDeps = {
    store: new LocalMoveStore(path.join(dir, 'moves')),
    handoff: new LocalHandoffStore(path.join(dir, 'handoff')),
    routing: new FileRoutingControl(mappingFile, routerVersionProbe([`http://127.0.0.1:${port}`]), systemClock),
    cell: (id) => {
      if (!cells.has(id)) cells.set(id, new PostgresCellData(id, dbs[id], { bucketCount: BUCKETS, batchRows: 5000, clock: systemClock }));
      return cells.get(id)!;
    },
    clock: systemClock,
    limits: { copyRowsPerSecond: 10_000_000 },
    actor: 'bench',
  };
  const clients = new Map<string, Client>();
  const client = async (cell: string) => {
    if (!clients.has(cell)) {
      const c = new Client(dbs[cell]);
      c.on('error', () => undefined);
      await c.connect();
      clients.set(cell, c);
    }
    return clients.get(cell)!;
  };
  /** A write as the workload makes it: refused when frozen (the router's 503) or moved away (421). */
  const write = async (tenant: string): Promise<'ok' | 'frozen' | 'moved'> => {
    const doc = mapping();
    if (doc.freeze?.exact.includes(tenant)) return 'frozen';
    const c = await client(compileMapping(doc).lookup(tenant).cell);
    await c.query('begin');
    await c.query('lock table cf_moved_away in share mode');
    const { rows } = await c.query(`select 1 from cf_moved_away where (kind = 'tenant' and value = $1) or (kind = 'bucket' and value = $2)`, [
      tenant,
      String(bucketOf(tenant, BUCKETS)),
    ]);
    if (rows.length > 0) {
      await c.query('rollback');
      return 'moved';
    }
    await c.query(`insert into items (id, tenant_id, data) values (gen_random_uuid()::text, $1, '{"w":1}')`, [tenant]);
    await c.query('commit');
    return 'ok';
  };

  try {
    const tenant = 'bench-tenant';
    let home = compileMapping(mapping()).lookup(tenant).cell;
    const setup = await client(home);
    await setup.query(
      `insert into items (id, tenant_id, data) select gen_random_uuid()::text, $1, jsonb_build_object('n', g, 'pad', repeat('x', 100)) from generate_series(1, $2::int) g`,
      [tenant, TENANT_ROWS],
    );
    process.stderr.write(`${TENANT_ROWS} rows for ${tenant} on ${home}; ${MOVES} moves while it writes ${WRITES_PER_SECOND}/s\n`);

    let stop = false;
    const outcomes = { ok: 0, frozen: 0, moved: 0 };
    const writer = (async () => {
      while (!stop) {
        const started = Date.now();
        outcomes[await write(tenant)] += 1;
        await new Promise((r) => setTimeout(r, Math.max(0, 1000 / WRITES_PER_SECOND - (Date.now() - started))));
      }
    })();
    const freezes: number[] = [];
    const cloneRates: number[] = [];
    const totals: number[] = [];
    for (let i = 0; i < MOVES; i++) {
      const target = home === 'cell-a' ? 'cell-b' : 'cell-a';
      const t0 = Date.now();
      const planned = await planMove(deps, { subject: { kind: 'tenant', tenant }, target, reason: 'bench' });
      const done = await runMove(deps, planned.id);
      totals.push(Date.now() - t0);
      freezes.push(Date.parse(done.unfrozenAt!) - Date.parse(done.frozenAt!));
      const clone = (await deps.store.readAudit(done.id)).find((e) => e.event === 'delta' && e.detail?.prefix === 'clone');
      const rows = Object.values(clone!.detail!.tables as Record<string, { rows: number }>).reduce((n, t) => n + t.rows, 0);
      cloneRates.push(rows / (clone!.detail!.seconds as number));
      await forgetMove(deps, done.id, true);
      home = target;
      process.stderr.write(`move ${i + 1}/${MOVES}: ${totals[i]} ms, frozen ${freezes[i]} ms, clone ${Math.round(cloneRates[i])} rows/s\n`);
    }
    stop = true;
    await writer;

    // A bucket range holding 1,000 tenants of 10 rows each.
    const doc = mapping();
    // About 16 million candidate keys to find 1,000 in one of 16,384 buckets: one hasher, reused.
    const hash = createKeyHasher();
    const bucket = hash('bt-0') % BUCKETS;
    const range = { from: bucket, to: bucket };
    const tenants: string[] = [];
    for (let i = 0; tenants.length < 1000; i++) if (hash(`bt-${i}`) % BUCKETS === bucket) tenants.push(`bt-${i}`);
    const owner = compileMapping(doc).lookup(tenants[0]).cell;
    await (
      await client(owner)
    ).query(`insert into items (id, tenant_id, data) select gen_random_uuid()::text, t, '{}' from unnest($1::text[]) t, generate_series(1, 10)`, [
      tenants,
    ]);
    const subject: MoveSubject = { kind: 'buckets', ranges: [range] };
    const b0 = Date.now();
    const bucketMove = await planMove(deps, { subject, target: owner === 'cell-a' ? 'cell-b' : 'cell-a', reason: 'bench bucket' });
    const bucketDone = await runMove(deps, bucketMove.id);
    const bucketMs = Date.now() - b0;

    const rows: [string, string, string][] = [
      ['rows copied per second (clone of 100,000 rows, median)', `${Math.round(pct(cloneRates, 50)).toLocaleString('en-US')}`, ''],
      [
        `freeze window p50 / p99 (${MOVES} moves, ${TENANT_ROWS.toLocaleString('en-US')} rows, ${WRITES_PER_SECOND} writes/s)`,
        `${pct(freezes, 50)} / ${pct(freezes, 99)} ms`,
        'p99 < 1 s',
      ],
      ['whole move (plan → unfrozen), median', `${pct(totals, 50)} ms`, ''],
      ['writes during the moves: acknowledged / refused frozen / refused moved', `${outcomes.ok} / ${outcomes.frozen} / ${outcomes.moved}`, ''],
      [
        'bucket holding 1,000 tenants (10 rows each), plan → unfrozen',
        `${bucketMs} ms (${bucketDone.rowsCopied} rows, frozen ${Date.parse(bucketDone.unfrozenAt!) - Date.parse(bucketDone.frozenAt!)} ms)`,
        '',
      ],
    ];
    process.stdout.write(`| measure | result | target |\n| --- | --- | --- |\n${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}\n`);
  } finally {
    for (const c of clients.values()) await c.end().catch(() => undefined);
    for (const c of cells.values()) await c.close().catch(() => undefined);
    await router.stop();
    await pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(1);
});
