import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { cellctl } from '../../support/cli';
import { compileMapping, MappingDocument } from '../../../lib/domain/mapping';
import { MoveRecord } from '../../../lib/operations/moves';
import { LocalFleet, startLocalFleet } from '../../../lib/operations/local-fleet';
import { makeTempDir } from '../../../lib/operations/local-fleet/postgres';
import { until } from '../../support/cells';
import { api } from '../../support/workload';

const REPO = path.resolve(__dirname, '../../..');

/**
 * Moves on the local fleet (`cellctl fleet local`: reference workloads, each with its own
 * PostgreSQL server, behind the real router), driven through `cellctl move --local`, in process
 * and as a process killed with SIGKILL.
 */
describe('moves end to end on the local fleet', () => {
  let fleet: LocalFleet;
  let dir: string;
  let routerUrl: string;
  let stateDir: string;
  let mappingFile: string;
  const mapping = () => JSON.parse(fs.readFileSync(mappingFile, 'utf8')) as MappingDocument;
  const local = () => ['--local', '--state-dir', stateDir];
  const cellIds = () => Object.keys(mapping().cells).filter((id) => mapping().buckets.some((r) => r.cell === id));
  const otherCell = (home: string) => cellIds().find((id) => id !== home)!;

  beforeAll(async () => {
    dir = makeTempDir('e2e-moves-');
    fleet = await startLocalFleet({ cells: 3, port: 0, stateDir: path.join(dir, 'state'), log: () => undefined });
    ({ routerUrl, stateDir, mappingFile } = fleet);
  });
  afterAll(async () => {
    await fleet?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Every item of a tenant through the router, all pages. */
  async function allItems(tenant: string): Promise<string[]> {
    const ids: string[] = [];
    let after: string | null = null;
    do {
      const page = await api(routerUrl, 'GET', `/v1/items?limit=100${after ? `&after=${after}` : ''}`, tenant);
      expect(page.status).toBe(200);
      ids.push(...page.body.items.map((i: { id: string }) => i.id));
      after = page.body.next;
    } while (after);
    return ids;
  }

  /** A client writing and reading continuously through the router. */
  function client(tenant: string) {
    const acked: string[] = [];
    const statuses: Record<string, number> = {};
    const bad: string[] = [];
    let stop = false;
    const done = (async () => {
      for (let i = 0; !stop; i++) {
        const wrote = await api(routerUrl, 'POST', '/v1/items', tenant, { n: i });
        statuses[wrote.status] = (statuses[wrote.status] ?? 0) + 1;
        if (wrote.status === 201) acked.push(wrote.body.id);
        else if (wrote.status !== 503 || wrote.headers.get('retry-after') === null || wrote.body?.error !== 'frozen')
          bad.push(`POST ${wrote.status} ${JSON.stringify(wrote.body)}`);
        if (acked.length > 0) {
          const read = await api(routerUrl, 'GET', `/v1/items/${acked[Math.floor(acked.length / 2)]}`, tenant);
          statuses[`GET ${read.status}`] = (statuses[`GET ${read.status}`] ?? 0) + 1;
          if (read.status !== 200 && !(read.status === 503 && read.body?.error === 'frozen'))
            bad.push(`GET ${read.status} ${JSON.stringify(read.body)}`);
        }
      }
    })();
    return {
      acked,
      statuses,
      bad,
      stop: async () => {
        stop = true;
        await done;
      },
    };
  }

  it('a tenant moved A -> B and back while it writes and reads: nothing lost or duplicated, only frozen 503s, other tenants unaffected', async () => {
    const tenant = 'acme';
    const home = compileMapping(mapping()).lookup(tenant).cell;
    const away = otherCell(home);
    for (let i = 0; i < 300; i++) expect((await api(routerUrl, 'POST', '/v1/items', tenant, { seed: i })).status).toBe(201);
    const seeded = await allItems(tenant);
    const moving = client(tenant);
    const others = Array.from({ length: 6 }, (_, i) => client(`other-${i}`));
    try {
      await until('writes flowing', async () => moving.acked.length > 20, 60_000);
      const there = await cellctl('move', 'tenant', tenant, '--to', away, '--json', ...local());
      expect([there.code, there.err]).toEqual([0, expect.stringMatching(/; frozen for \d+ ms;/)]);
      const first = JSON.parse(there.out) as MoveRecord;
      await until('writes on the new cell', async () => moving.acked.length > 60, 60_000).catch((error) => {
        throw new Error(
          `${error.message}: ${JSON.stringify({ statuses: moving.statuses, bad: moving.bad.slice(0, 5), acked: moving.acked.length, mapping: mapping() })}`,
        );
      });

      // A router that has not applied the flip sends to the source: refused with 421, nothing written.
      const stale = await api(fleet.cells.find((c) => c.id === home)!.workloadUrl, 'POST', '/v1/items', tenant, { stale: true });
      expect([stale.status, stale.body]).toEqual([421, { error: 'moved', cell: away, moveId: first.id }]);

      const back = await cellctl('move', 'tenant', tenant, '--to', home, '--json', ...local());
      expect([back.code, back.err]).toEqual([0, expect.stringMatching(/; frozen for \d+ ms;/)]);
      const length = moving.acked.length;
      await until('writes back home', async () => moving.acked.length > length + 30, 60_000);
    } finally {
      await moving.stop();
      for (const o of others) await o.stop();
    }
    expect(moving.bad).toEqual([]);
    expect(moving.statuses['503'] ?? 0).toBeGreaterThan(0); // the freeze was seen, and answered 503 + Retry-After
    const items = await allItems(tenant);
    expect(new Set(items).size).toBe(items.length);
    expect([...items].sort()).toEqual([...seeded, ...moving.acked].sort());
    for (const o of others) {
      expect(o.bad).toEqual([]);
      expect(Object.keys(o.statuses).sort()).toEqual(['201', 'GET 200']);
    }
  });

  it('the mover killed with SIGKILL during every step, then resumed each time: the same end state', async () => {
    const tenant = 'kill-me';
    const home = compileMapping(mapping()).lookup(tenant).cell;
    const away = otherCell(home);
    for (let i = 0; i < 2000; i += 10) {
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, j) => api(routerUrl, 'POST', '/v1/items', tenant, { i: i + j, pad: 'x'.repeat(200) })),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(201));
    }
    const before = (await allItems(tenant)).sort();
    expect(before).toHaveLength(2000);
    const planned = await cellctl('move', 'tenant', tenant, '--to', away, '--plan-only', '--json', ...local());
    const id = (JSON.parse(planned.out) as MoveRecord).id;
    const record = () => JSON.parse(fs.readFileSync(path.join(stateDir, 'moves', id, 'move.json'), 'utf8')) as MoveRecord;
    const kills: string[] = [];
    const failures: string[] = [];
    // One process (tsx as a loader, not its CLI, which runs the script in a child that SIGKILL of
    // the parent would not reach). Each round: resume as a process, SIGKILL it as soon as it has recorded one more step (so the
    // kill lands inside the next step), until the move is done. The copy rate keeps the copy slow.
    for (let round = 0; round < 20 && record().status === 'active'; round++) {
      const from = record().completed;
      const mover: ChildProcess = spawn(
        process.execPath,
        ['--import', 'tsx', path.join(REPO, 'bin/cellctl.ts'), 'move', 'resume', id, '--copy-rate', '4000', ...local()],
        { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      mover.stderr!.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      const exited = new Promise<number | null>((resolve) => mover.once('exit', (code) => resolve(code)));
      let finished = false;
      void exited.then(() => {
        finished = true;
      });
      await until(`move past ${from}`, async () => finished || record().completed !== from, 60_000);
      if (!finished) {
        mover.kill('SIGKILL');
        kills.push(`after ${record().completed}`);
      }
      const code = await exited;
      if (code !== null && code !== 0) failures.push(`exit ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`);
    }
    expect(failures).toEqual([]);
    expect(record()).toMatchObject({ status: 'retained', completed: 'unfrozen' });
    // How many steps a kill lands in depends on the machine: on a quiet one, several short steps
    // (sync, verify, unfreeze once the flip lifted the freeze) finish between two 100 ms looks and
    // take no kill (3 kills on a clean CI run, 5 or more under load). The router waits of freeze and
    // flip are long enough to be hit every time: at least two resumes after a SIGKILL mid-step.
    expect(kills.length).toBeGreaterThanOrEqual(2);
    expect(compileMapping(mapping()).lookup(tenant).cell).toBe(away);
    expect(mapping().freeze).toBeUndefined();
    expect((await allItems(tenant)).sort()).toEqual(before);
    const log = await cellctl('move', 'show', id, '--json', ...local());
    const events = (JSON.parse(log.out).audit as { event: string }[]).map((e) => e.event);
    // One run per process (the last kill may land after the move finished, so no process is left to start).
    expect(events.filter((e) => e === 'run').length).toBeGreaterThanOrEqual(kills.length);
  });

  it('drain through moves: a drain plan run with `cellctl move plan`, every tenant keeps its items, the cell ends up empty and draining', async () => {
    const tenants = Array.from({ length: 60 }, (_, i) => `drain-${i}`);
    const seeded = new Map<string, string[]>();
    for (const t of tenants) {
      for (let i = 0; i < 3; i++) expect((await api(routerUrl, 'POST', '/v1/items', t, { i })).status).toBe(201);
    }
    for (const t of tenants) seeded.set(t, (await allItems(t)).sort());
    const drained = cellIds()[cellIds().length - 1];
    expect(tenants.some((t) => compileMapping(mapping()).lookup(t).cell === drained)).toBe(true);
    const plan = path.join(stateDir, 'drain.plan.json');
    const planned = await cellctl('mapping', 'drain', drained, '--mapping', mappingFile, '--plan', plan, '--force');
    expect([planned.code, planned.err]).toEqual([0, expect.stringMatching(/bucket moves/)]);
    const ran = await cellctl('move', 'plan', plan, '--json', ...local());
    expect([ran.code, ran.err]).toEqual([0, expect.stringMatching(/^plan 1\/\d+: /m)]);
    // Its buckets are gone: drain again marks it draining and moves nothing.
    const marked = await cellctl('mapping', 'drain', drained, '--mapping', mappingFile, '--force');
    expect([marked.code, marked.err]).toEqual([0, '']);
    expect(mapping().cells[drained].state).toBe('draining');
    await until(
      'router on the drained mapping',
      async () => Number((await api(routerUrl, 'GET', '/v1/items', 'probe')).headers.get('x-mapping-version')) === mapping().version,
      60_000,
    );
    for (const t of tenants) {
      expect(compileMapping(mapping()).lookup(t).cell).not.toBe(drained);
      expect((await allItems(t)).sort()).toEqual(seeded.get(t));
    }
  });

  it('an abort before the flip: nothing changed for the tenant', async () => {
    const tenant = 'undo-me';
    const home = compileMapping(mapping()).lookup(tenant).cell;
    const away = otherCell(home);
    for (let i = 0; i < 20; i++) await api(routerUrl, 'POST', '/v1/items', tenant, { i });
    const before = (await allItems(tenant)).sort();
    const planned = JSON.parse((await cellctl('move', 'tenant', tenant, '--to', away, '--plan-only', '--json', ...local())).out) as MoveRecord;
    const version = mapping().version;
    expect((await cellctl('move', 'abort', planned.id, ...local())).code).toBe(0);
    expect(mapping().version).toBe(version);
    expect((await allItems(tenant)).sort()).toEqual(before);
    expect((await api(routerUrl, 'POST', '/v1/items', tenant, { after: true })).status).toBe(201);
  });
});
