import { compileMapping } from '../../../lib/domain/mapping';
import { abortMove, forgetMove, MoveRecord, MoveStep, planMove, runMove, STEPS } from '../../../lib/operations/moves';
import { Pool } from 'pg';
import { ItemStore, postgresWorkQueue, WorkQueue } from '../../../lib/runtime/workload';
import { until } from '../../support/cells';
import { testPool } from '../../support/postgres';
import { BUCKETS, createWorld, MoveWorld } from './mover-fixture';
import { PostgresServer, startPostgres } from './postgres-fixture';

let pg: PostgresServer;
beforeAll(async () => {
  pg = await startPostgres();
});
afterAll(async () => {
  await pg?.stop();
});

const names = async (w: MoveWorld, cell: string, tenant: string) =>
  (await w.sql<{ name: string }>(cell, `select data->>'name' as name from items where tenant_id = $1 order by 1`, [tenant])).map((r) => r.name);

/** Writes continuously until stopped; returns what was acknowledged, refused as frozen, or refused as moved. */
function writer(w: MoveWorld, tenant: string) {
  const acked: string[] = [];
  const outcomes = { ok: 0, frozen: 0, moved: 0 };
  let stop = false;
  let i = 0;
  const done = (async () => {
    while (!stop) {
      const name = `${tenant}-w${String(i++).padStart(5, '0')}`;
      const outcome = await w.write(tenant, name);
      outcomes[outcome] += 1;
      if (outcome === 'ok') acked.push(name);
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  return {
    acked,
    outcomes,
    stop: async () => {
      stop = true;
      await done;
    },
  };
}

describe('a move of a tenant', () => {
  let w: MoveWorld;
  beforeAll(async () => {
    w = await createWorld(pg, { catchUpRows: 5 });
  });
  afterAll(async () => {
    await w.close();
  });

  test('A -> B and back while it writes: no acknowledged write lost or duplicated, the other tenant untouched', async () => {
    const tenant = 'acme';
    const source = compileMapping(w.mapping()).lookup(tenant).cell;
    const target = source === 'cell-b' ? 'cell-c' : 'cell-b';
    await w.sql(
      source,
      `insert into items (id, tenant_id, data) select gen_random_uuid()::text, 'acme', jsonb_build_object('name', 'seed-' || lpad(g::text, 5, '0')) from generate_series(1, 2000) g`,
    );
    await w.sql(
      source,
      `insert into items (id, tenant_id, data) select gen_random_uuid()::text, 'zeta', jsonb_build_object('name', 'z' || g) from generate_series(1, 300) g`,
    );
    // Deletes during the copy stay deleted.
    const deleting = (async () => {
      for (let g = 1; g <= 100; g++) {
        const name = `seed-${String(g).padStart(5, '0')}`;
        while ((await w.remove(tenant, name)) !== 'ok') await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const acme = writer(w, tenant);
    await until('writes flowing', async () => acme.acked.length >= 10, 60_000);
    const deps = w.deps();
    const there = await planMove(deps, { subject: { kind: 'tenant', tenant }, target, reason: 'test there' });
    expect(there).toMatchObject({ source, target, status: 'active', completed: 'planned' });
    const ackedBefore = acme.acked.length;
    const after = await runMove(deps, there.id).finally(() => deleting);
    // Writes were acknowledged while each move ran (not a count of them: that depends on the machine).
    const ackedThere = acme.acked.length;
    expect(ackedThere).toBeGreaterThan(ackedBefore);
    expect(after).toMatchObject({ status: 'retained', completed: 'unfrozen' });
    expect(compileMapping(w.mapping()).lookup(tenant).cell).toBe(target);
    expect(w.mapping().freeze).toBeUndefined();
    // The source refuses the tenant (a stale router would get 421).
    expect(await w.sql(source, `select moved_to from cf_moved_away where kind = 'tenant' and value = 'acme'`)).toEqual([{ moved_to: target }]);

    const back = await planMove(deps, { subject: { kind: 'tenant', tenant }, target: source, reason: 'test back' });
    await runMove(deps, back.id).finally(() => acme.stop());
    expect(acme.acked.length).toBeGreaterThan(ackedThere);
    expect(compileMapping(w.mapping()).lookup(tenant).cell).toBe(source);
    expect(w.mapping().overrides.exact).toEqual({}); // back home: the pin is gone, not pointed at the source
    // The return removed the stale record on the source, and recorded the tenant on the target.
    expect(await w.sql(source, `select * from cf_moved_away`)).toEqual([]);
    expect(await w.sql(target, `select move_id from cf_moved_away`)).toEqual([{ move_id: back.id }]);

    const final = await names(w, source, tenant);
    const expected = [...Array.from({ length: 1900 }, (_, g) => `seed-${String(g + 101).padStart(5, '0')}`), ...acme.acked].sort();
    expect(final).toEqual(expected); // nothing lost, nothing duplicated, deletes stayed deleted
    expect(acme.outcomes.moved).toBe(0); // the freeze answered first, never the fence
    expect(await names(w, source, 'zeta')).toHaveLength(300);
    expect(await names(w, target, 'zeta')).toEqual([]);

    // Forget: the first move's forget deletes nothing (the tenant came back); the second's deletes the copy on the target.
    await expect(forgetMove(deps, back.id)).rejects.toThrow(/kept until .*pass --now/);
    expect((await forgetMove(deps, there.id, true)).status).toBe('finished');
    expect(await names(w, source, tenant)).toEqual(expected);
    expect((await forgetMove(deps, back.id, true)).status).toBe('finished');
    expect(await names(w, target, tenant)).toEqual([]);

    const log = await deps.store.readAudit(there.id);
    expect(log.map((e) => e.event)).toEqual(expect.arrayContaining(['planned', 'frozen', 'verified', 'flipped', 'unfrozen', 'forgotten']));
    expect(log.find((e) => e.event === 'unfrozen')!.detail).toMatchObject({ freezeMs: expect.any(Number) });
    expect(log.every((e) => e.actor === 'test' && !Number.isNaN(Date.parse(e.at)))).toBe(true);
  });

  test('one move per tenant at a time; a retained move does not block the next', async () => {
    const deps = w.deps();
    const source = compileMapping(w.mapping()).lookup('solo').cell;
    const target = source === 'cell-a' ? 'cell-c' : 'cell-a';
    const first = await planMove(deps, { subject: { kind: 'tenant', tenant: 'solo' }, target });
    await expect(planMove(deps, { subject: { kind: 'tenant', tenant: 'solo' }, target })).rejects.toThrow(/overlaps move .*one move per tenant/);
    const bucket = compileMapping(w.mapping()).lookup('solo').bucket;
    await expect(planMove(deps, { subject: { kind: 'buckets', ranges: [{ from: bucket, to: bucket }] }, target })).rejects.toThrow(/overlaps move/);
    await expect(planMove(deps, { subject: { kind: 'tenant', tenant: 'solo' }, target: source })).rejects.toThrow(/already on/);
    await expect(planMove(deps, { subject: { kind: 'tenant', tenant: 'solo' }, target: 'cell-zz' })).rejects.toThrow(/not in mapping/);
    await runMove(deps, first.id);
    const again = await planMove(deps, { subject: { kind: 'tenant', tenant: 'solo' }, target: source });
    await abortMove(deps, again.id);
  });
});

describe('verify under the freeze', () => {
  test('re-reads only what changed since the row hashes taken before the freeze; a target row corrupted after the copy is caught', async () => {
    const w = await createWorld(pg);
    try {
      const tenant = 'checked';
      const source = compileMapping(w.mapping()).lookup(tenant).cell;
      const target = source === 'cell-a' ? 'cell-b' : 'cell-a';
      await w.sql(
        source,
        `insert into items (id, tenant_id, data) select 'c' || g, $1, jsonb_build_object('name', 'c' || g) from generate_series(1, 3000) g`,
        [tenant],
      );
      // A clean move: the verify re-reads a handful of rows, not 3,000.
      const deps = w.deps();
      const clean = await runMove(deps, (await planMove(deps, { subject: { kind: 'tenant', tenant }, target })).id);
      const cleanLog = await deps.store.readAudit(clean.id);
      expect(cleanLog.find((e) => e.event === 'verify-base')!.detail).toMatchObject({ rows: { source: 3000, target: 3000 } });
      const changed = cleanLog.find((e) => e.event === 'verify-incremental')!.detail!.changedRows as { source: number; target: number };
      expect(changed.source + changed.target).toBeLessThan(10);
      expect(cleanLog.some((e) => e.event === 'verify-mismatch')).toBe(false);
      expect(clean.checksums!.items.rows).toBe(3000);

      // Back, with a row corrupted on the target (the original source) after the final sync.
      const corrupting = w.deps({
        afterStep: async (step: MoveStep) => {
          if (step === 'synced') await w.sql(source, `update items set data = '{"name":"corrupt"}' where id = 'c42'`);
        },
      });
      const back = await runMove(corrupting, (await planMove(corrupting, { subject: { kind: 'tenant', tenant }, target: source })).id);
      const log = await corrupting.store.readAudit(back.id);
      const mismatch = log.find((e) => e.event === 'verify-mismatch');
      expect(mismatch!.detail!.differences).toEqual(['items: 1 rows differ (source 3000 rows, target 3000): c42 (differs)']);
      // The mover copied the subject whole once more under the freeze and compared again.
      expect(log.some((e) => e.event === 'delta' && e.detail!.prefix === 'resync')).toBe(true);
      expect(back.status).toBe('retained');
      expect(await w.sql(source, `select data->>'name' as name from items where id = 'c42'`)).toEqual([{ name: 'c42' }]);
    } finally {
      await w.close();
    }
  });
});

describe('the work queue (cf_work_queue) moves with the tenant', () => {
  test('messages not handled before the fence are handled on the target, never on the source after it', async () => {
    const w = await createWorld(pg);
    const pools: Pool[] = [];
    const queues: WorkQueue[] = [];
    const storeOf = (cell: string) => {
      const pool = testPool({ ...w.dbs[cell], max: 3 });
      pools.push(pool);
      const queue = postgresWorkQueue(pool, { pollMs: 20, visibilityMs: 60_000 });
      queues.push(queue);
      return { store: new ItemStore({ pool, queue, bucketCount: BUCKETS }), queue };
    };
    try {
      const tenant = 'queued';
      const source = compileMapping(w.mapping()).lookup(tenant).cell;
      const target = source === 'cell-a' ? 'cell-b' : 'cell-a';
      const here = storeOf(source);
      const there = storeOf(target);
      // 20 items whose work is still queued, one message parked for an operator, another tenant's work.
      for (let i = 0; i < 20; i++) await here.store.create(tenant, { n: i });
      await here.store.create('stays', { n: 0 });
      await w.sql(source, `update cf_work_queue set visible_at = 'infinity' where id = (select min(id) from cf_work_queue)`);
      // The source's worker starts once the subject is fenced: every message it takes is refused, and kept.
      const deps = w.deps({
        afterStep: (step: MoveStep) => {
          if (step === 'synced') here.queue.start((m) => here.store.process(m));
        },
      });
      const move = await runMove(deps, (await planMove(deps, { subject: { kind: 'tenant', tenant }, target })).id);
      expect(move.status).toBe('retained');
      const log = await deps.store.readAudit(move.id);
      expect(log.find((e) => e.event === 'queue-moved')!.detail).toEqual({ messages: 20, added: 20 });
      await until(
        "the source worker to take the other tenant's message",
        async () => (await w.sql(source, `select 1 from cf_work_queue where tenant_id = 'stays'`)).length === 0,
        60_000,
      );

      there.queue.start((m) => there.store.process(m));
      await until(
        'the target to handle the moved work',
        async () =>
          (await w.sql<{ n: number }>(target, `select count(*)::int as n from items where tenant_id = $1 and status = 'processed'`, [tenant]))[0]
            .n === 19,
        60_000,
      );
      // The parked message stays parked on the target; the source handled nothing of the tenant and kept its messages.
      expect(await w.sql(target, `select receive_count from cf_work_queue where tenant_id = $1 and visible_at = 'infinity'`, [tenant])).toEqual([
        { receive_count: 0 },
      ]);
      expect(await w.sql(source, `select count(*)::int as n from items where tenant_id = $1 and status = 'pending'`, [tenant])).toEqual([{ n: 20 }]);
      expect(await w.sql(source, `select count(*)::int as n, max(receive_count) as r from cf_work_queue where tenant_id = $1`, [tenant])).toEqual([
        { n: 20, r: 0 },
      ]);
      // Forget deletes the source's messages with its copy.
      await forgetMove(deps, move.id, true);
      expect(await w.sql(source, `select count(*)::int as n from cf_work_queue`)).toEqual([{ n: 0 }]);
    } finally {
      for (const q of queues) await q.stop();
      for (const p of pools) await p.end();
      await w.close();
    }
  });
});

describe('resumability', () => {
  class Killed extends Error {}

  test.each(STEPS.filter((s) => s !== 'planned' && s !== 'forgotten'))('killed right after %s, then resumed: the same end state', async (killAt) => {
    const w = await createWorld(pg);
    try {
      const tenant = 'resume-me';
      const source = compileMapping(w.mapping()).lookup(tenant).cell;
      const target = source === 'cell-a' ? 'cell-b' : 'cell-a';
      await w.sql(
        source,
        `insert into items (id, tenant_id, data) select gen_random_uuid()::text, $1, jsonb_build_object('name', 'r' || g) from generate_series(1, 500) g`,
        [tenant],
      );
      const killer = w.deps({
        afterStep: (step: MoveStep) => {
          if (step === killAt) throw new Killed(step);
        },
      });
      const move = await planMove(killer, { subject: { kind: 'tenant', tenant }, target });
      await expect(runMove(killer, move.id)).rejects.toThrow(Killed);
      // Writes keep arriving between the crash and the resume.
      const acked: string[] = [];
      for (let i = 0; i < 5; i++) if ((await w.write(tenant, `between-${i}`)) === 'ok') acked.push(`between-${i}`);
      const resumed: MoveRecord = await runMove(w.deps(), move.id);
      expect(resumed).toMatchObject({ status: 'retained', completed: 'unfrozen' });
      expect(compileMapping(w.mapping()).lookup(tenant).cell).toBe(target);
      expect(w.mapping().freeze).toBeUndefined();
      const moved = await names(w, target, tenant);
      const expected = [...Array.from({ length: 500 }, (_, g) => `r${g + 1}`), ...acked].sort();
      expect(moved).toEqual(expected);
      // The retained source copy holds nothing the target lacks.
      expect((await names(w, source, tenant)).filter((n) => !moved.includes(n))).toEqual([]);
      expect(new Set(moved).size).toBe(moved.length);
    } finally {
      await w.close();
    }
  });
});

describe('abort', () => {
  test('after the freeze: nothing changed for the tenant; after the flip: refused', async () => {
    const w = await createWorld(pg);
    try {
      const tenant = 'undo';
      const source = compileMapping(w.mapping()).lookup(tenant).cell;
      const target = source === 'cell-a' ? 'cell-b' : 'cell-a';
      await w.sql(
        source,
        `insert into items (id, tenant_id, data) select gen_random_uuid()::text, $1, jsonb_build_object('name', 'u' || g) from generate_series(1, 50) g`,
        [tenant],
      );
      const before = w.mapping();
      const deps = w.deps();
      const move = await planMove(deps, { subject: { kind: 'tenant', tenant }, target });
      await runMove(deps, move.id, { until: 'synced' });
      expect(w.mapping().freeze).toEqual({ exact: [tenant], buckets: [] });
      expect(await w.write(tenant, 'during')).toBe('frozen');
      const aborted = await abortMove(deps, move.id, 'changed my mind');
      expect(aborted.status).toBe('aborted');
      expect(compileMapping(w.mapping()).lookup(tenant).cell).toBe(source);
      expect(w.mapping().freeze).toBeUndefined();
      expect({ ...w.mapping(), version: 0, createdAt: '' }).toEqual({ ...before, version: 0, createdAt: '' });
      expect(await names(w, target, tenant)).toEqual([]);
      expect(await w.sql(source, 'select * from cf_moved_away')).toEqual([]);
      expect(await w.write(tenant, 'after')).toBe('ok');
      expect(await names(w, source, tenant)).toHaveLength(51);
      expect((await runMove(deps, move.id)).status).toBe('aborted'); // resume of an aborted move does nothing

      const flipped = await planMove(deps, { subject: { kind: 'tenant', tenant }, target });
      await runMove(deps, flipped.id);
      await expect(abortMove(deps, flipped.id)).rejects.toThrow(/has flipped .*move tenant undo to/);
    } finally {
      await w.close();
    }
  });
});

describe('a bucket move', () => {
  test('a bucket range holding 1,000 tenants moves whole; tenants outside it stay', async () => {
    const w = await createWorld(pg);
    try {
      const doc = w.mapping();
      const range = { from: 0, to: 15 };
      const inside: string[] = [];
      const outside: string[] = [];
      for (let i = 0; inside.length < 1000; i++) {
        const r = compileMapping(doc).lookup(`bt-${i}`);
        if (r.bucket <= range.to) inside.push(r.key);
        else if (outside.length < 50 && r.cell === 'cell-a') outside.push(r.key);
      }
      expect(compileMapping(doc).lookup(inside[0]).cell).toBe('cell-a');
      await w.sql(
        'cell-a',
        `insert into items (id, tenant_id, data) select gen_random_uuid()::text, t, jsonb_build_object('name', 'x' || g) from unnest($1::text[]) t, generate_series(1, 3) g`,
        [[...inside, ...outside]],
      );
      const deps = w.deps();
      const move = await planMove(deps, { subject: { kind: 'buckets', ranges: [range] }, target: 'cell-c' });
      await runMove(deps, move.id);
      expect(compileMapping(w.mapping()).lookup(inside[500]).cell).toBe('cell-c');
      expect(compileMapping(w.mapping()).lookup(outside[0]).cell).toBe('cell-a');
      const count = async (cell: string, tenants: string[]) =>
        (await w.sql<{ n: number }>(cell, 'select count(*)::int as n from items where tenant_id = any($1)', [tenants]))[0].n;
      expect(await count('cell-c', inside)).toBe(3000);
      expect(await count('cell-c', outside)).toBe(0);
      expect(
        (await w.sql<{ n: number }>('cell-a', `select count(*)::int as n from cf_moved_away where kind = 'bucket' and move_id = $1`, [move.id]))[0].n,
      ).toBe(16);
      expect(await w.write(inside[1], 'new')).toBe('ok');
      await forgetMove(deps, move.id, true);
      expect(await count('cell-a', inside)).toBe(0);
      expect(await count('cell-a', outside)).toBe(150);
      expect(BUCKETS).toBe(1024);
    } finally {
      await w.close();
    }
  });
});
