import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { cellctl } from '../support/cli';
import { compileMapping, initialMapping, MappingDocument } from '../../lib/domain/mapping';
import { CellDatabase } from '../../lib/operations/moves/cell-data';
import { LocalMoveStore, MoveRecord } from '../../lib/operations/moves';
import { LocalRouter, startLocalRouter } from '../../lib/runtime/router/local';
import { onFreePorts } from '../support/cells';
import { PostgresServer, sql, startPostgres } from '../operations/moves/postgres-fixture';

/**
 * `cellctl move --local` against a fleet.json as `cellctl fleet local` writes it: real PostgreSQL
 * databases (one per cell) and a real local router (HAProxy + agent) reading the mapping file.
 */
describe('cellctl move --local', () => {
  let pg: PostgresServer;
  let router: LocalRouter;
  let dir: string;
  let mappingFile: string;
  let port: number;
  const dbs: Record<string, CellDatabase> = {};
  const local = () => ['--local', '--state-dir', dir];
  const mapping = () => JSON.parse(fs.readFileSync(mappingFile, 'utf8')) as MappingDocument;

  beforeAll(async () => {
    pg = await startPostgres();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cells-local-'));
    for (const cell of ['cell-a', 'cell-b', 'cell-c', 'cell-d']) dbs[cell] = await pg.createDatabase(`cli_${cell.replace('-', '_')}`);
    mappingFile = path.join(dir, 'mapping.json');
    const doc = initialMapping(
      ['cell-a', 'cell-b', 'cell-c'].map((id, i) => ({ id, endpoint: `http://127.0.0.1:${29000 + i}`, state: 'active' as const })),
      1024,
      { now: new Date().toISOString() },
    );
    fs.writeFileSync(mappingFile, JSON.stringify(doc));
    router = await onFreePorts(1, async (ports) => {
      port = ports[0];
      return startLocalRouter({
        mappingFile,
        port,
        debugHeaders: true,
        partitionKey: { source: 'header', name: 'x-tenant-id' },
        bucketCount: 1024,
        healthCheckPath: '/health',
        log: () => undefined,
        pollMs: 100,
      });
    });
    fs.writeFileSync(
      path.join(dir, 'fleet.json'),
      JSON.stringify({
        mappingFile: 'mapping.json',
        routerUrl: `http://127.0.0.1:${port}`,
        cells: Object.fromEntries(Object.entries(dbs).map(([id, db]) => [id, { database: db }])),
      }),
    );
  });
  afterAll(async () => {
    await router?.stop();
    await pg?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('moves a tenant, lists it, shows its audit log, and forgets the source copy', async () => {
    const source = compileMapping(mapping()).lookup('acme').cell;
    const target = source === 'cell-b' ? 'cell-c' : 'cell-b';
    await sql(
      dbs[source],
      `insert into items (id, tenant_id, data) select gen_random_uuid()::text, 'acme', jsonb_build_object('name', 'n' || g) from generate_series(1, 1234) g`,
    );
    const moved = await cellctl('move', 'tenant', 'acme', '--to', target, '--reason', 'rebalance', '--json', ...local());
    expect(moved.code).toBe(0);
    // --json: stdout is the one result document; progress went to stderr, ending with the freeze time.
    const record = JSON.parse(moved.out);
    expect(record).toMatchObject({ status: 'retained', source, target, rowsCopied: 1234, reason: 'rebalance', freezeMs: expect.any(Number) });
    expect(record.freezeMs).toBe(Date.parse(record.unfrozenAt) - Date.parse(record.frozenAt));
    expect(moved.err).toMatch(new RegExp(`^planned ${record.id}: tenant acme ${source} -> ${target}$`, 'm'));
    expect(moved.err).toMatch(
      new RegExp(`^${record.id}: tenant acme now served by ${target}; frozen for ${record.freezeMs} ms; source copy kept until `, 'm'),
    );
    expect(compileMapping(mapping()).lookup('acme').cell).toBe(target);
    // The command returned once the router served the unfreeze (x-mapping-version of a keyless 400).
    const served = await fetch(`http://127.0.0.1:${port}/`);
    expect([served.status, Number(served.headers.get('x-mapping-version'))]).toEqual([400, mapping().version]);
    expect((await sql<{ n: number }>(dbs[target], `select count(*)::int as n from items where tenant_id = 'acme'`))[0].n).toBe(1234);

    const list = JSON.parse((await cellctl('move', 'list', '--json', ...local())).out);
    expect(list.map((m: { id: string }) => m.id)).toEqual([record.id]);
    const show = await cellctl('move', 'show', record.id, ...local());
    expect(show.out).toMatch(new RegExp(`${record.id}: tenant acme ${source} -> ${target}, retained at unfrozen`));
    expect(show.out).toMatch(/frozen .*"mappingVersion"/);
    expect(show.out).toMatch(/reason: rebalance/);
    expect(show.out).toContain(`frozen for ${record.freezeMs} ms (${record.frozenAt} to ${record.unfrozenAt})`);

    const early = await cellctl('move', 'forget', record.id, ...local());
    expect([early.code, early.err]).toEqual([1, expect.stringMatching(/kept until .*pass --now/)]);
    const forgot = await cellctl('move', 'forget', record.id, '--now', ...local());
    expect([forgot.code, forgot.out]).toEqual([0, `${record.id}: source copy on ${source} deleted (1234 rows)\n`]);
    expect((await cellctl('move', 'show', record.id, ...local())).out).toContain('source copy deleted: 1234 rows');
    expect((await sql<{ n: number }>(dbs[source], `select count(*)::int as n from items where tenant_id = 'acme'`))[0].n).toBe(0);
  });

  it('plans a bucket move without running it, then aborts it', async () => {
    const owner = mapping().buckets[0].cell;
    const other = mapping().buckets[mapping().buckets.length - 1].cell;
    const planned = await cellctl('move', 'buckets', '0-3', '--to', other, '--plan-only', '--json', ...local());
    expect(planned.code).toBe(0);
    const record = JSON.parse(planned.out);
    expect(record).toMatchObject({
      status: 'active',
      completed: 'planned',
      source: owner,
      subject: { kind: 'buckets', ranges: [{ from: 0, to: 3 }] },
    });
    const aborted = await cellctl('move', 'abort', record.id, ...local());
    expect([aborted.code, aborted.out]).toEqual([0, `${record.id}: aborted; buckets 0-3 stays on ${owner}\n`]);
  });

  it('runs an add-cell plan: the new cell receives its buckets with their data', async () => {
    const tenants = Array.from({ length: 300 }, (_, i) => `p${i}`);
    // acme is pinned (the first test moved it): its rows stay where it is pinned, whatever its bucket does.
    const acmeCell = compileMapping(mapping()).lookup('acme').cell;
    await sql(
      dbs[acmeCell],
      `insert into items (id, tenant_id, data) values (gen_random_uuid()::text, 'acme', jsonb_build_object('name', 'still here'::text))`,
    );
    const doc = compileMapping(mapping());
    for (const t of tenants)
      await sql(
        dbs[doc.lookup(t).cell],
        `insert into items (id, tenant_id, data) values (gen_random_uuid()::text, $1, jsonb_build_object('name', 'x'::text))`,
        [t],
      );
    const plan = path.join(dir, 'add.plan.json');
    const added = await cellctl('mapping', 'add-cell', 'cell-d', '--endpoint', 'http://127.0.0.1:29003', '--mapping', mappingFile, '--plan', plan);
    expect(added.code).toBe(0);
    const ran = await cellctl('move', 'plan', plan, '--json', ...local());
    expect(ran.code).toBe(0);
    expect(ran.err).toMatch(/^plan 3\/3: .* 256\/256 buckets/m);
    const moves = JSON.parse(ran.out) as { status: string }[];
    expect(moves.length).toBe(3);
    expect(moves.every((m) => m.status === 'retained')).toBe(true);
    const after = compileMapping(mapping());
    const onD = tenants.filter((t) => after.lookup(t).cell === 'cell-d');
    expect(onD.length).toBeGreaterThan(30);
    const rows = await sql<{ tenant_id: string }>(dbs['cell-d'], 'select tenant_id from items order by tenant_id');
    expect(rows.map((r) => r.tenant_id)).toEqual([...onD].sort());
    expect(compileMapping(mapping()).lookup('acme').cell).toBe(acmeCell);
    expect((await sql<{ n: number }>(dbs[acmeCell], `select count(*)::int as n from items where tenant_id = 'acme'`))[0].n).toBe(1235);
    // Forgetting the bucket moves deletes the moved tenants' source copies, never the pinned tenant's rows.
    for (const m of moves as unknown as { id: string }[]) {
      const forgot = await cellctl('move', 'forget', m.id, '--now', '--json', ...local());
      expect([forgot.code, JSON.parse(forgot.out)]).toEqual([
        0,
        expect.objectContaining({ status: 'finished', sourceRowsDeleted: expect.any(Number) }),
      ]);
    }
    expect((await sql<{ n: number }>(dbs[acmeCell], `select count(*)::int as n from items where tenant_id = 'acme'`))[0].n).toBe(1235);
    for (const cell of ['cell-a', 'cell-b', 'cell-c']) {
      const left = await sql<{ tenant_id: string }>(dbs[cell], `select tenant_id from items where tenant_id like 'p%'`);
      expect(left.filter((r) => onD.includes(r.tenant_id))).toEqual([]);
    }
    // On a terminal (no --json): progress per move with buckets and rows done, rate and time left (these moves ran above, so they are finished).
    const text = await cellctl('move', 'plan', plan, ...local());
    expect(text.err).toMatch(
      /^plan 1\/3: buckets \S+ -> cell-d: finished \(\d+ rows\); \d+\/256 buckets, \d+ rows in \d+ s \(\d+ rows\/s\), about \d+ s left$/m,
    );
    expect(text.err).toMatch(/^plan 3\/3: .* 256\/256 buckets, .*rows\/s\)$/m);
    // Running the plan again moves nothing twice.
    const again = await cellctl('move', 'plan', plan, '--json', ...local());
    expect(JSON.parse(again.out).map((m: { id: string }) => m.id)).toEqual(moves.map((m) => (m as unknown as { id: string }).id));
  });

  it('lists and shows the moves of a stopped local fleet (its records are files in the state directory)', async () => {
    const stopped = fs.mkdtempSync(path.join(os.tmpdir(), 'cells-stopped-'));
    try {
      // As `cellctl fleet local` leaves it once stopped: fleet.json with pid 0, databases and router down.
      fs.writeFileSync(
        path.join(stopped, 'fleet.json'),
        JSON.stringify({
          pid: 0,
          mappingFile: 'mapping.json',
          routerUrl: 'http://127.0.0.1:1',
          cells: { 'cell-a': { database: 'postgres://u:p@127.0.0.1:1/cell' } },
        }),
      );
      const store = new LocalMoveStore(path.join(stopped, 'moves'));
      const at = '2026-12-01T10:00:00.000Z';
      const record: MoveRecord = {
        id: 'm-20261201-100000-acme',
        subject: { kind: 'tenant', tenant: 'acme' },
        source: 'cell-a',
        target: 'cell-b',
        bucketCount: 1024,
        reason: 'rebalance',
        actor: 'alice',
        createdAt: at,
        status: 'retained',
        completed: 'unfrozen',
        watermark: '9',
        rounds: 2,
        rowsCopied: 12,
        frozenAt: at,
        unfrozenAt: '2026-12-01T10:00:01.250Z',
        freezeMs: 1250,
        mappingVersions: { freeze: 2, flip: 3 },
        updatedAt: at,
      };
      await store.create(record);
      await store.appendAudit(record.id, { at, actor: 'alice', event: 'unfrozen', detail: { freezeMs: 1250 } });
      const flags = ['--local', '--state-dir', stopped];
      const list = await cellctl('move', 'list', '--json', ...flags);
      expect([list.code, JSON.parse(list.out)]).toEqual([0, [record]]);
      const show = await cellctl('move', 'show', record.id, ...flags);
      expect([show.code, show.err]).toEqual([0, '']);
      expect(show.out).toMatch(
        /^m-20261201-100000-acme: tenant acme cell-a -> cell-b, retained at unfrozen; 12 rows copied in 2 catch-up rounds\nreason: rebalance\nfrozen for 1250 ms/,
      );
      expect(show.out).toMatch(/unfrozen\s+\{"freezeMs":1250\}/);
      // What changes a move still needs the running fleet, and says so.
      const resume = await cellctl('move', 'resume', record.id, ...flags);
      expect([resume.code, resume.err]).toEqual([1, expect.stringMatching(/is not running; start it with `cellctl fleet local --state-dir /)]);
    } finally {
      fs.rmSync(stopped, { recursive: true, force: true });
    }
  });

  it('says what is wrong: no --local, no fleet, unknown move', async () => {
    // Without --local the AWS fleet is meant (test/cli/move-aws.test.ts): its config must exist.
    const aws = await cellctl('move', 'list', '--config', path.join(dir, 'none.config.ts'));
    expect([aws.code, aws.err]).toEqual([1, expect.stringMatching(/none\.config\.ts/)]);
    const nofleet = await cellctl('move', 'list', '--local', '--state-dir', path.join(dir, 'nowhere'));
    expect([nofleet.code, nofleet.err]).toEqual([1, expect.stringMatching(/fleet.json not found: start the local fleet/)]);
    const unknown = await cellctl('move', 'show', 'm-nope', ...local());
    expect([unknown.code, unknown.err]).toEqual([1, expect.stringMatching(/no move m-nope/)]);
    const bad = await cellctl('move', 'buckets', '9-2', '--to', 'cell-a', ...local());
    expect([bad.code, bad.err]).toEqual([2, expect.stringMatching(/9 is greater than 2/)]);
  });
});
